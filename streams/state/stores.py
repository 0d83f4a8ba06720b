"""A Faust table store on rocksdict with range scans, written only by the commit protocol.

Faust's store API has point reads and writes and full iteration only; the index needs one
bounded range scan per probe, so this store adds `scan(partition, lo, hi)` over the partition's
own RocksDB. The agents never write through Faust's table layer (which writes RocksDB before the
changelog record is acknowledged): `streams.state.commit.Take` produces a take's changelog records, one
per state key, waits for the broker's acknowledgement, and then writes the partition's RocksDB in
one batch with `apply_local`. Recovery and standbys are Faust's own, reading those records through
`apply_changelog_batch`, which this store extends with the writer's generation (fencing) and with
the write sets of the changelog format before (records under `BATCH_PREFIX`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, cast

import msgpack
from faust.stores import STORES
from faust.stores.rocksdb import RocksDBOptions
from faust.stores.rocksdb import Store as RocksDBStore
from faust.types import EventT, TableT
from rocksdict import WriteBatch

from neardup_core.store.rocks import add_prefix_filters, compact_deletes, range_items

# a URL with a host part: yarl URLs without one are falsy, and Faust would fall back to its default store
STORE_URL = "neardup-rocks://local"
# the changelog format before per-key records: a key under this prefix carried a write set (msgpack
# list of [key, value|None]); still applied when a changelog written by an older worker is recovered
BATCH_PREFIX = b"\x00neardup-batch\x00"
# in each partition's RocksDB: the highest writer generation applied to it (beside Faust's offset key)
GENERATION_KEY = b"__neardup\x00generation__"
GENERATION_HEADER = "gen"
"""Changelog record header: the consumer group generation of the worker that wrote it (`generation_bytes`).
Short, as every changelog record carries it."""


def generation_bytes(generation: int) -> bytes:
    """A generation as the fewest big-endian bytes (one at least): 1-3 bytes for any real group."""
    generation = max(generation, 0)
    return generation.to_bytes(max(1, (generation.bit_length() + 7) // 8), "big")


def decode_write_set(raw: bytes) -> list[tuple[bytes, bytes | None]]:
    return [(key, value) for key, value in msgpack.unpackb(raw, raw=False)]


def record_generation(headers: Any) -> int | None:
    """The writer generation a changelog record carries, or None (a record without one)."""
    for name, value in headers or ():
        if name == GENERATION_HEADER and value:
            return int.from_bytes(value, "big")
    return None


class PrefixRocksOptions(RocksDBOptions):
    """Faust's RocksDB options plus compaction of files that are mostly deletes (the retention's,
    `neardup_core.store.rocks.compact_deletes`) and, with `prefix_bytes`, prefix Bloom filters
    (`neardup_core.store.rocks.add_prefix_filters`)."""

    def __init__(self, prefix_bytes: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prefix_bytes = prefix_bytes

    def as_options(self) -> Any:
        opts = super().as_options()
        compact_deletes(opts)
        if self.prefix_bytes:
            add_prefix_filters(opts, self.prefix_bytes, self.block_cache_size)
        return opts


class PrefixRocksStore(RocksDBStore):
    """Faust's rocksdict store with range scans; a table whose options hold `prefix_bytes` gets
    prefix Bloom filters, and every range it scans must lie within one prefix."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        base = self.rocksdb_options
        self.prefix_bytes: int | None = base.extra_options.get("prefix_bytes")
        if not isinstance(base, PrefixRocksOptions):
            self.rocksdb_options = PrefixRocksOptions(
                self.prefix_bytes, max_open_files=base.max_open_files, write_buffer_size=base.write_buffer_size,
                max_write_buffer_number=base.max_write_buffer_number,
                target_file_size_base=base.target_file_size_base, block_cache_size=base.block_cache_size,
                use_rocksdict=base.use_rocksdict, ttl=base.ttl)

    @property
    def basename(self) -> Path:
        """The table name, as for `rocksdb://` tables (Faust reads it from the URL's path)."""
        return Path(self.table_name)

    def partition_db(self, partition: int) -> Any:
        """The partition's RocksDB (opened if it is not yet): the Rdict every write lands in. Faust's
        `_db_for_partition` is private but the only way to it (its public API has no partition handle and no
        range scan); tests/unit/test_upstream.py pins its code."""
        return self._db_for_partition(partition)

    def partition_db_path(self, partition: int) -> str:
        """Where the partition's RocksDB lives, opened first so that it exists (`streams.processes.index`)."""
        self._db_for_partition(partition)
        return str(self.partition_path(partition))

    def partition_sequence(self, partition: int) -> int:
        """The partition's RocksDB sequence number: it moves with every write to the partition, whichever
        way it came (`streams.processes.index` skips a replica's catch-up while it has not moved)."""
        return int(self._db_for_partition(partition).latest_sequence_number())

    def scan(self, partition: int, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Items of one partition with lo <= key < hi, in key order (without Faust's offset key)."""
        db = self._db_for_partition(partition)
        for key, value in range_items(db, lo, hi, same_prefix=bool(self.prefix_bytes)):
            if key != self.offset_key and key != GENERATION_KEY:
                yield key, value

    def generation(self, partition: int) -> int:
        """The highest writer generation applied to the partition (0: none recorded)."""
        raw = self._db_for_partition(partition).get(GENERATION_KEY)
        return int.from_bytes(raw, "big") if raw else 0

    def apply_local(self, partition: int, items: Iterable[tuple[bytes, bytes | None]], offset: int,
                    generation: int) -> None:
        """Step 5 of the commit protocol (`streams.state.commit`): a take's writes of one partition, acknowledged in
        its changelog up to `offset`, in one atomic RocksDB batch with that offset and the generation."""
        db = self._db_for_partition(partition)
        batch = _batch(items)
        batch.put(self.offset_key, str(offset).encode())
        if generation > self.generation(partition):
            batch.put(GENERATION_KEY, generation.to_bytes(8, "big"))
        db.write(batch)

    def apply_changelog_batch(self, batch: Iterable[EventT], to_key: Callable[[Any], Any],
                              to_value: Callable[[Any], Any]) -> None:
        """Recovery and standbys: each partition's records in changelog order in one RocksDB batch with the
        last offset read, as Faust's store does, but a record written under an older generation than one
        already applied to its partition is skipped (a stalled writer's, after its successor's), and a
        write set of the older format is applied whole."""
        batches: dict[int, WriteBatch] = {}
        offsets: dict[int, int] = {}
        generations: dict[int, int] = {}
        for event in batch:
            msg = event.message
            p = msg.partition
            if p not in batches:
                batches[p], generations[p] = WriteBatch(raw_mode=True), self.generation(p)
            offsets[p] = max(msg.offset, offsets.get(p, msg.offset))
            generation = record_generation(msg.headers)
            if generation is not None:
                if generation < generations[p]:
                    continue
                generations[p] = generation
            if msg.key is None:
                continue
            if msg.key.startswith(BATCH_PREFIX):
                for key, value in decode_write_set(msg.value) if msg.value is not None else ():
                    _put(batches[p], key, value)
            else:
                _put(batches[p], msg.key, msg.value)
        for p, wb in batches.items():
            wb.put(self.offset_key, str(offsets[p]).encode())
            wb.put(GENERATION_KEY, generations[p].to_bytes(8, "big"))
            self._db_for_partition(p).write(wb)


def _put(batch: WriteBatch, key: bytes, value: bytes | None) -> None:
    if value is None:
        batch.delete(key)
    else:
        batch.put(key, value)


def _batch(items: Iterable[tuple[bytes, bytes | None]]) -> WriteBatch:
    batch = WriteBatch(raw_mode=True)
    for key, value in items:
        _put(batch, key, value)
    return batch


STORES["neardup-rocks"] = "streams.state.stores:PrefixRocksStore"


class RangeScan(Protocol):
    """A table store that can scan a key range of one partition (`PrefixRocksStore`)."""

    def scan(self, partition: int, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]: ...


def scan_partition(table: TableT[bytes, bytes], partition: int, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
    """Items of one partition of a table with lo <= key < hi, in key order; the table's store must
    be a `RangeScan` (Faust types `table.data` as a plain mapping)."""
    return cast(RangeScan, table.data).scan(partition, lo, hi)


class PartitionView:
    """The read side of the `neardup_core.store.base.Store` protocol over one partition of a table: reads go
    to the partition's RocksDB itself. Writes go through a take's transaction (`streams.state.commit.Take.writes`,
    an `Overlay` over this view), never here."""

    def __init__(self, table: TableT[bytes, bytes], partition: int) -> None:
        self.table = table
        self.partition = partition
        self._db = cast(PrefixRocksStore, table.data).partition_db(partition)

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self._db.get(key)
        return value

    def put(self, key: bytes, value: bytes) -> None:
        raise TypeError("a partition is written through a take's transaction (streams.state.commit)")

    def delete(self, key: bytes) -> None:
        raise TypeError("a partition is written through a take's transaction (streams.state.commit)")

    def write_many(self, items: Iterable[tuple[bytes, bytes | None]]) -> None:
        raise TypeError("a partition is written through a take's transaction (streams.state.commit)")

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        return scan_partition(self.table, self.partition, lo, hi)
