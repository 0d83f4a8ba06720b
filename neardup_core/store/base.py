"""The ordered key-value store the index lives in: point reads and writes, bounded range scans.

The index needs only point writes and bounded range scans over byte keys in byte order, so
the same table logic runs on RocksDB (`rocks.py`), on a Faust table's partition store, or in memory
(`memory.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol


class Store(Protocol):
    def get(self, key: bytes) -> bytes | None: ...

    def put(self, key: bytes, value: bytes) -> None: ...

    def delete(self, key: bytes) -> None: ...

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Items with lo <= key < hi, in key order."""
        ...

    def write_many(self, items: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Put every item (a value None deletes its key), at once where the backend can: one
        RocksDB write batch, one changelog record of a worker's table."""
        ...
