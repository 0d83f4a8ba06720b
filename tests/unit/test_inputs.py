"""Reading input files: JSONL and WARC, plain and gzipped, into raw events that validate."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import orjson
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from neardup_core.ingest.event import parse_event
from neardup_core.ingest.files import count_events, read_events

PAGE = "<html><head><meta charset='iso-8859-1'></head><body><p>Caf\xe9 cr\xe8me</p></body></html>"


def write_warc(path: Path, gzipped: bool) -> None:
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=gzipped)
        for i, status in enumerate(("200 OK", "404 Not Found")):
            headers = StatusAndHeaders(status, [("Content-Type", "text/html; charset=iso-8859-1")],
                                       protocol="HTTP/1.1")
            record = writer.create_warc_record(f"https://w.example/{i}", "response",
                                               payload=io.BytesIO(PAGE.encode("latin-1")), http_headers=headers,
                                               warc_headers_dict={"WARC-Date": "2026-11-02T10:00:00Z"})
            writer.write_record(record)
        writer.write_record(writer.create_warc_record("https://w.example/0", "request",
                                                      payload=io.BytesIO(b"GET / HTTP/1.1\r\n\r\n")))


@pytest.mark.parametrize("gzipped", [False, True])
def test_warc_response_records_become_events(tmp_path: Path, gzipped: bool) -> None:
    path = tmp_path / ("crawl.warc.gz" if gzipped else "crawl.warc")
    write_warc(path, gzipped)
    events = list(read_events(path))
    assert [e.key for e in events] == [b"https://w.example/0", b"https://w.example/1"]  # requests left out
    pages = [parse_event(e.raw, key=e.key) for e in events]
    assert [p.status for p in pages] == [200, 404]
    assert pages[0].body == PAGE.encode("latin-1") and pages[0].content_type.startswith("text/html")
    assert pages[0].fetched_at_ms == 1_793_613_600_000
    assert events[1].position > events[0].position >= 0 and count_events(path) is None


def test_jsonl_plain_and_gzipped(tmp_path: Path) -> None:
    lines = [orjson.dumps({"url": f"https://j.example/{i}", "body": "<p>x</p>"}) for i in range(3)]
    plain, packed = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    plain.write_bytes(b"\n".join(lines[:2]) + b"\n\n" + lines[2] + b"\n")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, packed):
        events = list(read_events(path))
        assert [e.raw for e in events] == lines and [e.position for e in events] == [1, 2, 4]
        assert count_events(path) == 3
