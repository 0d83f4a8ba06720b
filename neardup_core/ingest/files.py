"""Reading fetched pages from files: JSONL (one `pages.fetched` event per line) and WARC
(`warc.py`: response, resource and revisit records), either gzipped. Each record comes out as the
raw event bytes, so files and Kafka go through the same validation.

Each record also carries the time it was read, which stands where a Kafka record has its
timestamp: an event without `fetched_at` was fetched then, as a record that `neardup publish`
sends is stamped with the time it is sent (a WARC record's `WARC-Date` is its `fetched_at`).

`read_inputs` reads several files in turn: one that cannot be read to its end (missing,
unreadable, damaged gzip, truncated, not a WARC) gives a `FileError` after the events read before
the failure, and the next file is read."""

from __future__ import annotations

import gzip
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson
from warcio.exceptions import ArchiveLoadFailed

from neardup_core.ingest.warc import BadWarc, Captures, read_warc_events


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One input record: its bytes, where it came from (the file, and the line of a JSONL file or
    the byte offset of a WARC record), the URL key it would carry on Kafka (None when the
    record has no readable URL), when it was read (the record timestamp it would carry), and the
    WARC record type (response, resource, revisit; None for a JSONL line)."""

    raw: bytes
    source: str
    position: int
    key: bytes | None = None
    timestamp_ms: int | None = None
    record: str | None = None


@dataclass(frozen=True, slots=True)
class FileError:
    """A file that could not be read to its end: its name, the events read from it before, and why."""

    source: str
    events_read: int
    reason: str


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


def looks_like_html(path: Path) -> bool:
    """Whether a file that is not a WARC starts as HTML or XML does (`<` after blanks and a BOM): a page
    given where JSONL events were expected, each line of which would be rejected as not JSON."""
    try:
        if is_warc(path):
            return False
        with _open(path) as fh:
            head = fh.read(512)
    except Exception:  # the read itself reports what is wrong with the file
        return False
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"<")


def read_inputs(paths: Iterable[Path]) -> Iterator[RawEvent | FileError]:
    """The events of each file in turn, a `FileError` for a file that fails, then the next file.
    A WARC revisit may refer to a capture in any file read before it."""
    captures = Captures()
    for path in paths:
        read = 0
        try:
            for event in read_events(path, captures):
                read += 1
                yield event
        except Exception as exc:  # one bad file (or a reader bug) must not stop the others
            yield FileError(str(path), read, file_error_reason(exc))


def file_error_reason(exc: Exception) -> str:
    """What went wrong with a file, in a crawler operator's words."""
    if isinstance(exc, FileNotFoundError | PermissionError | IsADirectoryError):
        return f"cannot open: {exc.strerror}"
    if isinstance(exc, BadWarc):
        return str(exc)
    if isinstance(exc, EOFError):
        return f"cut short: {exc}"
    if isinstance(exc, gzip.BadGzipFile | zlib.error):
        return f"damaged gzip: {exc}"
    if isinstance(exc, ArchiveLoadFailed):
        return "not a WARC: " + " ".join(str(exc).split())[:160]
    return f"cannot be read: {type(exc).__name__}: {exc}"


def read_events(path: Path, captures: Captures | None = None) -> Iterator[RawEvent]:
    """The events in one JSONL or WARC file; raises on a file that cannot be read to its end."""
    if is_warc(path):
        yield from read_warc(path, captures)
    else:
        yield from read_jsonl(path)


def read_jsonl(path: Path) -> Iterator[RawEvent]:
    with _open(path) as fh:
        for number, line in enumerate(fh, 1):
            line = line.rstrip(b"\r\n")
            if line.strip():
                yield RawEvent(line, str(path), number, timestamp_ms=_now_ms())


def read_warc(path: Path, captures: Captures | None = None) -> Iterator[RawEvent]:
    """The page records of a WARC file as events (see `warc.py`)."""
    for item in read_warc_events(path, captures):
        url = item.event.get("url")
        key = url.encode() if isinstance(url, str) else None
        yield RawEvent(orjson.dumps(item.event), str(path), item.offset, key, _now_ms(), item.record)


def count_events(path: Path) -> int | None:
    """Number of records for a progress bar (JSONL lines), or None when unknown without a full read
    (a WARC, or a file that cannot be read)."""
    try:
        if is_warc(path):
            return None
        with _open(path) as fh:
            return sum(1 for line in fh if line.strip())
    except Exception:  # the read itself reports what is wrong with the file
        return None
