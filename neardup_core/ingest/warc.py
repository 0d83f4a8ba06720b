"""WARC files as crawlers write them, to `pages.fetched` events.

The file may be plain, gzipped per record (`.warc.gz`) or gzipped whole (`gzip crawl.warc`: one
member holding every record, read as one stream). `response` records (HTTP headers and payload),
`resource` records (a document without HTTP headers: status 200, the record's Content-Type) and
`revisit` records become events; requests, metadata and warcinfo are not pages. A chunked payload
is dechunked here; a Content-Encoding is left to the event (`event.py` inflates it with a cap).

A revisit says "same payload as that capture": its event is the capture's (status, headers,
payload) under the revisit's URL and date, with a `revisit` object naming what it referred to. The
capture is found among the responses and resources read before it, in this file or an earlier one
(`Captures`: by WARC-Refers-To, by WARC-Refers-To-Target-URI and -Date, by WARC-Payload-Digest,
then by the target URI's latest capture) and its payload read again from its offset. A revisit
whose capture was not read gets no body, and validation refuses it with that reason.
"""

from __future__ import annotations

import base64
import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader
from warcio.exceptions import ArchiveLoadFailed

from neardup_core.timefmt import rfc3339_to_ms

PAGE_RECORDS = ("response", "resource", "revisit")
_WHOLE_GZIP = "non-chunked gzip file detected"
_GZIP_MAGIC = b"\x1f\x8b"
_READ_BLOCK = 1 << 16


class BadWarc(ValueError):
    """A WARC file that cannot be read on from some record: damaged, cut short, or not a WARC."""


@dataclass(frozen=True, slots=True)
class Capture:
    """Where a payload was read: the file, the record's offset, and whether the file is one gzip stream."""

    path: Path
    offset: int
    whole_gzip: bool


@dataclass(frozen=True, slots=True)
class WarcEvent:
    """One page record as an event (the `pages.fetched` fields), its record type and offset."""

    event: dict[str, Any]
    record: str
    offset: int


class Captures:
    """The responses and resources read so far, by each name a revisit may refer to them by."""

    def __init__(self) -> None:
        self._at: dict[tuple[str, ...], Capture] = {}

    def add(self, headers: Any, capture: Capture) -> None:
        uri, date = headers.get_header("WARC-Target-URI"), headers.get_header("WARC-Date")
        if record_id := headers.get_header("WARC-Record-ID"):
            self._at[("id", record_id)] = capture
        if uri:
            self._at[("uri", uri)] = capture
            if date:
                self._at[("at", uri, date)] = capture
        if digest := headers.get_header("WARC-Payload-Digest"):
            self._at.setdefault(("digest", digest), capture)

    def find(self, headers: Any) -> Capture | None:
        uri = headers.get_header("WARC-Refers-To-Target-URI")
        keys = [("id", headers.get_header("WARC-Refers-To")),
                ("at", uri, headers.get_header("WARC-Refers-To-Date")),
                ("digest", headers.get_header("WARC-Payload-Digest")), ("uri", uri)]
        return next((self._at[k] for k in keys if None not in k and k in self._at), None)


def read_warc_events(path: Path, captures: Captures | None = None) -> Iterator[WarcEvent]:
    """The page records of one WARC file as events, in file order."""
    captures = Captures() if captures is None else captures
    seen = 0
    try:
        with path.open("rb") as fh:
            gzipped = fh.read(2) == _GZIP_MAGIC
            fh.seek(0)
            for item in _records(fh, path, False, captures, 0, gzipped):
                seen += 1
                if item is not None:
                    yield item
    except ArchiveLoadFailed as exc:
        if _WHOLE_GZIP not in str(exc):
            raise
        with gzip.open(path, "rb") as whole:
            for item in _records(whole, path, True, captures, seen, False):
                if item is not None:
                    yield item


def _records(fh: IO[bytes] | gzip.GzipFile, path: Path, whole_gzip: bool, captures: Captures,
             skip: int, gzipped: bool) -> Iterator[WarcEvent | None]:
    """Each record of `fh` in turn (None for those that are not pages), past the first `skip`;
    `gzipped` for a file of gzip members."""
    iterator = ArchiveIterator(fh, arc2warc=True)
    records = iter(iterator)
    n, offset = 0, 0
    while (record := _next_record(records, offset, gzipped)) is not None:
        if n < skip or record.rec_type not in PAGE_RECORDS:
            yield None
        elif record.rec_type == "revisit":
            event = _revisit_event(record, captures)
            _drain(record)
            yield WarcEvent(event, record.rec_type, iterator.get_record_offset())
        else:
            event = _capture_event(record)
            captures.add(record.rec_headers, Capture(path, iterator.get_record_offset(), whole_gzip))
            yield WarcEvent(event, record.rec_type, iterator.get_record_offset())
        n += 1
        offset = iterator.get_record_offset() + iterator.get_record_length()


