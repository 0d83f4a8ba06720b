"""A Faust table store on rocksdict with range scans and one changelog record per batch of writes.

Faust's store API has point reads and writes and full iteration only; the index needs one
bounded range scan per probe, so this store adds `scan(partition, lo, hi)` over the
partition's own RocksDB, and deletes from the current event's partition only.

Faust writes one changelog record per key set. The agents change many keys per record they
process (a batch of probes writes an entry per table and page; a batch of answers changes many
URL states), so they write a whole batch as one table key: `table[batch key] = write set`
(`PartitionView.write_many`). Faust sends that as one changelog record, as it sends any key, and
this store applies the write set to the partition's RocksDB instead of storing it: locally when
it is set, and from the changelog when Faust recovers a partition or keeps a standby copy
(`apply_changelog_batch`). Batch keys are unique, so compaction never drops one; the changelog
is the log of every batch applied, in order, and replaying it rebuilds the partition.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, cast

import msgpack
from faust.stores import STORES
from faust.stores.rocksdb import RocksDBOptions
from faust.stores.rocksdb import Store as RocksDBStore
from faust.streams import current_event
from faust.types import EventT, TableT

from neardup_core.store.rocks import add_prefix_filters, compact_deletes, range_items, write_batch

# a URL with a host part: yarl URLs without one are falsy, and Faust would fall back to its default store
STORE_URL = "neardup-rocks://local"
# Faust-level keys that carry a write set; no stored key starts with it (index keys start with a
# table id, URL state keys with the URL, pending keys with 0x01, host keys with a letter)
BATCH_PREFIX = b"\x00neardup-batch\x00"


WRITE_SET_BYTES = 256 * 1024
"""A changelog record carries writes of at most about this many bytes of keys and values."""


def batch_key() -> bytes:
    """A key no other batch has: 16 random bytes."""
    return BATCH_PREFIX + os.urandom(16)


def encode_write_set(items: Iterable[tuple[bytes, bytes | None]]) -> bytes:
    return msgpack.packb([[key, value] for key, value in items], use_bin_type=True)


def decode_write_set(raw: bytes) -> list[tuple[bytes, bytes | None]]:
    return [(key, value) for key, value in msgpack.unpackb(raw, raw=False)]


def write_sets(items: Iterable[tuple[bytes, bytes | None]], max_bytes: int = WRITE_SET_BYTES) -> Iterator[bytes]:
    """The items, in order, as encoded write sets of at most about `max_bytes` of keys and values
    each (one item at least): a take's writes to one partition can be more than the producer's
    request size (1 MiB), and a changelog record over it would crash the agent."""
    chunk: list[tuple[bytes, bytes | None]] = []
    size = 0
    for key, value in items:
        weight = len(key) + len(value or b"")
        if chunk and size + weight > max_bytes:
            yield encode_write_set(chunk)
            chunk, size = [], 0
        chunk.append((key, value))
        size += weight
    if chunk:
        yield encode_write_set(chunk)


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
        """The partition's RocksDB (opened if it is not yet): the Rdict every write lands in."""
        return self._db_for_partition(partition)

    def partition_db_path(self, partition: int) -> str:
        """Where the partition's RocksDB lives, opened first so that it exists (`streams.index_process`)."""
        self._db_for_partition(partition)
        return str(self.partition_path(partition))

    def scan(self, partition: int, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Items of one partition with lo <= key < hi, in key order (without Faust's offset key)."""
        db = self._db_for_partition(partition)
        for key, value in range_items(db, lo, hi, same_prefix=bool(self.prefix_bytes)):
            if key != self.offset_key:
                yield key, value

    def _set(self, key: bytes, value: bytes | None) -> None:
        """A batch key applies its write set to the current event's partition; others as Faust does."""
        if key.startswith(BATCH_PREFIX) and value is not None:
            event = current_event()
            assert event is not None, "tables are written inside a stream"
            write_batch(self._db_for_partition(event.message.partition), decode_write_set(value))
            return
        super()._set(key, value)

    def _del(self, key: bytes) -> None:
        event = current_event()
        if event is None:
            super()._del(key)
            return
        self._db_for_partition(event.message.partition).delete(key)

    def apply_changelog_batch(self, batch: Iterable[EventT], to_key: Callable[[Any], Any],
                              to_value: Callable[[Any], Any]) -> None:
        """Recovery and standbys: apply each batch record's write set in changelog order, then
        remember the offsets, as Faust's own store does for plain records."""
        plain: list[EventT] = []
        for event in batch:
            msg = event.message
            if msg.key is not None and msg.key.startswith(BATCH_PREFIX):
                if plain:
                    super().apply_changelog_batch(plain, to_key, to_value)
                    plain = []
                if msg.value is not None:
                    write_batch(self._db_for_partition(msg.partition), decode_write_set(msg.value))
                self.set_persisted_offset(msg.tp, msg.offset)
            else:
                plain.append(event)
        if plain:
            super().apply_changelog_batch(plain, to_key, to_value)


STORES["neardup-rocks"] = "streams.stores:PrefixRocksStore"


class RangeScan(Protocol):
    """A table store that can scan a key range of one partition (`PrefixRocksStore`)."""

    def scan(self, partition: int, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]: ...


def scan_partition(table: TableT[bytes, bytes], partition: int, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
    """Items of one partition of a table with lo <= key < hi, in key order; the table's store must
    be a `RangeScan` (Faust types `table.data` as a plain mapping)."""
    return cast(RangeScan, table.data).scan(partition, lo, hi)


class PartitionView:
    """The `neardup_core.store.base.Store` protocol over one partition of a Faust table. Reads go to
    the partition's RocksDB itself: every write reaches it at once (`PrefixRocksStore._set`), and
    Faust's table layer adds nothing to a read of one partition but its cost."""

    def __init__(self, table: TableT[bytes, bytes], partition: int) -> None:
        self.table = table
        self.partition = partition
        self._db = cast(PrefixRocksStore, table.data).partition_db(partition)

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self._db.get(key)
        return value

    def put(self, key: bytes, value: bytes) -> None:
        self.table[key] = value

    def delete(self, key: bytes) -> None:
        del self.table[key]

    def write_many(self, items: Iterable[tuple[bytes, bytes | None]]) -> None:
        """The items as changelog records of at most about `WRITE_SET_BYTES` each, in order (the
        table's store must be a `PrefixRocksStore`). A crash between two of them leaves the first
        applied, which a replay of the input redoes."""
        self.write_encoded(write_sets(items))

    def write_encoded(self, sets: Iterable[bytes]) -> None:
        """Encoded write sets (`write_sets`), each as one changelog record, in order."""
        for value in sets:
            self.table[batch_key()] = value

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        return scan_partition(self.table, self.partition, lo, hi)
