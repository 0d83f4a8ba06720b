"""The retention's sweep, one step of it: what `scan`, the gather agent and the index step each run.

A step (1) moves a store's event clock by the newest fetch it brings (`retention.advance_clock`),
(2) takes the horizon the clock gives, and (3) removes, oldest first and at most `sweep_max` of each,
the index's versions first fetched before the horizon (`index/expiry.py`) and the URL states last
fetched before it (`UrlStates.expire`). `scan` sweeps both from one clock; in the stream, each gather
partition sweeps its URL states by its own clock and each index partition its versions by its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from neardup_core.dedup.gather import UrlState, UrlStates
from neardup_core.dedup.retention import Retention, advance_clock
from neardup_core.index.expiry import expire_versions
from neardup_core.index.tables import TableDesign
from neardup_core.store.base import Store


@dataclass
class Swept:
    """What one step removed, and the horizon it swept to (None: no retention, or no input yet)."""

    horizon_ms: int | None = None
    versions: int = 0
    entries: int = 0
    urls: list[tuple[str, UrlState]] = field(default_factory=list)
    """Each URL state removed (its identity and state), for what the caller keeps beside it."""


def sweep(retention: Retention | None, clock: Store, clock_key: bytes, newest_ms: int | None, now_ms: int, *,
          index: Store | None = None, design: TableDesign | None = None, urls: UrlStates | None = None) -> Swept:
    """One step of the sweep (the module's docstring) on `index` (with its `design`) and `urls`, whichever
    are given, by the clock under `clock_key` in `clock`. `urls.horizon_ms` is set to the horizon."""
    if retention is None:
        return Swept()
    horizon = retention.horizon(advance_clock(clock, clock_key, newest_ms, now_ms))  # 1. and 2.
    swept = Swept(horizon)
    if urls is not None:
        urls.horizon_ms = horizon
    if horizon is None:
        return swept
    if index is not None:  # 3.
        assert design is not None, "an index is swept by its design's keys"
        expired = expire_versions(index, design, horizon, retention.sweep_max)
        swept.versions, swept.entries = expired.versions, expired.entries
    if urls is not None:
        swept.urls = urls.expire(retention.sweep_max)
    return swept