def _next_record(records: Iterator[Any], offset: int, gzipped: bool) -> Any:
    """The next record, or None at the end; raises `BadWarc` (saying where) for one that cannot be read."""
    try:
        return next(records)
    except StopIteration:
        return None
    except ArchiveLoadFailed as exc:
        text = " ".join(str(exc).split())
        if _WHOLE_GZIP in text:
            raise
        if gzipped and offset:
            raise BadWarc(f"damaged gzip member at offset {offset}") from None
        raise BadWarc(f"not a WARC record at offset {offset}: {text[:160]}") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise BadWarc(f"damaged or cut-short gzip after offset {offset}: {exc}") from None
    except Exception as exc:  # warcio's parser on a damaged or cut-short record header
        raise BadWarc(f"record at offset {offset} cannot be parsed (damaged or cut short): "
                      f"{type(exc).__name__}: {exc}") from None


def _capture_event(record: Any) -> dict[str, Any]:
    """A response or resource record as an event: URL, WARC date, status, headers, payload."""
    headers = record.rec_headers
    event: dict[str, Any] = {"url": headers.get_header("WARC-Target-URI")}
    date = headers.get_header("WARC-Date")
    if date:
        try:
            event["fetched_at"] = rfc3339_to_ms(date)
        except ValueError:
            event["fetched_at"] = date  # validation rejects it with its reason
    stream = record.raw_stream
    if record.http_headers is not None:
        try:
            event["status"] = int(record.http_headers.get_statuscode())
        except (TypeError, ValueError):
            event["status"] = 0
        http = {k.lower(): v for k, v in record.http_headers.headers}
        if http.get("transfer-encoding", "").lower() == "chunked":
            stream = ChunkedDataReader(record.raw_stream, decomp_type=None)
            del http["transfer-encoding"]
        event["headers"] = http
        if "content-type" in http:
            event["content_type"] = http["content-type"]
    elif headers.get_header("Content-Type"):
        event["content_type"] = headers.get_header("Content-Type")
    event["body_b64"] = base64.b64encode(stream.read()).decode()
    _drain(record)
    return event


def _drain(record: Any) -> None:
    """Read the record to its end; raise `BadWarc` when the file ends before it does."""
    while record.raw_stream.read(_READ_BLOCK):
        pass
    missing = getattr(record.raw_stream, "limit", 0)
    if missing:
        length = record.rec_headers.get_header("Content-Length")
        raise BadWarc(f"the {record.rec_type} record of {record.rec_headers.get_header('WARC-Target-URI')} "
                              f"ends {missing} bytes before its Content-Length of {length}: the file is cut short")


def _revisit_event(record: Any, captures: Captures) -> dict[str, Any]:
    headers = record.rec_headers
    names = {"refers_to": headers.get_header("WARC-Refers-To"),
             "refers_to_uri": headers.get_header("WARC-Refers-To-Target-URI"),
             "refers_to_date": headers.get_header("WARC-Refers-To-Date"),
             "payload_digest": headers.get_header("WARC-Payload-Digest")}
    revisit = {k: v for k, v in names.items() if v}
    capture = captures.find(headers)
    event: dict[str, Any] = {} if capture is None else _read_capture(capture)
    event.update(url=headers.get_header("WARC-Target-URI"), revisit=revisit)
    event.pop("fetched_at", None)
    if date := headers.get_header("WARC-Date"):
        try:
            event["fetched_at"] = rfc3339_to_ms(date)
        except ValueError:
            event["fetched_at"] = date
    if capture is not None:
        captures.add(headers, capture)
    return event


def _read_capture(capture: Capture) -> dict[str, Any]:
    """The event of the response or resource record at `capture`, read again from its file."""
    with gzip.open(capture.path, "rb") if capture.whole_gzip else capture.path.open("rb") as fh:
        fh.seek(capture.offset)
        return _capture_event(next(iter(ArchiveIterator(fh, arc2warc=True))))
