"""The stream benchmark's input: the generated crawl and the real corpus pages, as `pages.fetched` events
keyed by URL, the corpus spread evenly through the crawl."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import common  # noqa: F401  (puts the repository on sys.path)
import orjson

from neardup_core.testing.corpus import has_corpus, page_bytes, read_manifest
from neardup_core.testing.synthetic import CRAWL_START, generate_crawl
from neardup_core.timefmt import rfc3339_to_ms


@dataclass(frozen=True, slots=True)
class Event:
    url: str
    key: bytes
    raw: bytes
    fetched_ms: int
    source: str  # "crawl" or "corpus"


def crawl_events(seed: int, scale: int) -> list[Event]:
    out = []
    for e in generate_crawl(seed, scale=scale):
        out.append(Event(e["url"], e["url"].encode(), orjson.dumps(e), rfc3339_to_ms(e["fetched_at"]), "crawl"))
    return out


def copy_url(url: str, copy: int) -> str:
    """The URL of a corpus page's `copy`-th copy under another host (copy 0 is the page's own URL):
    ``https://news.example/a`` -> ``https://copy2.news.example/a``."""
    if copy == 0:
        return url
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"copy{copy}.{parts.netloc}"))


def corpus_events(corpus: Path, limit: int | None, copies: int = 1) -> list[Event]:
    """The corpus pages with a manifest URL (the others are skipped, at most `limit` pages), as
    fetched-page events (raw bytes as body_b64), one second apart after the crawl, so a corpus URL's
    fetches keep their order; `copies` > 1 writes the pages again under other hosts (`copy_url`), each
    round after the last, as a crawl meets mirrors and syndicated copies of real pages."""
    if not has_corpus(corpus):
        return []
    pages = []
    for page in read_manifest(corpus):
        if not page.url or not (corpus / page.path).exists():
            continue
        pages.append((page.url, base64.b64encode(page_bytes(corpus, page.path)).decode()))
        if limit is not None and len(pages) >= limit:
            break
    out: list[Event] = []
    start = CRAWL_START + timedelta(days=1)
    for copy in range(copies):
        for url, body in pages:
            at = start + timedelta(seconds=len(out))
            event = {
                "url": copy_url(url, copy),
                "body_b64": body,
                "fetched_at": at.isoformat().replace("+00:00", "Z"),
                "status": 200,
                "content_type": "text/html",
            }
            out.append(Event(event["url"], event["url"].encode(), orjson.dumps(event),
                             int(at.timestamp() * 1000), "corpus"))
    return out


def interleave(a: list[Event], b: list[Event]) -> list[Event]:
    """`b` spread evenly through `a`, each list keeping its order."""
    if not b:
        return list(a)
    out, j = [], 0
    total = len(a) + len(b)
    for i, e in enumerate(a):
        while j < len(b) and (j + 1) * total <= (i + j + 1) * len(b):
            out.append(b[j])
            j += 1
        out.append(e)
    out.extend(b[j:])
    return out
