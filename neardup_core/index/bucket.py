"""The index step: probe one bucket for a page, insert the page, and report what it found.

A probe names one bucket of one table. Looking it up returns the best better-ranked match
(the page's answer for that table) and one revision for each worse-ranked match (those pages
must learn that a better copy exists). Inserting is idempotent: an entry is keyed by table,
fingerprint and version, and keeps the earliest fetch time it has seen, so replays and
duplicate deliveries change nothing. Probe-then-insert on a bucket must be serialised, which a
single writer per bucket (one partition, one agent) gives; then of two pages within k bits,
whichever is inserted second sees the first in a shared bucket. Two pages that share several
buckets exchange one revision, from the first shared table (`first_shared_table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from neardup_core.dedup.rule import Match, better, better_ranked, match_of
from neardup_core.dedup.version import PageVersion
from neardup_core.index.keys import (
    BODY_TABLE,
    TEXT_TABLE,
    exact_bucket_range,
    exact_entry_key,
    near_bucket_range,
    near_entry_key,
)
from neardup_core.index.tables import TableDesign
from neardup_core.store.base import Store


@dataclass(frozen=True, slots=True)
class Probe:
    """Look up and insert `page` in one bucket: [lo, hi) of table `table`."""

    table: int
    lo: bytes
    hi: bytes
    entry_key: bytes
    page: PageVersion

    def to_list(self) -> list[Any]:
        return [self.table, self.lo, self.hi, self.entry_key, self.page.to_list()]

    @classmethod
    def from_list(cls, data: list[Any]) -> Probe:
        return cls(data[0], data[1], data[2], data[3], PageVersion.from_list(data[4]))


@dataclass(frozen=True, slots=True)
class Answer:
    """What one table says about a page: its best better-ranked match there, if any."""

    url: str
    version_id: bytes
    round_ms: int
    table: int
    best: Match | None

    def to_list(self) -> list[Any]:
        return [self.url, self.version_id, self.round_ms, self.table, self.best.to_list() if self.best else None]

    @classmethod
    def from_list(cls, data: list[Any]) -> Answer:
        return cls(data[0], data[1], data[2], data[3], Match.from_list(data[4]) if data[4] else None)


@dataclass(frozen=True, slots=True)
class Revision:
    """Tell the worse-ranked page `version_id` of `url` that `match` is a better copy of it."""

    url: str
    version_id: bytes
    match: Match

    def to_list(self) -> list[Any]:
        return [self.url, self.version_id, self.match.to_list()]

    @classmethod
    def from_list(cls, data: list[Any]) -> Revision:
        return cls(data[0], data[1], Match.from_list(data[2]))


def table_ids(design: TableDesign, page: PageVersion) -> list[int]:
    """The tables a page is probed in: every near table if it has a SimHash, and both digests."""
    near = list(range(design.table_count)) if page.simhash is not None else []
    return near + [TEXT_TABLE, BODY_TABLE]


def probes_for(design: TableDesign, page: PageVersion) -> list[Probe]:
    out = []
    vid = page.version_id
    for table in table_ids(design, page):
        if table == TEXT_TABLE or table == BODY_TABLE:
            digest = page.text_sha256 if table == TEXT_TABLE else page.body_sha256
            lo, hi = exact_bucket_range(table, digest)
            key = exact_entry_key(table, digest, vid)
        else:
            assert page.simhash is not None
            permuted = design.permute(page.simhash, table)
            bits = design.key_bits[table]
            lo, hi = near_bucket_range(table, permuted >> (64 - bits), bits)
            key = near_entry_key(table, permuted, vid)
        out.append(Probe(table, lo, hi, key, page))
    return out


def encode_entry(page: PageVersion) -> bytes:
    return orjson.dumps(page.to_list())


def decode_entry(raw: bytes) -> PageVersion:
    return PageVersion.from_list(orjson.loads(raw))


def first_shared_table(design: TableDesign, a: PageVersion, b: PageVersion) -> int | None:
    """The first table (digests, then near tables in order) where two pages share a bucket.

    Two matching pages usually meet in several tables; only the probe of this one sends the
    revision, so a worse page hears of a better one once, not once per table.
    """
    if a.text_sha256 == b.text_sha256:
        return TEXT_TABLE
    if a.body_sha256 == b.body_sha256:
        return BODY_TABLE
    if a.simhash is None or b.simhash is None:
        return None
    for table in range(design.table_count):
        if design.bucket(a.simhash, table) == design.bucket(b.simhash, table):
            return table
    return None


def probe_bucket(store: Store, probe: Probe, design: TableDesign, k: int) -> tuple[Answer, list[Revision]]:
    """Look `probe.page` up in its bucket, insert it, and return its answer and the revisions."""
    page = probe.page
    best: Match | None = None
    revisions: list[Revision] = []
    stored: PageVersion | None = None
    for key, raw in store.scan(probe.lo, probe.hi):
        other = decode_entry(raw)
        if key == probe.entry_key:
            stored = other
            continue
        found = match_of(page, other, k)
        if found is None:
            continue
        if better_ranked(other, page):
            best = better(best, found)
        elif probe.table == first_shared_table(design, page, other):
            back = match_of(other, page, k)
            assert back is not None
            revisions.append(Revision(other.url, other.version_id, back))
    # written even when present: a crash may have left the entry in the local store but not in
    # the changelog the store is recovered from elsewhere
    keep = stored if stored is not None and stored.fetched_at_ms <= page.fetched_at_ms else page
    store.put(probe.entry_key, encode_entry(keep))
    return Answer(page.url, page.version_id, page.fetched_at_ms, probe.table, best), revisions
