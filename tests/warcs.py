"""WARC files as crawlers write them, made with warcio's writer for the tests: response records
(plain, chunked, content-encoded), resource records, revisits, and the ways a file goes bad."""

from __future__ import annotations

import gzip
import io
import random
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

DATE = "2026-11-02T10:00:{:02d}Z"
_NOUNS = ["council", "river", "school", "bridge", "market", "museum", "garden", "station", "library", "harbour",
          "festival", "hospital", "railway", "theatre", "factory", "village", "forest", "stadium"]
_ADJS = ["closed", "repaired", "crowded", "expensive", "finished", "delayed", "popular", "quiet", "famous", "new"]


def article(seed: int) -> bytes:
    """A page with a main text jusText keeps: five paragraphs of English sentences, distinct per seed."""
    rng = random.Random(seed)

    def sentence() -> str:
        a, b = rng.sample(_NOUNS, 2)
        return (f"The people of the {a} said on {rng.choice(['Monday', 'Tuesday', 'Friday'])} that the {b} "
                f"would be {rng.choice(_ADJS)} before the end of the year, and most of them were {rng.choice(_ADJS)} "
                f"about what it could mean for their {rng.choice(_NOUNS)}.")

    paragraphs = "".join(f"<p>{' '.join(sentence() for _ in range(3))}</p>" for _ in range(5))
    return (f"<html><head><title>Story {seed}</title></head><body><div class='nav'><a href='/'>Home</a></div>"
            f"<div class='article'><h1>Story {seed}</h1>{paragraphs}</div></body></html>").encode()


def chunked(body: bytes, size: int = 500) -> bytes:
    """`body` in HTTP/1.1 chunked transfer encoding."""
    parts = [b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size]) for i in range(0, len(body), size)]
    return b"".join(parts) + b"0\r\n\r\n"


def deflated(body: bytes) -> bytes:
    return zlib.compress(body)


class Warc:
    """A WARC being written: `response`, `resource`, `revisit` records; `bytes()` is the file.
    `records` lists (record type, URL, WARC-Record-ID) as written, `digests` each record's
    WARC-Payload-Digest."""

    def __init__(self, *, gzipped: bool) -> None:
        self.buffer = io.BytesIO()
        self.writer = WARCWriter(self.buffer, gzip=gzipped)
        self.records: list[tuple[str, str, str]] = []
        self.digests: dict[str, str] = {}

    def response(self, url: str, payload: bytes, *, second: int = 0, status: str = "200 OK",
                 headers: Sequence[tuple[str, str]] = (("Content-Type", "text/html; charset=utf-8"),)) -> str:
        http = StatusAndHeaders(status, list(headers), protocol="HTTP/1.1")
        return self._write(url, "response", payload, http, {"WARC-Date": DATE.format(second)})

    def resource(self, url: str, payload: bytes, *, second: int = 0, content_type: str = "text/html") -> str:
        return self._write(url, "resource", payload, None,
                           {"WARC-Date": DATE.format(second), "Content-Type": content_type})

    def revisit(self, url: str, *, second: int, refers_to_uri: str | None = None, refers_to_second: int | None = None,
                digest: str | None = None, refers_to: str | None = None) -> str:
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        record = self.writer.create_revisit_record(
            url, digest or "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", refers_to_uri,
            DATE.format(refers_to_second) if refers_to_second is not None else None, http_headers=http)
        record.rec_headers.replace_header("WARC-Date", DATE.format(second))
        for name, value in (("WARC-Payload-Digest", digest), ("WARC-Refers-To-Target-URI", refers_to_uri),
                            ("WARC-Refers-To-Date", refers_to_second)):
            if value is None:
                record.rec_headers.remove_header(name)
        if refers_to is not None:
            record.rec_headers.add_header("WARC-Refers-To", refers_to)
        return self._record(record, url)

    def request(self, url: str) -> None:
        self.writer.write_record(self.writer.create_warc_record(url, "request", payload=io.BytesIO(
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")))

    def bytes(self) -> bytes:
        return self.buffer.getvalue()

    def _write(self, url: str, kind: str, payload: bytes, http: Any, warc: dict[str, str]) -> str:
        record = self.writer.create_warc_record(url, kind, payload=io.BytesIO(payload), http_headers=http,
                                                warc_headers_dict=warc)
        return self._record(record, url)

    def _record(self, record: Any, url: str) -> str:
        self.writer.write_record(record)
        record_id = record.rec_headers.get_header("WARC-Record-ID")
        self.digests[record_id] = record.rec_headers.get_header("WARC-Payload-Digest")
        self.records.append((record.rec_type, url, record_id))
        return str(record_id)


def whole_gzip(warc: Warc) -> bytes:
    """A plain WARC gzipped as one member, as `gzip crawl.warc` makes it."""
    return gzip.compress(warc.bytes())


def damaged(data: bytes, at: float = 0.6) -> bytes:
    """`data` with a run of bytes overwritten at a fraction of its length (a bad disk, a bad copy)."""
    cut = int(len(data) * at)
    return data[:cut] + bytes(64) + data[cut + 64:]


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
