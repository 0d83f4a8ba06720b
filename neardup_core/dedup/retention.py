"""Retention: what is old enough to forget, by event time, and the clock that says so.

With `NEARDUP_RETENTION_DAYS` (`CoreSettings.retention_ms`), a **version** (one body at one URL)
expires when its first fetch, the `fetched_at` that ranks it, is older than the window, and a **URL
state** when its latest fetch is. Expired versions leave the index (their entries, records and places
in group summaries: `neardup_core/index/expiry.py`) and their URL's state (`UrlStates` prunes them
when it loads one); a URL state whose latest fetch expired is removed whole, with its decision: a
later fetch of the URL starts it again, at revision 1.

Age is measured in **event time**: against the newest `fetched_at` the store has seen (its clock,
one per store: `scan`'s state dir, or a worker's table partition), not the wall clock. A crawler
replaying WARCs of 2019 then keeps the same window of them as a live crawl keeps of today's pages;
by the wall clock every replayed page would be expired on arrival. So the clock only moves with
input, and a store that gets no input forgets nothing. A fetch dated more than a day past the wall
clock moves the clock only to a day past it, so one event with a wrong date (a year 2099 is a valid
`fetched_at`) cannot expire a whole index.

What stays consistent:
- A decision is never withdrawn. A page decided a duplicate of a version that later expires keeps
  that decision (its `duplicate_of` names a page the index no longer holds); pages that arrive later
  are decided as if the expired version never existed (the oracle over the unexpired versions).
- Expired versions match nothing even before the sweep removes them (`probe_bucket` skips them), so a
  sweep that lags behind changes no decision; a body fetched again at its URL after its version
  expired is a new version (a new first fetch, probed and indexed again): an unchanged live page is
  re-indexed once per window, on its first recrawl after it expired.
- The sweep is incremental and bounded: at most `sweep_max` versions and URL states per store per
  step (a `scan` page, a worker's record), oldest first, from a time-ordered key range.

Expiry keys are written only while a retention is on (with it off nothing changes, not even the
bytes on disk): turning it on for an existing state dir or index expires what is written from then
on, not what was written before.
"""

from __future__ import annotations

from dataclasses import dataclass

from neardup_core.store.base import Store

FUTURE_SLACK_MS = 86_400_000
"""How far past the wall clock a fetch may move the event clock."""
SWEEP_MAX = 256
"""Versions (and URL states) a store expires per step at most."""
URL_EXPIRY = b"\x02"
"""URL table: URL_EXPIRY | latest fetch (8 bytes, ms) | URL identity, for each URL state."""
URL_CLOCK = b"\x03clock"


@dataclass(frozen=True, slots=True)
class Retention:
    """The retention window and how much a step sweeps."""

    window_ms: int
    sweep_max: int = SWEEP_MAX

    def horizon(self, clock_ms: int | None) -> int | None:
        """Versions first fetched before this are expired; None before the store saw any input."""
        return None if clock_ms is None else clock_ms - self.window_ms


def read_clock(store: Store, key: bytes) -> int | None:
    raw = store.get(key)
    return None if raw is None else int.from_bytes(raw, "big")


def advance_clock(store: Store, key: bytes, event_ms: int | None, wall_ms: int) -> int | None:
    """The store's event clock after seeing a fetch at `event_ms` (None: no fetch), written when it
    moved: the newest fetch seen, at most a day past the wall clock."""
    clock = read_clock(store, key)
    if event_ms is None:
        return clock
    seen = min(event_ms, wall_ms + FUTURE_SLACK_MS)
    if clock is None or seen > clock:
        store.put(key, max(0, seen).to_bytes(8, "big"))
        return seen
    return clock


def url_expiry_key(seen_ms: int, identity: str) -> bytes:
    return URL_EXPIRY + max(0, seen_ms).to_bytes(8, "big") + identity.encode()


def url_expired_range(horizon_ms: int) -> tuple[bytes, bytes]:
    """[lo, hi) of the expiry keys of URL states last fetched before `horizon_ms`."""
    return URL_EXPIRY, URL_EXPIRY + max(0, horizon_ms).to_bytes(8, "big")


@dataclass(slots=True)
class Expired:
    """Counts of what a retention removed: version records, index entries, URL states."""

    versions: int = 0
    entries: int = 0
    urls: int = 0

    def add(self, versions: int, entries: int, urls: int) -> None:
        self.versions += versions
        self.entries += entries
        self.urls += urls
