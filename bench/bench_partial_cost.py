"""What the containment index costs: index bytes per page and the index step's time per page.

Fingerprints the input once (not timed), then decides every page with the single-node engine on a
memory store, timing the index step (`probe_batch`) and the whole decision, and sums the index's key
and value bytes (what RocksDB stores before compression and its own overhead). Run it with this tree
and with a tree before the containment index on PYTHONPATH to compare (bench/RESULTS.md).

    PYTHONPATH=. python bench/bench_partial_cost.py [EVENTS.jsonl ...]

Without files it uses the synthetic crawls of seeds 11 to 14 (`testing.synthetic.generate_crawl`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson

import neardup_core.dedup.engine as engine_module
from neardup_core.dedup.engine import Engine
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import fingerprint_event
from neardup_core.settings import CoreSettings
from neardup_core.testing.synthetic import generate_crawl


def events_of(paths: list[str]) -> list[bytes]:
    if not paths:
        return [orjson.dumps(e) for seed in range(11, 15) for e in generate_crawl(seed=seed)]
    return [line for p in paths for line in Path(p).read_bytes().splitlines() if line.strip()]


def main(paths: list[str]) -> None:
    # partial copies on where the tree has them (they are off by default); a tree before them runs as it is
    on = {"partial_copies": True} if "partial_copies" in CoreSettings.__dataclass_fields__ else {}
    settings = CoreSettings(**on)
    fetches = [f for raw in events_of(paths) if isinstance(f := fingerprint_event(raw, settings=settings), Fetch)]
    engine = Engine(settings)
    spent = [0.0]
    probe_batch = engine_module.probe_batch

    def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return probe_batch(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    engine_module.probe_batch = timed  # type: ignore[assignment]
    started = time.perf_counter()
    for f in fetches:
        engine.decide(f, now_ms=1_800_000_000_000)
    total = time.perf_counter() - started
    engine_module.probe_batch = probe_batch
    keys = size = 0
    for key, value in engine.index.scan(b"", b"\xff" * 64):
        keys += 1
        size += len(key) + len(value)
    pages = len(fetches)
    indexed = sum(1 for f in fetches if f.version is not None)
    print(f"design {settings.design.name}: {pages} pages ({indexed} indexed)")
    print(f"index step {spent[0] / pages * 1e3:.2f} ms/page, whole decision {total / pages * 1e3:.2f} ms/page")
    print(f"index {keys / indexed:.1f} keys/page, {size / indexed:,.0f} bytes/page (keys + values, uncompressed)")


if __name__ == "__main__":
    main(sys.argv[1:])
