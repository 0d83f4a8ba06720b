"""Removing expired versions from the index: their entries, their records, and them from group summaries.

A version expires when its first fetch (the `fetched_at_ms` its record keeps, what ranks it) lies
before the retention horizon (`neardup_core/dedup/retention.py`). Every record written while a
retention is on has an expiry key dated by that fetch (`keys.expiry_key`), so the versions to remove
are the front of one time-ordered key range, and a sweep takes at most `limit` of them at a time:

1. The expiry key goes, whatever it finds (a record already gone, or re-dated by an earlier fetch,
   which wrote its own key).
2. For each table the version was probed in (`probes_for` of its record), its entry goes, if this
   store holds it (a worker's partition holds the buckets it owns, not all of them).
3. Where the group kept a summary naming the version, the summary is rebuilt from the group's
   remaining entries (`bucket.drop_from_summary`, as for a version its URL let go), or dropped when
   fewer than two remain: members the removed version dominated become undominated again, so a later
   better page revises them.
4. The version record goes.

The expired entries are spread over every bucket (key order is bucket order, not time order), so they
are deleted one key at a time; only the expiry keys are time-ordered. All of it goes through the
store's writes, so a worker's deletes travel in its changelog record like any write.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice

from neardup_core.index.bucket import decode_page, drop_from_summary, probes_for
from neardup_core.index.keys import expired_range, expiry_of_key, version_record_key
from neardup_core.index.tables import TableDesign
from neardup_core.store.base import Store


@dataclass(frozen=True, slots=True)
class IndexExpiry:
    """What one sweep removed: version records and index entries."""

    versions: int = 0
    entries: int = 0


def expire_versions(store: Store, design: TableDesign, horizon_ms: int, limit: int) -> IndexExpiry:
    """Remove up to `limit` versions first fetched before `horizon_ms`, oldest first (steps above)."""
    versions = entries = 0
    for key, _ in list(islice(store.scan(*expired_range(horizon_ms)), limit)):
        store.delete(key)  # 1.
        fetched_at_ms, vid = expiry_of_key(key)
        raw = store.get(version_record_key(vid))
        if raw is None:
            continue
        page = decode_page(raw)
        if page.fetched_at_ms != fetched_at_ms:
            continue
        for probe in probes_for(design, page):  # 2.
            if store.get(probe.entry_key) is None:
                continue
            store.delete(probe.entry_key)
            entries += 1
            drop_from_summary(store, probe.group, vid)  # 3.
        store.delete(version_record_key(vid))  # 4.
        versions += 1
    return IndexExpiry(versions, entries)
