"""The WARC reader: whole-file and per-record gzip, resource and revisit records, how a revisit finds
its capture, and a bad file reported with its reason while the next one is read."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from neardup_core.ingest.event import parse_event
from neardup_core.ingest.files import FileError, RawEvent, count_events, read_events, read_inputs
from tests.warcs import Warc, article, chunked, damaged, whole_gzip, write


def events_of(path: Path) -> list[dict]:
    return [orjson.loads(e.raw) for e in read_events(path)]


def three_pages(gzipped: bool) -> Warc:
    warc = Warc(gzipped=gzipped)
    for i in range(3):
        warc.response(f"https://w.example/{i}", article(i), second=i)
        warc.request(f"https://w.example/{i}")
    return warc


@pytest.mark.parametrize("form", ["plain", "members", "whole"])
def test_every_gzip_form_gives_the_same_events(tmp_path: Path, form: str) -> None:
    plain = three_pages(gzipped=False)
    data = {"plain": plain.bytes(), "members": three_pages(gzipped=True).bytes(), "whole": whole_gzip(plain)}[form]
    path = write(tmp_path / "crawl.warc.gz", data)
    events = list(read_events(path))
    assert [e.key for e in events] == [f"https://w.example/{i}".encode() for i in range(3)]
    assert all(e.record == "response" for e in events)
    assert [parse_event(e.raw).body for e in events] == [article(i) for i in range(3)]
    positions = [e.position for e in events]
    assert positions == sorted(positions) and positions[0] == 0 and count_events(path) is None


def test_a_whole_gzip_file_gives_uncompressed_offsets(tmp_path: Path) -> None:
    plain = three_pages(gzipped=False)
    whole = [e.position for e in read_events(write(tmp_path / "w.warc.gz", whole_gzip(plain)))]
    assert whole == [e.position for e in read_events(write(tmp_path / "p.warc", plain.bytes()))]


def test_resource_records_are_pages_with_their_record_content_type(tmp_path: Path) -> None:
    warc = Warc(gzipped=True)
    warc.resource("https://r.example/page", article(1), second=1)
    warc.resource("https://r.example/img", b"\x89PNG", second=2, content_type="image/png")
    events = events_of(write(tmp_path / "r.warc.gz", warc.bytes()))
    assert [(e["url"], e["content_type"], "status" in e) for e in events] == [
        ("https://r.example/page", "text/html", False), ("https://r.example/img", "image/png", False)]
    assert parse_event(orjson.dumps(events[0])).body == article(1)


def test_a_chunked_payload_is_dechunked_and_its_content_encoding_left_to_the_event(tmp_path: Path) -> None:
    warc = Warc(gzipped=True)
    warc.response("https://c.example/", chunked(gzip.compress(article(2))), second=1,
                  headers=[("Content-Type", "text/html"), ("Transfer-Encoding", "chunked"),
                           ("Content-Encoding", "gzip")])
    event = events_of(write(tmp_path / "c.warc.gz", warc.bytes()))[0]
    assert "transfer-encoding" not in event["headers"] and event["headers"]["content-encoding"] == "gzip"
    assert parse_event(orjson.dumps(event)).body == article(2)


def test_a_revisit_finds_its_capture_by_each_name_a_crawler_writes(tmp_path: Path) -> None:
    warc = Warc(gzipped=True)
    first = warc.response("https://o.example/a", article(1), second=1)
    warc.response("https://o.example/b", article(2), second=2)
    warc.response("https://o.example/b", article(3), second=3)  # a later capture of the same URL
    warc.revisit("https://v.example/by-id", second=10, refers_to=first)
    warc.revisit("https://v.example/by-uri-and-date", second=11, refers_to_uri="https://o.example/b",
                 refers_to_second=2)
    warc.revisit("https://v.example/by-digest", second=12, digest=warc.digests[first])
    warc.revisit("https://v.example/by-uri", second=13, refers_to_uri="https://o.example/b")
    warc.revisit("https://v.example/chain", second=14, refers_to_uri="https://v.example/by-id", refers_to_second=10)
    events = {e["url"]: e for e in events_of(write(tmp_path / "v.warc.gz", warc.bytes()))}
    bodies = {url: parse_event(orjson.dumps(e)).body for url, e in events.items() if url.startswith("https://v.")}
    assert bodies == {"https://v.example/by-id": article(1), "https://v.example/by-uri-and-date": article(2),
                      "https://v.example/by-digest": article(1), "https://v.example/by-uri": article(3),
                      "https://v.example/chain": article(1)}
    revisit = events["https://v.example/by-uri-and-date"]
    assert revisit["fetched_at"] == 1_793_613_611_000  # the revisit's own date
    assert revisit["revisit"] == {"refers_to_uri": "https://o.example/b", "refers_to_date": "2026-11-02T10:00:02Z"}


def test_a_revisit_may_refer_to_a_capture_in_an_earlier_file_only(tmp_path: Path) -> None:
    old, new = Warc(gzipped=False), Warc(gzipped=True)
    old.response("https://o.example/", article(1), second=1)
    old.response("https://o.example/2", article(2), second=2)
    new.revisit("https://v.example/", second=5, refers_to_uri="https://o.example/2", refers_to_second=2)
    old_path = write(tmp_path / "old.warc.gz", whole_gzip(old))
    new_path = write(tmp_path / "new.warc.gz", new.bytes())
    in_order = [e for e in read_inputs([old_path, new_path]) if isinstance(e, RawEvent)]
    assert parse_event(in_order[-1].raw).body == article(2)  # read again from the whole-gzip file
    reversed_order = [e for e in read_inputs([new_path, old_path]) if isinstance(e, RawEvent)]
    assert "body_b64" not in orjson.loads(reversed_order[0].raw)


def test_bad_files_are_reported_and_the_next_file_is_read(tmp_path: Path) -> None:
    good = three_pages(gzipped=True)
    files = [write(tmp_path / "damaged.warc.gz", damaged(good.bytes(), 0.5)),
             write(tmp_path / "cut.warc", three_pages(gzipped=False).bytes()[:-1200]),
             write(tmp_path / "garbage.warc", b"%PDF-1.4\n%\xe2\xe3\n"),
             write(tmp_path / "bad.jsonl.gz", gzip.compress(b'{"url": "https://j.example/"}\n' * 50)[:-10]),
             tmp_path / "missing.warc", write(tmp_path / "good.warc.gz", good.bytes())]
    items = list(read_inputs(files))
    errors = {Path(e.source).name: e for e in items if isinstance(e, FileError)}
    assert list(errors) == ["damaged.warc.gz", "cut.warc", "garbage.warc", "bad.jsonl.gz", "missing.warc"]
    assert "gzip" in errors["damaged.warc.gz"].reason
    assert "cut short" in errors["cut.warc"].reason and errors["cut.warc"].events_read >= 1
    assert "not a WARC record at offset 0" in errors["garbage.warc"].reason
    assert "cut short" in errors["bad.jsonl.gz"].reason
    assert errors["missing.warc"].reason == "cannot open: No such file or directory"
    assert [e.key for e in items[-3:]] == [f"https://w.example/{i}".encode() for i in range(3)]
    assert count_events(tmp_path / "missing.warc") is None and count_events(files[3]) is None
