"""The stream benchmark's input: the generated crawl and the real corpus pages, as `pages.fetched` events
keyed by URL, the corpus spread evenly through the crawl."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

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


def corpus_events(corpus: Path, limit: int | None) -> list[Event]:
    """The corpus pages with a manifest URL (the others are skipped), as fetched-page events (raw bytes
    as body_b64), one second apart after the crawl, so a corpus URL's fetches keep their order."""
    if not has_corpus(corpus):
        return []
    out: list[Event] = []
    start = CRAWL_START + timedelta(days=1)
    for page in read_manifest(corpus):
        if not page.url or not (corpus / page.path).exists():
            continue
        at = start + timedelta(seconds=len(out))
        event = {
            "url": page.url,
            "body_b64": base64.b64encode(page_bytes(corpus, page.path)).decode(),
            "fetched_at": at.isoformat().replace("+00:00", "Z"),
            "status": 200,
            "content_type": "text/html",
        }
        out.append(Event(page.url, page.url.encode(), orjson.dumps(event), int(at.timestamp() * 1000), "corpus"))
        if limit is not None and len(out) >= limit:
            break
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
