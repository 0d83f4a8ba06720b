"""What the property tests share: moving a fingerprint by some bits, and an engine's final
decisions over a sequence of fetches (checking on the way that revisions only grow)."""

from __future__ import annotations

import random

from neardup_core.dedup.engine import Engine
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.messages import Decision


def flip_bits(fp: int, rng: random.Random, n: int) -> int:
    for bit in rng.sample(range(64), n):
        fp ^= 1 << bit
    return fp


def final_decisions(engine: Engine, fetches: list[Fetch]) -> dict[str, tuple]:
    """URL -> (verdict, duplicate_of, distance, jaccard) of its last decision; every decision complete."""
    latest: dict[str, tuple] = {}
    last: dict[str, Decision] = {}
    for f in fetches:
        for d, _ in engine.decide(f):
            before = last.get(d.url)
            assert before is None or d.revision > before.revision or d == before, \
                "revisions only grow; a replay re-sends the same decision"
            last[d.url] = d
            latest[d.url] = (d.verdict, d.duplicate_of, d.distance, d.jaccard)
            assert d.complete
    return latest
