"""The single-node engine behind `neardup scan`: the streaming topology run in one process.

The same steps as the Kafka pipeline (fingerprint, gather, index, gather again), in the same
modules, with queues replaced by calls: so `scan` and the workers give the same decisions.
State is an embedded RocksDB directory (or memory), which a later run continues from.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from neardup_core.dedup.gather import Gather, UrlState
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.index.bucket import probe_bucket
from neardup_core.index.keys import shared_prefix_bytes
from neardup_core.index.tables import TableDesign, design_named
from neardup_core.messages import Decision
from neardup_core.store.base import Store
from neardup_core.store.memory import MemoryStore

META_FILE = "neardup-state.json"


class StateMismatch(RuntimeError):
    """The state directory was built with another k or table design."""


@dataclass(frozen=True, slots=True)
class EngineConfig:
    k: int
    design: TableDesign


def open_state(state_dir: Path | None, config: EngineConfig) -> tuple[Store, Store]:
    """The index and URL stores: RocksDB under `state_dir`, or memory when it is None."""
    if state_dir is None:
        return MemoryStore(), MemoryStore()
    from neardup_core.store.rocks import RocksStore

    state_dir.mkdir(parents=True, exist_ok=True)
    meta_path = state_dir / META_FILE
    meta = {"k": config.k, "design": config.design.name}
    if meta_path.exists():
        stored = json.loads(meta_path.read_text())
        if stored != meta:
            raise StateMismatch(
                f"{state_dir} holds an index built with k={stored['k']} and design {stored['design']}; "
                f"this run asks for k={config.k} and {config.design.name}. Use another --state directory "
                f"or the same settings (NEARDUP_K, NEARDUP_TABLES).")
    else:
        meta_path.write_text(json.dumps(meta) + "\n")
    prefix = shared_prefix_bytes(min(config.design.key_bits, default=64))
    return RocksStore(state_dir / "index", prefix_bytes=prefix), RocksStore(state_dir / "urls")


def stored_config(state_dir: Path) -> EngineConfig | None:
    """The settings a state directory was built with, if it was."""
    meta_path = state_dir / META_FILE
    if not meta_path.exists():
        return None
    stored = json.loads(meta_path.read_text())
    return EngineConfig(stored["k"], design_named(stored["design"]))


class Engine:
    """Decides fetches one at a time; returns every decision (and revision) each one causes."""

    def __init__(self, config: EngineConfig, state_dir: Path | None = None) -> None:
        self.config = config
        self.gather = Gather(config.design, config.k)
        self.index, self.urls = open_state(state_dir, config)

    def decide(self, fetch: Fetch, now_ms: int | None = None) -> list[tuple[Decision, Decision | None]]:
        """(decision, the URL's previous decision or None) for each decision published."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        states: dict[str, UrlState] = {}
        out: list[tuple[Decision, Decision | None]] = []

        def state_of(url: str) -> UrlState:
            if url not in states:
                states[url] = UrlState.from_bytes(self.urls.get(url.encode()))
            return states[url]

        def emit(decisions: list[Decision], before: Decision | None) -> None:
            for d in decisions:
                out.append((d, before))
                before = d

        state = state_of(fetch.url)
        before = state.last_decision()
        probes, decisions = self.gather.on_fetch(state, fetch, now)
        emit(decisions, before)
        for probe in probes:
            answer, revisions = probe_bucket(self.index, probe, self.config.design, self.config.k)
            before = state.last_decision()
            emit(self.gather.on_answer(state, answer, now), before)
            for revision in revisions:
                other = state_of(revision.url)
                before = other.last_decision()
                emit(self.gather.on_revision(other, revision, now), before)
        for url, st in states.items():
            self.urls.put(url.encode(), st.to_bytes())
        return out

    def close(self) -> None:
        for store in (self.index, self.urls):
            close = getattr(store, "close", None)
            if close:
                close()
