"""A memory store that counts what the index's containment probes read: the work the bucket cap bounds
(`ContainmentDesign.bucket_texts`), for tests and benchmarks."""

from __future__ import annotations

from collections.abc import Iterator

from neardup_core.index.keys import CONTAINMENT_KEY
from neardup_core.store.memory import MemoryStore


class ContainmentReadCounter(MemoryStore):
    """A memory store counting the items its scans of containment buckets yield (`read`)."""

    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        for item in super().scan(lo, hi):
            self.read += lo[0] == CONTAINMENT_KEY
            yield item
