"""`neardup scan` and `neardup publish` over WARCs as crawlers write them (made with warcio's writer):
a whole-file gzip WARC, a multi-member .warc.gz, chunked and content-encoded payloads, resource
records, revisits with and without a capture to refer to, and damaged, cut-short and non-WARC files
among good ones. Every page record gets an outcome, every file is read, and the summary says so."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import Rejected, fingerprint_event, html_fingerprints
from neardup_core.ingest.files import FileError, RawEvent, read_inputs
from streams.cli.scan import run_scan
from streams.settings import load
from tests.warcs import Warc, article, chunked, damaged, deflated, whole_gzip, write

ROOT = Path(__file__).resolve().parents[2]
MAX_BODY = 200_000
A0, A1 = "https://a.example/story/0", "https://a.example/story/1"


def build(tmp: Path) -> dict[str, Any]:
    """The input files in command-line order, and what each page record should come to."""
    a = Warc(gzipped=False)
    a.response(A0, article(0), second=1)
    a.request(A0)
    a.response(A1, deflated(article(1)), second=2,
               headers=[("Content-Type", "text/html"), ("Content-Encoding", "deflate")])
    a.resource("https://a.example/notes", article(2), second=3)
    a1_digest = a.digests[a.records[-2][2]]

    b = Warc(gzipped=True)
    chunked_id = b.response("https://b.example/chunked", chunked(article(3)), second=10,
                            headers=[("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")])
    b.response("https://b.example/gz", gzip.compress(article(4)), second=11,
               headers=[("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip")])
    b.response("https://b.example/both", chunked(gzip.compress(article(5))), second=12,
               headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")])
    b.resource("https://b.example/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(200), second=13, content_type="image/png")
    b.response("https://b.example/missing", b"<html><body>gone</body></html>", second=14, status="404 Not Found")
    b.response("https://b.example/bomb", gzip.compress(bytes(MAX_BODY * 50)), second=15,
               headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")])
    b.response("https://b.example/notgzip", b"\x1f\x8b but not really gzip" * 20, second=16,
               headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")])
    b.revisit("https://mirror.example/story/0", second=20, refers_to_uri=A0, refers_to_second=1)
    b.revisit("https://mirror.example/story/1", second=21, digest=a1_digest)
    b.revisit("https://mirror.example/chunked", second=22, refers_to=chunked_id)
    b.revisit("https://b.example/gz", second=23, refers_to_uri="https://b.example/gz", refers_to_second=11)
    b.revisit("https://b.example/old", second=24, refers_to_uri="https://old.example/", refers_to_second=0)
    b.revisit("https://b.example/nothing", second=25)

    d = Warc(gzipped=True)
    for i in range(6):
        d.response(f"https://d.example/{i}", article(10 + i), second=30 + i)
    t = Warc(gzipped=False)
    t.response("https://t.example/0", article(20), second=40)
    t.response("https://t.example/1", article(21), second=41)
    after = Warc(gzipped=True)
    after.response("https://after.example/0", article(30), second=50)
    after.revisit("https://after.example/mirror-of-chunked", second=51, refers_to_uri="https://b.example/chunked",
                  refers_to_second=10)

    files = [write(tmp / "whole.warc.gz", whole_gzip(a)), write(tmp / "members.warc.gz", b.bytes()),
             write(tmp / "damaged.warc.gz", damaged(d.bytes())), write(tmp / "cut.warc", t.bytes()[:-400]),
             write(tmp / "not-a.warc", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj << /Type /Catalog >>\n"),
             write(tmp / "after.warc.gz", after.bytes())]
    return {"files": files, "warcs": [a, b, d, t, after]}


def scan_cli(tmp: Path, files: list[Path], *, extra_env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str],
                                                                                 list[dict], list[dict]]:
    out, rejects = tmp / "out.jsonl", tmp / "rejects.jsonl"
    cmd = [sys.executable, "-m", "streams.cli", "scan", *map(str, files), "--state", str(tmp / "state"),
           "--out", str(out), "--rejects", str(rejects), "--no-progress", "--processes", "1"]
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "250", **extra_env}
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    return (result, [orjson.loads(x) for x in out.read_bytes().splitlines()],
            [orjson.loads(x) for x in rejects.read_bytes().splitlines()])


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("warcs")
    built = build(tmp)
    result, lines, rejects = scan_cli(tmp, built["files"], extra_env={"NEARDUP_MAX_BODY_BYTES": str(MAX_BODY)})
    latest: dict[str, dict] = {}
    for line in lines:
        if line["url"] not in latest or line["revision"] >= latest[line["url"]]["revision"]:
            latest[line["url"]] = line
    return {**built, "result": result, "latest": latest, "rejects": rejects}


def summary_count(stderr: str, row: str) -> str:
    match = re.search(rf"{re.escape(row)}\s*│\s*([^│]+?)\s*│", stderr)
    assert match, (row, stderr)
    return match.group(1)


def rejected_urls(rejects: list[dict]) -> dict[str, str]:
    out = {}
    for r in rejects:
        if r["raw_b64"]:
            out[orjson.loads(base64.b64decode(r["raw_b64"]))["url"]] = r["error"]
    return out


def test_scan_finishes_without_a_traceback_and_reports_each_bad_file(scanned: dict[str, Any]) -> None:
    result = scanned["result"]
    assert result.returncode == 1, result.stderr  # 1: some file was not read to its end, the others were
    assert "Traceback" not in result.stderr
    assert summary_count(result.stderr, "files read to their end") == "3 of 6"
    read_errors = {Path(r["topic"]).name: r["error"] for r in scanned["rejects"] if r["stage"] == "read"}
    assert set(read_errors) == {"damaged.warc.gz", "cut.warc", "not-a.warc"}
    assert "gzip" in read_errors["damaged.warc.gz"]
    assert "cut short" in read_errors["cut.warc"]
    assert "not a WARC" in read_errors["not-a.warc"]
    for name in read_errors:
        assert name in result.stderr


def test_every_page_record_read_gets_an_outcome(scanned: dict[str, Any]) -> None:
    latest, rejected = scanned["latest"], rejected_urls(scanned["rejects"])
    a, b, d, t, after = scanned["warcs"]
    pages = {url for warc in (a, b, after) for kind, url, _ in warc.records if kind != "request"}
    assert pages <= set(latest) | set(rejected), pages - set(latest) - set(rejected)
    assert {"https://d.example/0", "https://t.example/0"} <= set(latest)  # read before their file broke
    stderr = scanned["result"].stderr
    events = int(summary_count(stderr, "events read"))
    assert events == int(summary_count(stderr, "events decided")) + int(summary_count(stderr, "events rejected"))
    assert int(summary_count(stderr, "from WARC revisit records")) == 7
    assert int(summary_count(stderr, "from WARC resource records")) == 2


def test_revisits_are_exact_duplicates_of_the_capture_they_name(scanned: dict[str, Any]) -> None:
    latest = scanned["latest"]
    for url, original in (("https://mirror.example/story/0", A0), ("https://mirror.example/story/1", A1),
                          ("https://mirror.example/chunked", "https://b.example/chunked"),
                          ("https://after.example/mirror-of-chunked", "https://b.example/chunked")):
        assert latest[url]["verdict"] == "exact_duplicate", latest[url]
        assert latest[url]["duplicate_of"] == original
        assert latest[url]["body_sha256"] == latest[original]["body_sha256"]
    assert latest["https://b.example/gz"]["verdict"] == "unique"  # a revisit of its own URL: never its own duplicate


def test_revisits_without_a_capture_are_rejected_with_what_they_named(scanned: dict[str, Any]) -> None:
    rejected = rejected_urls(scanned["rejects"])
    assert "not in the input read before it" in rejected["https://b.example/old"]
    assert "https://old.example/" in rejected["https://b.example/old"]
    assert "names no capture" in rejected["https://b.example/nothing"]


def test_encoded_payloads_are_fingerprinted_decoded(scanned: dict[str, Any]) -> None:
    latest, rejected = scanned["latest"], rejected_urls(scanned["rejects"])
    for url, seed in ((A1, 1), ("https://b.example/chunked", 3), ("https://b.example/gz", 4),
                      ("https://b.example/both", 5), ("https://a.example/notes", 2)):
        text_digest = html_fingerprints(article(seed).decode()).digest
        assert latest[url]["text_sha256"] == text_digest, url
        assert latest[url]["body_sha256"] == hashlib.sha256(article(seed)).hexdigest(), url
    assert "inflates past the cap" in rejected["https://b.example/bomb"]
    assert "does not inflate" in rejected["https://b.example/notgzip"]
    assert latest["https://b.example/logo.png"]["verdict"] == "skipped"
    assert latest["https://b.example/missing"]["verdict"] == "skipped"


def test_missing_and_unreadable_files_do_not_stop_the_others(tmp_path: Path) -> None:
    good = Warc(gzipped=True)
    good.response("https://g.example/", article(40), second=1)
    unreadable = write(tmp_path / "locked.warc", good.bytes())
    unreadable.chmod(0)
    files = [tmp_path / "missing.warc", tmp_path, unreadable, write(tmp_path / "good.warc.gz", good.bytes())]
    summary = run_scan(load(), files, state=tmp_path / "state", out=tmp_path / "out.jsonl",
                       rejects=tmp_path / "rejects.jsonl", progress=False)
    reasons = {Path(e.source).name: e.reason for e in summary.file_errors}
    assert "missing.warc" in reasons and "cannot open" in reasons["missing.warc"]
    assert tmp_path.name in reasons
    if os.geteuid() != 0:  # root reads a file of mode 000
        assert "locked.warc" in reasons
    assert summary.files == 4 and summary.fetches >= 1
    assert b"https://g.example/" in (tmp_path / "out.jsonl").read_bytes()


class FakeProducer:
    """confluent_kafka.Producer's calls that `publish` makes, keeping what it sends."""

    sent: list[tuple[bytes, bytes | None]] = []

    def __init__(self, config: dict[str, Any]) -> None:
        self.pending: list[Any] = []

    def produce(self, topic: str, *, value: bytes, key: bytes | None, on_delivery: Any) -> None:
        FakeProducer.sent.append((value, key))
        self.pending.append(on_delivery)

    def poll(self, timeout: float) -> int:
        for callback in self.pending:
            callback(None, None)
        n, self.pending = len(self.pending), []
        return n

    def flush(self, timeout: float) -> int:
        self.poll(0)
        return 0


