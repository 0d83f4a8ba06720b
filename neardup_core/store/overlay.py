"""Writes held in memory over a `Store`, read back as if applied, then written in one batch.

The index applies a batch of probes with one write, and the gather and hosts agents write the
state changes of one record as one: later steps of a batch must see what earlier ones wrote (two
copies of a page in one batch share a bucket), so reads go through the overlay and `commit` hands
every write (deletes included) to the store's `write_many` at once.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

from neardup_core.store.base import Store


class Overlay:
    """A `Store` that holds its writes until `commit`."""

    def __init__(self, base: Store) -> None:
        self.base = base
        self._pending: dict[bytes, bytes | None] = {}
        self._keys: list[bytes] = []

    def get(self, key: bytes) -> bytes | None:
        if key in self._pending:
            return self._pending[key]
        return self.base.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self._hold(key, value)

    def delete(self, key: bytes) -> None:
        self._hold(key, None)

    def write_many(self, items: Iterable[tuple[bytes, bytes | None]]) -> None:
        new: list[bytes] = []
        for key, value in items:
            if key not in self._pending:
                new.append(key)
            self._pending[key] = value
        if new:  # one sort of two runs (another overlay's writes come in key order), not an insort each
            self._keys = sorted(self._keys + new)

    def _hold(self, key: bytes, value: bytes | None) -> None:
        if key not in self._pending:
            bisect.insort(self._keys, key)
        self._pending[key] = value

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The base's items merged with the pending ones (a pending value wins, a pending delete
        hides the key), in key order; the base's own iterator when nothing is pending in the range
        (most buckets a take reads)."""
        start, end = bisect.bisect_left(self._keys, lo), bisect.bisect_left(self._keys, hi)
        if start == end:
            return self.base.scan(lo, hi)
        return self._merged(self._keys[start:end], self.base.scan(lo, hi))

    def _merged(self, keys: list[bytes], theirs: Iterator[tuple[bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
        mine = iter(keys)
        a, b = next(mine, None), next(theirs, None)
        while a is not None or b is not None:
            if b is None or (a is not None and a <= b[0]):
                assert a is not None
                if b is not None and a == b[0]:
                    b = next(theirs, None)
                value = self._pending[a]
                if value is not None:
                    yield a, value
                a = next(mine, None)
            else:
                yield b
                b = next(theirs, None)

    def __len__(self) -> int:
        return len(self._pending)

    def pending(self) -> list[tuple[bytes, bytes | None]]:
        """The writes held, in key order (None: a delete)."""
        return [(key, self._pending[key]) for key in self._keys]

    def commit(self) -> None:
        """Write everything pending to the base store in one batch."""
        if self._pending:
            self.base.write_many(self.pending())
        self._pending, self._keys = {}, []
