"""An in-memory `Store`: for tests, `scan` without a state dir, and the hosts of a scan without `--hosts`."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator


class MemoryStore:
    """A dict with a sorted key list."""

    def __init__(self) -> None:
        self._data: dict[bytes, bytes] = {}
        self._keys: list[bytes] = []

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        if key not in self._data:
            bisect.insort(self._keys, key)
        self._data[key] = value

    def delete(self, key: bytes) -> None:
        if self._data.pop(key, None) is not None:
            del self._keys[bisect.bisect_left(self._keys, key)]

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        start, end = bisect.bisect_left(self._keys, lo), bisect.bisect_left(self._keys, hi)
        for key in self._keys[start:end]:
            yield key, self._data[key]

    def write_many(self, items: Iterable[tuple[bytes, bytes | None]]) -> None:
        for key, value in items:
            if value is None:
                self.delete(key)
            else:
                self.put(key, value)

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every item, in key order."""
        for key in self._keys:
            yield key, self._data[key]

    def __len__(self) -> int:
        return len(self._data)
