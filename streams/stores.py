"""A Faust table store on rocksdict that can scan a key range of one partition.

Faust's store API has point reads and writes and full iteration only; the index needs one
bounded range scan per probe, so this store adds `scan(partition, lo, hi)` over the
partition's own RocksDB, and deletes from the current event's partition only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from faust.stores import STORES
from faust.stores.rocksdb import Store as RocksDBStore
from faust.streams import current_event

from neardup_core.rocks import range_items

# a URL with a host part: yarl URLs without one are falsy, and Faust would fall back to its default store
STORE_URL = "neardup-rocks://local"


class PrefixRocksStore(RocksDBStore):
    @property
    def basename(self) -> Path:
        """The table name, as for `rocksdb://` tables (Faust reads it from the URL's path)."""
        return Path(self.table_name)

    def scan(self, partition: int, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Items of one partition with lo <= key < hi, in key order (without Faust's offset key)."""
        for key, value in range_items(self._db_for_partition(partition), lo, hi):
            if key != self.offset_key:
                yield key, value

    def _del(self, key: bytes) -> None:
        event = current_event()
        if event is None:
            super()._del(key)
            return
        self._db_for_partition(event.message.partition).delete(key)


STORES["neardup-rocks"] = "streams.stores:PrefixRocksStore"


class PartitionView:
    """The `neardup_core.store.Store` protocol over one partition of a Faust table."""

    def __init__(self, table: Any, partition: int) -> None:
        self.table = table
        self.partition = partition

    def get(self, key: bytes) -> bytes | None:
        return self.table.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self.table[key] = value

    def delete(self, key: bytes) -> None:
        del self.table[key]

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        return self.table.data.scan(self.partition, lo, hi)
