"""RocksDB with prefix Bloom filters answers every bucket scan exactly as the in-memory store."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from neardup_core.dedup.version import PageVersion
from neardup_core.index.bucket import probe_bucket, probes_for
from neardup_core.index.keys import shared_prefix_bytes
from neardup_core.index.tables import SEED_DESIGN, TableDesign
from neardup_core.store.memory import MemoryStore
from neardup_core.store.rocks import RocksStore


def page(i: int, fp: int, digest_group: int) -> PageVersion:
    return PageVersion(f"https://h{i % 7}.example/{i}", 0.0, 1_700_000_000_000 + i, f"{digest_group:064x}",
                       f"{i % 50:064x}", fp)


@pytest.mark.parametrize("design", [SEED_DESIGN, TableDesign(3, 5), TableDesign(3, 6), TableDesign(1, 3)],
                         ids=lambda d: d.name)
def test_prefix_filtered_store_scans_like_memory(tmp_path: Path, design: TableDesign) -> None:
    rng = random.Random(design.name)
    # clustered fingerprints (shared high bits, the top bucket, near copies) and random ones
    base = [0, (1 << 64) - 1, rng.getrandbits(64)]
    fps = [b ^ (1 << rng.randrange(64)) if rng.random() < 0.5 else b for b in base for _ in range(30)]
    fps += [rng.getrandbits(64) for _ in range(300)]
    memory = MemoryStore()
    rocks = RocksStore(tmp_path / "index", prefix_bytes=shared_prefix_bytes(min(design.key_bits)))
    for i, fp in enumerate(fps):
        for probe in probes_for(design, page(i, fp, i % 40)):
            got = probe_bucket(rocks, probe, design, design.k)
            want = probe_bucket(memory, probe, design, design.k)
            assert got == want
        if i == len(fps) // 2:
            rocks.flush()  # half the entries in files, half in the memtable
    for i, fp in enumerate(fps[::7]):
        for probe in probes_for(design, page(10_000 + i, fp, 3)):
            assert list(rocks.scan(probe.lo, probe.hi)) == list(memory.scan(probe.lo, probe.hi))
    rocks.close()


def test_shared_prefix_is_within_every_bucket() -> None:
    rng = random.Random(5)
    for design in (SEED_DESIGN, TableDesign(3, 5), TableDesign(3, 6), TableDesign(6, 8)):
        prefix = shared_prefix_bytes(min(design.key_bits))
        for fp in [0, (1 << 64) - 1] + [rng.getrandbits(64) for _ in range(50)]:
            for probe in probes_for(design, page(1, fp, 1)):
                assert probe.entry_key[:prefix] == probe.lo[:prefix]
                if probe.table < design.table_count:  # the bucket's last possible key shares it too
                    shift = 64 - design.key_bits[probe.table]
                    top = (design.bucket(fp, probe.table) << shift) | ((1 << shift) - 1)
                    last = bytes((probe.table,)) + top.to_bytes(8, "big") + b"\xff" * 12
                    assert probe.lo <= last < probe.hi and last[:prefix] == probe.lo[:prefix]
