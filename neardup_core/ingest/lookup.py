"""One page named on a command line: an HTML file, or `FILE#URL`, a record of a JSONL or WARC file.

What `neardup explain` compares. A record is read with the readers `scan` uses (`files.read_events`,
so a WARC revisit finds its capture as it would there), and found by the URL's identity
(`url_identity`); when the file holds several fetches of the URL, the last one is taken, as a URL's
decision is about its latest fetch. An HTML file (gzipped too) becomes the event a crawler would
send for it: `body_b64` of its bytes (a gzipped file with `Content-Encoding: gzip`, undone in
validation), `text/html`, at `https://file.invalid/<its absolute path>` unless `FILE.html#URL`
names its URL, fetched at the time the caller gives.
"""

from __future__ import annotations

import base64
import difflib
import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import orjson

from neardup_core.hosts.urls import url_identity
from neardup_core.ingest.files import RawEvent, file_error_reason, is_warc, read_events

Kind = Literal["html", "jsonl", "warc"]
HTML_HOST = "file.invalid"
"""The host of an HTML file's made-up URL (`.invalid` is reserved: it names no real site)."""
_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 4096


class SourceError(ValueError):
    """A page that cannot be read: no such file, no record of the URL, a file that cannot be read."""


@dataclass(frozen=True, slots=True)
class PageSource:
    """A page to compare: as given (`spec`), its file, what the file is, the URL asked for (None for
    an HTML file without one, or a one-record file), and the raw event with its record key and
    timestamp, as `scan` would read it. `position` is the record's line (JSONL) or byte offset
    (WARC), None for an HTML file; `fetches` how many records of the file carry this URL."""

    spec: str
    path: str
    kind: Kind
    event: RawEvent
    position: int | None
    fetches: int = 1


def split_spec(spec: str) -> tuple[Path, str | None]:
    """(file, URL or None) of `FILE` or `FILE#URL`: the file is the longest prefix before a `#` that
    is an existing path, so a path or a URL may hold `#` too."""
    if Path(spec).exists() or "#" not in spec:
        return Path(spec), None
    cuts = [i for i, c in enumerate(spec) if c == "#"]
    for cut in reversed(cuts):
        if Path(spec[:cut]).exists():
            return Path(spec[:cut]), spec[cut + 1:] or None
    return Path(spec[:cuts[0]]), spec[cuts[0] + 1:] or None


def kind_of(path: Path) -> Kind:
    """WARC (by name or its first bytes), JSONL (its first non-blank byte is `{`), else HTML."""
    if is_warc(path):
        return "warc"
    with path.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    if head[:2] == _GZIP_MAGIC:
        with gzip.open(path, "rb") as gz:
            head = gz.read(_SNIFF_BYTES)
    return "jsonl" if head.lstrip()[:1] == b"{" else "html"


def html_url(path: Path) -> str:
    """The made-up URL of an HTML file: `https://file.invalid/<absolute path>`."""
    return f"https://{HTML_HOST}{quote(str(path.resolve()))}"


def load_page(spec: str, *, now_ms: int) -> PageSource:
    """The page `spec` names; raises `SourceError` with a reason an operator can act on."""
    path, url = split_spec(spec)
    if not path.exists():
        raise SourceError(f"{path}: no such file")
    if not path.is_file():
        raise SourceError(f"{path}: not a file")
    try:
        kind = kind_of(path)
    except OSError as exc:
        raise SourceError(f"{path}: {file_error_reason(exc)}") from None
    if kind == "html":
        return _html_page(spec, path, url, now_ms)
    return _record(spec, path, kind, url)


def _html_page(spec: str, path: Path, url: str | None, now_ms: int) -> PageSource:
    body = path.read_bytes()
    event: dict[str, object] = {"url": url or html_url(path), "body_b64": base64.b64encode(body).decode("ascii"),
                                "content_type": "text/html"}
    if body[:2] == _GZIP_MAGIC:
        event["headers"] = {"Content-Encoding": "gzip"}
    return PageSource(spec, str(path), "html", RawEvent(orjson.dumps(event), str(path), 0, None, now_ms), None)


def _url_of(event: RawEvent) -> str | None:
    if event.key is not None:
        return event.key.decode("utf-8", "replace")
    try:
        data = orjson.loads(event.raw)
    except orjson.JSONDecodeError:
        return None
    url = data.get("url") if isinstance(data, dict) else None
    return url if isinstance(url, str) else None


def _record(spec: str, path: Path, kind: Kind, url: str | None) -> PageSource:
    """The last record of `url` in the file (or its only record when `url` is None)."""
    wanted = url_identity(url) if url else None
    found: RawEvent | None = None
    fetches = 0
    urls: list[str] = []
    try:
        for event in read_events(path):
            event_url = _url_of(event)
            if event_url is not None:
                urls.append(event_url)
            if wanted is None or (event_url is not None and url_identity(event_url) == wanted):
                found, fetches = event, fetches + 1
    except Exception as exc:  # a damaged file: say so, as scan does
        raise SourceError(f"{path}: {file_error_reason(exc)} (after {len(urls)} records)") from None
    if wanted is None:
        if fetches == 1 and found is not None:
            return PageSource(spec, str(path), kind, found, found.position)
        shown = ", ".join(urls[:3]) + (", ..." if len(urls) > 3 else "")
        raise SourceError(f"{path} is a {kind.upper()} file of {fetches} records: name one as {path}#URL"
                           + (f" (e.g. {shown})" if urls else ""))
    if found is None:
        close = difflib.get_close_matches(url or "", urls, n=3)
        hint = f"; close: {', '.join(close)}" if close else ""
        raise SourceError(f"no record of {url} in {path} ({len(urls)} records with a URL{hint})")
    return PageSource(spec, str(path), kind, found, found.position, fetches)
