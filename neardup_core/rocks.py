"""A `Store` on RocksDB through rocksdict, with bounded range scans."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from rocksdict import Options, Rdict, ReadOptions


def range_items(db: Rdict, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
    """Items with lo <= key < hi in key order: one bounded iterator, no reads past `hi`."""
    read = ReadOptions()
    read.set_iterate_lower_bound(lo)
    read.set_iterate_upper_bound(hi)
    it = db.iter(read)
    it.seek(lo)
    while it.valid():
        yield it.key(), it.value()
        it.next()


def rocks_options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.increase_parallelism(2)
    return opts


class RocksStore:
    """One RocksDB directory holding raw byte keys and values."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = Rdict(str(self.path), options=rocks_options())

    @classmethod
    def wrap(cls, db: Rdict) -> RocksStore:
        """A store over an already open raw-mode Rdict (e.g. one of Faust's partition DBs)."""
        self = cls.__new__(cls)
        self.path = Path(db.path()) if hasattr(db, "path") else Path(".")
        self._db = db
        return self

    def get(self, key: bytes) -> bytes | None:
        return self._db.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self._db[key] = value

    def delete(self, key: bytes) -> None:
        del self._db[key]

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        return range_items(self._db, lo, hi)

    def flush(self) -> None:
        self._db.flush()

    def close(self) -> None:
        self._db.close()
