"""Reading fetched pages from files: JSONL (one `pages.fetched` event per line) and WARC
response records, either gzipped. Each record comes out as the raw event bytes, so files and
Kafka go through the same validation.

Each record also carries the time it was read, which stands where a Kafka record has its
timestamp: an event without `fetched_at` was fetched then, as a record that `neardup publish`
sends is stamped with the time it is sent (a WARC record's `WARC-Date` is its `fetched_at`)."""

from __future__ import annotations

import base64
import gzip
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

from neardup_core.timefmt import rfc3339_to_ms


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One input record: its bytes, where it came from (the file, and the line of a JSONL file or
    the byte offset of a WARC record), the URL key it would carry on Kafka (None when the
    record has no readable URL), and when it was read (the record timestamp it would carry)."""

    raw: bytes
    source: str
    position: int
    key: bytes | None = None
    timestamp_ms: int | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _open(path: Path) -> BinaryIO:
    fh = path.open("rb")
    if fh.read(2) == b"\x1f\x8b":
        fh.seek(0)
        return gzip.GzipFile(fileobj=fh)  # type: ignore[return-value]
    fh.seek(0)
    return fh


def is_warc(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith((".warc", ".warc.gz", ".arc", ".arc.gz")):
        return True
    with _open(path) as fh:
        return fh.read(5) == b"WARC/"


def read_events(path: Path) -> Iterator[RawEvent]:
    """The events in one JSONL or WARC file."""
    if is_warc(path):
        yield from read_warc(path)
    else:
        yield from read_jsonl(path)


def read_jsonl(path: Path) -> Iterator[RawEvent]:
    with _open(path) as fh:
        for number, line in enumerate(fh, 1):
            line = line.rstrip(b"\r\n")
            if line.strip():
                yield RawEvent(line, str(path), number, timestamp_ms=_now_ms())


def read_warc(path: Path) -> Iterator[RawEvent]:
    """`response` records as events: URL, body, status, headers and the WARC date."""
    from warcio.archiveiterator import ArchiveIterator

    with path.open("rb") as fh:
        iterator = ArchiveIterator(fh, arc2warc=True)
        for record in iterator:
            if record.rec_type != "response":
                continue
            url = record.rec_headers.get_header("WARC-Target-URI")
            date = record.rec_headers.get_header("WARC-Date")
            body = record.content_stream().read()
            event: dict[str, object] = {"url": url, "body_b64": base64.b64encode(body).decode()}
            if date:
                try:
                    event["fetched_at"] = rfc3339_to_ms(date)
                except ValueError:
                    event["fetched_at"] = date  # let validation reject it with its reason
            if record.http_headers is not None:
                try:
                    event["status"] = int(record.http_headers.get_statuscode())
                except (TypeError, ValueError):
                    event["status"] = 0
                headers = {k.lower(): v for k, v in record.http_headers.headers}
                event["headers"] = headers
                if "content-type" in headers:
                    event["content_type"] = headers["content-type"]
            yield RawEvent(orjson.dumps(event), str(path), iterator.get_record_offset(),
                           url.encode() if url else None, _now_ms())


def count_events(path: Path) -> int | None:
    """Number of records for a progress bar (JSONL lines), or None when unknown without a full read."""
    if is_warc(path):
        return None
    with _open(path) as fh:
        return sum(1 for line in fh if line.strip())
