"""The workers' Faust table store: the index table gets prefix Bloom filters and scans like memory."""

from __future__ import annotations

import random
from pathlib import Path

import faust

from neardup_core.dedup.version import PageVersion
from neardup_core.index.bucket import probe_bucket, probes_for
from neardup_core.index.keys import shared_prefix_bytes
from neardup_core.index.tables import TableDesign
from neardup_core.store.memory import MemoryStore
from neardup_core.store.rocks import RocksStore
from streams.state.stores import STORE_URL, PrefixRocksOptions, PrefixRocksStore


def test_index_table_store_has_prefix_filters_and_scans_like_memory(tmp_path: Path) -> None:
    design = TableDesign(3, 5)
    prefix = shared_prefix_bytes(min(design.key_bits))
    app = faust.App("neardup-store-test", broker="kafka://127.0.0.1:1", store="rocksdb://", datadir=str(tmp_path))
    index = app.Table("index-test", partitions=2, store=STORE_URL, key_type=bytes, value_type=bytes,
                      options={"block_cache_size": 8 << 20, "prefix_bytes": prefix})
    plain = app.Table("pending-test", partitions=2, store=STORE_URL, key_type=bytes, value_type=bytes)
    store = index.data
    assert isinstance(store, PrefixRocksStore) and isinstance(store.rocksdb_options, PrefixRocksOptions)
    assert store.prefix_bytes == prefix and plain.data.prefix_bytes is None
    assert store.rocksdb_options.block_cache_size == 8 << 20

    db = store._db_for_partition(1)
    options = "".join(path.read_text() for path in Path(db.path()).glob("OPTIONS-*"))
    assert f"prefix_extractor=rocksdb.FixedPrefix.{prefix}" in options
    partition = RocksStore.wrap(db, same_prefix=True)
    memory = MemoryStore()
    rng = random.Random(1)
    fps = [rng.getrandbits(64) for _ in range(200)]
    fps += [fp ^ (1 << rng.randrange(64)) for fp in fps[:100]]
    for i, fp in enumerate(fps):
        page = PageVersion(f"https://h.example/{i}", 0.0, 1_700_000_000_000 + i, f"{i % 30:064x}", f"{i:064x}", fp)
        for probe in probes_for(design, page):
            assert probe_bucket(partition, probe, design, design.k) == probe_bucket(memory, probe, design, design.k)
            assert list(store.scan(1, probe.lo, probe.hi)) == list(memory.scan(probe.lo, probe.hi))
