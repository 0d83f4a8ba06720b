"""What the containment index costs, with and without the cap on a bucket's texts, at two input sizes.

Fingerprints each input once (not timed), then decides every page with the single-node engine on a memory
store under each configuration: partial copies off, on without a cap (`NEARDUP_CONTAINMENT_BUCKET_TEXTS=0`),
and on with caps (default: 16). Per configuration and input it reports the CPU time of the index step
(`probe_batch`) and of the whole decision per page, the containment-bucket items the probes read per page
(the work the cap bounds), the index's keys and bytes per page (keys + values, uncompressed: what RocksDB
stores before compression), and how many pages name a partial copy. Each input is run at two sizes (its
first part and all of it), so a cost that grows with the collection shows as a growth rate; ratios are
against partial copies off in the same run.

    python bench/bench_partial_cost.py [--caps 0,16] [--corpus DIR] [--out FILE]

Inputs: the generated crawls (seeds 11-12, then 11-18: templated sites whose sentences recur across
sites, the dense case), and the shared corpus's real pages written three times, the copies under other
hosts (half of them, then all; skipped when the corpus is absent).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import common  # noqa: F401  (puts the repository on sys.path)
from stream_input import corpus_events, crawl_events

import neardup_core.dedup.engine as engine_module
from neardup_core.dedup.engine import Engine
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import fingerprint_event
from neardup_core.settings import CoreSettings
from neardup_core.testing.corpus import corpus_dir
from neardup_core.testing.counting_store import ContainmentReadCounter

NOW_MS = 1_800_000_000_000


@dataclass(frozen=True)
class Cost:
    pages: int
    index_ms: float
    decision_ms: float
    reads: float
    keys: float
    bytes: float
    naming: int


def measure(fetches: list[Fetch], settings: CoreSettings) -> Cost:
    engine = Engine(settings)
    engine.index = store = ContainmentReadCounter()
    spent = [0.0]
    probe_batch: Callable[..., Any] = engine_module.probe_batch

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return probe_batch(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - started

    engine_module.probe_batch = timed  # type: ignore[assignment]
    naming: dict[str, bool] = {}
    try:
        started = time.process_time()
        for f in fetches:
            for published in engine.decide(f, now_ms=NOW_MS):
                naming[published.decision.url] = bool(published.decision.partial_of)
        total = time.process_time() - started
    finally:
        engine_module.probe_batch = probe_batch  # type: ignore[assignment]
    keys = size = 0
    for key, value in store.items():
        keys += 1
        size += len(key) + len(value)
    pages = len(fetches)
    indexed = max(1, sum(1 for f in fetches if f.version is not None))
    return Cost(pages, spent[0] / pages * 1e3, total / pages * 1e3, store.read / pages, keys / indexed,
                size / indexed, sum(naming.values()))


def fingerprinted(raws: list[bytes], settings: CoreSettings) -> list[Fetch]:
    return [f for raw in raws if isinstance(f := fingerprint_event(raw, settings=settings), Fetch)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--caps", default="0,16", help="bucket caps to run with partial copies on (0: none)")
    p.add_argument("--corpus", type=Path, default=corpus_dir())
    p.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = p.parse_args()
    caps = [int(c) for c in args.caps.split(",")]
    on = CoreSettings(partial_copies=True)
    configs = [("off", CoreSettings())] + [(f"cap {c}" if c else "no cap", replace(on, containment_bucket_texts=c))
                                          for c in caps]
    crawl = [e.raw for seed in range(11, 19) for e in crawl_events(seed, 1)]
    small_crawl = [e.raw for seed in range(11, 13) for e in crawl_events(seed, 1)]
    inputs: list[tuple[str, list[bytes]]] = [("generated crawls, seeds 11-12", small_crawl),
                                             ("generated crawls, seeds 11-18", crawl)]
    corpus = [e.raw for e in corpus_events(args.corpus, None, copies=3)]
    if corpus:
        half = [e.raw for e in corpus_events(args.corpus, len(corpus) // 6, copies=3)]
        inputs += [("real corpus pages x3, half", half), ("real corpus pages x3, all", corpus)]
    fetches = {name: fingerprinted(raws, on) for name, raws in inputs}  # minima too; off ignores them
    lines = ["| input | pages | configuration | index step CPU ms/page | x off | decision CPU ms/page | "
             "containment items read/page | index keys/page | index bytes/page | pages naming a partial copy |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    costs: dict[tuple[str, str], Cost] = {}
    for name, _ in inputs:
        for label, settings in configs:
            c = costs[(name, label)] = measure(fetches[name], settings)
            base = costs[(name, "off")]
            lines.append(f"| {name} | {c.pages:,} | {label} | {c.index_ms:.2f} | {c.index_ms / base.index_ms:.2f} | "
                         f"{c.decision_ms:.2f} | {c.reads:.1f} | {c.keys:.1f} | {c.bytes:,.0f} | {c.naming} |")
            print(lines[-1], flush=True)
    lines += ["", "Growth from the smaller to the larger input of each kind (pages x, then per-page cost x):", "",
              "| input | configuration | pages x | index step per page x | items read per page x | "
              "bytes per page x |", "|---|---|---:|---:|---:|---:|"]
    for small, large in zip([n for n, _ in inputs][::2], [n for n, _ in inputs][1::2], strict=True):
        for label, _ in configs:
            a, b = costs[(small, label)], costs[(large, label)]
            reads = f"{b.reads / a.reads:.2f}" if a.reads else "-"
            lines.append(f"| {large} | {label} | {b.pages / a.pages:.2f} | {b.index_ms / a.index_ms:.2f} | {reads} | "
                         f"{b.bytes / a.bytes:.2f} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
