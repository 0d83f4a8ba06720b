"""Writes held over a store, read back as if applied, and written in one batch."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from neardup_core.store.memory import MemoryStore
from neardup_core.store.overlay import Overlay

KEYS = st.binary(min_size=1, max_size=3)


@given(base=st.dictionaries(KEYS, st.binary(max_size=2)),
       writes=st.lists(st.tuples(KEYS, st.none() | st.binary(max_size=2)), max_size=20),
       lo=KEYS, hi=KEYS)
def test_reads_see_pending_writes_and_commit_applies_them_at_once(base: dict[bytes, bytes],
                                                                 writes: list[tuple[bytes, bytes | None]],
                                                                 lo: bytes, hi: bytes) -> None:
    store, expected = MemoryStore(), dict(base)
    store.write_many(base.items())
    overlay = Overlay(store)
    for key, value in writes:
        if value is None:
            overlay.delete(key)
            expected.pop(key, None)
        else:
            overlay.put(key, value)
            expected[key] = value
    assert list(overlay.scan(lo, hi)) == sorted((k, v) for k, v in expected.items() if lo <= k < hi)
    assert all(overlay.get(k) == expected.get(k) for k, _ in writes)
    assert dict(store.items()) == base, "nothing reaches the store before commit"
    batches: list[list[tuple[bytes, bytes | None]]] = []
    store.write_many = lambda items: (batches.append(list(items)), MemoryStore.write_many(store, batches[-1]))  # type: ignore[method-assign]
    overlay.commit()
    assert dict(store.items()) == expected
    assert len(batches) == (1 if writes else 0), "one write for everything pending"
    assert len(overlay) == 0
