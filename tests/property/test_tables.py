"""Every table design finds exactly the stored fingerprints within k bits (against brute force)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_core.dedup.rule import Match
from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.simhash import hamming
from neardup_core.index.bucket import probe_bucket, probes_for, versions_within
from neardup_core.index.tables import SEED_DESIGN, TableDesign, choose_design, design_named
from neardup_core.store.memory import MemoryStore

DESIGNS = [SEED_DESIGN, TableDesign(3, 6), TableDesign(3, 5), TableDesign(2, 4), TableDesign(6, 8),
           TableDesign(0, 1), TableDesign(1, 3)]


def spread(fp: int, n: int, design: TableDesign, rng: random.Random) -> int:
    """Flip n bits, one in each of n different blocks where possible: the worst case for pigeonhole."""
    blocks = rng.sample(range(design.blocks), min(n, design.blocks))
    for i in range(n):
        shift, width = design.block_bits[blocks[i % len(blocks)]]
        fp ^= 1 << (shift + rng.randrange(width))
    return fp


def page(i: int, fp: int) -> PageVersion:
    return PageVersion(f"https://h/{i}", 0.0, 1_700_000_000_000 + i, f"{i:064x}", f"{i + 10**6:064x}", fp)


def found_within(design: TableDesign, stored: list[int], query: int) -> set[int]:
    store = MemoryStore()
    for i, fp in enumerate(stored):
        for probe in probes_for(design, page(i, fp)):
            probe_bucket(store, probe, design, design.k)
    q = page(len(stored), query)  # ranked after every stored page: every match is an answer
    hits: set[int] = set()
    for probe in probes_for(design, q):
        answer, _ = probe_bucket(store, probe, design, design.k)
        if answer.best is not None:
            hits.add(int(answer.best.candidate.url.rsplit("/", 1)[1]))
    # the answer holds only each table's best match; collect all by reading the probe buckets
    all_hits: set[int] = set()
    for probe in probes_for(design, q):
        for other in versions_within(store, probe, design.k):
            if other.url != q.url and other.simhash is not None and hamming(other.simhash, query) <= design.k:
                all_hits.add(int(other.url.rsplit("/", 1)[1]))
    assert hits <= all_hits
    return all_hits


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), design=st.sampled_from(DESIGNS))
def test_design_finds_exactly_the_fingerprints_within_k(seed: int, design: TableDesign) -> None:
    rng = random.Random(seed)
    query = rng.getrandbits(64)
    stored = [spread(query, rng.randint(0, design.k + 3), design, rng) for _ in range(25)]
    stored += [rng.getrandbits(64) for _ in range(25)]
    brute = {i for i, fp in enumerate(stored) if hamming(fp, query) <= design.k}
    assert found_within(design, stored, query) == brute


@given(fp=st.integers(0, 2**64 - 1), design=st.sampled_from(DESIGNS))
def test_permutation_round_trips_and_keeps_distance(fp: int, design: TableDesign) -> None:
    for t in range(design.table_count):
        assert design.unpermute(design.permute(fp, t), t) == fp
        assert hamming(design.permute(fp, t), design.permute(fp ^ 1, t)) == 1


def test_seed_and_manku_designs() -> None:
    assert (SEED_DESIGN.table_count, SEED_DESIGN.key_bits) == (4, (16, 16, 16, 16))
    manku = TableDesign(3, 6)
    assert manku.table_count == 20 and set(manku.key_bits) <= {31, 32, 33}
    assert design_named(manku.name) == manku
    assert choose_design(3, 10_000) == SEED_DESIGN
    big = choose_design(3, 10**9)
    assert big.table_count > 4 and big.expected_candidates(10**9) < SEED_DESIGN.expected_candidates(10**9) / 1000


def test_best_match_prefers_exact_then_distance_then_rank() -> None:
    a, b = page(1, 0), page(2, 0)
    assert Match(a, False, 1).order < Match(b, False, 2).order
    assert Match(b, True, 0).order < Match(a, False, 0).order
    assert Match(a, False, 2).order < Match(b, False, 2).order