def test_publish_sends_what_scan_reads_and_reports_bad_files(scanned: dict[str, Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import confluent_kafka

    import streams.kafka.admin
    from streams.cli.publish import publish_files

    settings = load()
    monkeypatch.setattr(confluent_kafka, "Producer", FakeProducer)
    monkeypatch.setattr(streams.kafka.admin, "check_broker", lambda _: {settings.topic("pages.fetched")})
    FakeProducer.sent = []
    result = publish_files(settings, scanned["files"], progress=False)
    inputs = list(read_inputs(scanned["files"]))
    events = [e for e in inputs if isinstance(e, RawEvent)]
    assert [v for v, _ in FakeProducer.sent] == [e.raw for e in events]
    assert result.sent == len(events) and result.failed == 0
    assert [Path(e.source).name for e in result.file_errors] == ["damaged.warc.gz", "cut.warc", "not-a.warc"]
    assert [e.reason for e in result.file_errors] == [e.reason for e in inputs if isinstance(e, FileError)]
    outcomes = [fingerprint_event(v, key=k, timestamp_ms=1_800_000_000_000) for v, k in FakeProducer.sent]
    assert all(isinstance(o, Fetch | Rejected) for o in outcomes)
    revisits = [o for o, e in zip(outcomes, events, strict=True) if e.record == "revisit"]
    assert sum(isinstance(o, Fetch) for o in revisits) == 5 and sum(isinstance(o, Rejected) for o in revisits) == 2
