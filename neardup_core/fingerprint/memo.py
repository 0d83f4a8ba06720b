"""The fingerprints of bodies seen recently, so that a byte-identical body is not extracted again.

A crawl fetches the same bytes under many URLs (http and https, a trailing slash, tracking parameters,
a session id in the URL, mirrors that copy a file) and again on a recrawl. Everything a `Fetch` holds
beyond its URL, host, fetch time and importance follows from the body's bytes, the few fields that
choose how they are decoded, and the settings (`content_key`), so a body met again is answered from
the last one. The memo is bounded (least recently used out first) and per process; it is consulted where
records are read, before the extraction pool (`page.FingerprintBatch`: `scan`'s main process, a worker's
event loop), so a copy finds its body whichever extraction process had it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.ingest.event import FetchedPage
from neardup_core.settings import CoreSettings

MEMO_ENTRIES = 4096
"""Bodies remembered per process: a few hundred bytes each (digests, fingerprints, sketches)."""


def content_key(page: FetchedPage, body_digest: str, settings: CoreSettings) -> tuple[Hashable, ...]:
    """What the content fields of a page's `Fetch` depend on: the body (by digest), the status (its
    skip reason names it), the fields decoding reads (the event's encoding, its content type, and the
    headers' content type, which it reads when the event gives none), and the settings."""
    header_type = next((v for k, v in page.headers.items() if k.lower() == "content-type"), None)
    return body_digest, page.status, page.content_type, header_type, page.encoding, settings


class ContentMemo:
    """`Fetch`es by `content_key`, at most `entries` of them, the least recently used dropped first."""

    def __init__(self, entries: int = MEMO_ENTRIES) -> None:
        if entries < 0:
            raise ValueError(f"entries must be 0 or more, got {entries}")
        self.entries = entries
        self._fetches: OrderedDict[tuple[Hashable, ...], Fetch] = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key: tuple[Hashable, ...]) -> Fetch | None:
        fetch = self._fetches.get(key)
        if fetch is None:
            self.misses += 1
            return None
        self._fetches.move_to_end(key)
        self.hits += 1
        return fetch

    def put(self, key: tuple[Hashable, ...], fetch: Fetch) -> None:
        if not self.entries:
            return
        self._fetches[key] = fetch
        self._fetches.move_to_end(key)
        while len(self._fetches) > self.entries:
            self._fetches.popitem(last=False)

    def __len__(self) -> int:
        return len(self._fetches)
