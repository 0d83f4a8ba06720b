"""The single-node engine behind `neardup scan`: the streaming topology run in one process.

The same steps as the Kafka pipeline (fingerprint, gather, index, gather again), in the same
modules, with queues replaced by calls: so `scan` and the workers give the same decisions.
State is an embedded RocksDB directory (or memory), which a later run continues from.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from neardup_core.dedup.gather import Gather, Published, UrlState, UrlStates
from neardup_core.dedup.retention import URL_CLOCK, Expired
from neardup_core.dedup.sweep import sweep
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import probe_batch, removals_for
from neardup_core.messages import Decision
from neardup_core.settings import CoreSettings, Difference, state_differences, state_settings
from neardup_core.store.base import Store
from neardup_core.store.memory import MemoryStore
from neardup_core.store.overlay import Overlay

META_FILE = "neardup-state.json"


class StateMismatch(RuntimeError):
    """The state directory was built with other state settings (`neardup_core.settings.STATE_SETTINGS`:
    k, the table design, the shingle size, the feature floor); `differences` says which."""

    def __init__(self, state_dir: Path, differences: list[Difference]) -> None:
        self.differences = differences
        shown = "; ".join(f"{d.setting} {d.state} there, {d.own} here" for d in differences)
        super().__init__(
            f"{state_dir} holds an index built with other settings ({shown}). Use another --state directory "
            f"or the state's settings (NEARDUP_K, NEARDUP_TABLES, NEARDUP_EXPECTED_PAGES, NEARDUP_MINHASH, "
            f"NEARDUP_BANDS, NEARDUP_ROWS, NEARDUP_JACCARD, NEARDUP_SHINGLE_SIZE, NEARDUP_MIN_FEATURES).")


def open_state(state_dir: Path | None, settings: CoreSettings) -> tuple[Store, Store]:
    """The index and URL stores: RocksDB under `state_dir`, or memory when it is None."""
    if state_dir is None:
        return MemoryStore(), MemoryStore()
    from neardup_core.store.rocks import RocksStore

    state_dir.mkdir(parents=True, exist_ok=True)
    meta_path = state_dir / META_FILE
    meta = state_settings(settings)  # what the stream records per app id too (streams/kafka/admin.py)
    if meta_path.exists():
        differences = state_differences(json.loads(meta_path.read_text()), meta)
        if differences:
            raise StateMismatch(state_dir, differences)
    else:
        meta_path.write_text(json.dumps(meta) + "\n")
    return RocksStore(state_dir / "index", prefix_bytes=settings.design.prefix_bytes), RocksStore(state_dir / "urls")


class Engine:
    """Decides fetches one at a time; returns every decision (and revision) each one causes."""

    def __init__(self, settings: CoreSettings, state_dir: Path | None = None) -> None:
        self.settings = settings
        self.gather = Gather(settings)
        self.index, urls = open_state(state_dir, settings)
        self.urls = UrlStates(urls, settings.retention)
        self.expired = Expired()
        """What the retention removed in this engine's life (`neardup_core/dedup/retention.py`)."""

    def decide(self, fetch: Fetch, now_ms: int | None = None) -> list[Published]:
        """Each decision published, with the URL's decision before it (None for its first)."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        horizon = self._expire(fetch.fetched_at_ms, now)
        states: dict[str, UrlState] = {}

        def state_of(url: str) -> UrlState:  # by the URL's identity: two spellings are one state
            key = url_identity(url)
            if key not in states:
                states[key] = self.urls.load(key)
            return states[key]

        state = state_of(fetch.url)
        probes, out = self.gather.on_fetch(state, fetch, now)
        if probes:
            retention = self.settings.retention
            answers, notices = probe_batch(self.index, probes, self.settings.design, self.settings.k, horizon,
                                             retention.window_ms if retention is not None else None)
            for answer in answers:
                out += self.gather.on_answer(state, answer, now)
            for notice in notices:
                out += self.gather.on_notice(state_of(notice.url), notice, now)
        for url, st in states.items():
            self.urls.save(url, st)
        return out

    def preview(self, fetch: Fetch, now_ms: int | None = None) -> tuple[list[Published], Decision | None]:
        """What `decide` would publish for `fetch`, and the URL's decision then, with nothing stored: the
        same step runs on overlays of both stores that are dropped afterwards."""
        index, urls = self.index, self.urls
        self.index = Overlay(index)
        self.urls = UrlStates(Overlay(urls.store), urls.retention)
        self.urls.horizon_ms = urls.horizon_ms
        try:
            out = self.decide(fetch, now_ms)
            return out, self.urls.load(fetch.url).last_decision()
        finally:
            self.index, self.urls = index, urls

    def forget(self, url: str) -> bool:
        """Remove the URL's index entries and its state; False when it had none. Pages decided duplicates
        of it keep their decisions (they are not told); a copy added later no longer matches it."""
        state = self.urls.load(url)
        if state.is_empty():
            return False
        removals = [p for v in state.versions.values() if v.page is not None
                    for p in removals_for(self.settings.design, v.page)]
        if removals:
            probe_batch(self.index, removals, self.settings.design, self.settings.k)
        self.urls.store.delete(url_identity(url).encode())
        return True

    def _expire(self, event_ms: int, now_ms: int) -> int | None:
        """With a retention: the horizon after this fetch moved the clock, once the versions and URL
        states before it are swept (`sweep`: one fetch adds at most one of each)."""
        if self.settings.retention is None:
            return None
        index, urls = Overlay(self.index), Overlay(self.urls.store)
        swept = sweep(self.settings.retention, urls, URL_CLOCK, event_ms, now_ms, index=index,
                      design=self.settings.design, urls=UrlStates(urls, self.settings.retention))
        self.urls.horizon_ms = swept.horizon_ms
        self.expired.add(swept.versions, swept.entries, len(swept.urls))
        index.commit()
        urls.commit()
        return swept.horizon_ms

    def close(self) -> None:
        for store in (self.index, self.urls.store):
            close = getattr(store, "close", None)
            if close:
                close()
