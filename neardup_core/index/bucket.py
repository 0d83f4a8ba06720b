"""The index step: probe one bucket for a page, insert the page, and report what it found.

A probe names one bucket of one table. Looking it up returns the best better-ranked match there
(the page's answer for that table) and a notice for each worse-ranked page that must learn a
better copy exists. Everything it writes is idempotent, so replays and duplicate deliveries
change nothing and re-send at most what was sent before.

The work is bounded however large a cluster grows. Within a bucket, the versions of one
fingerprint (near tables) or one digest (exact tables) form a **group**, whose members all match
one another. A group keeps a short summary: its members in rank order up to and including the
best member of a second URL (`summary_of`). Every member past that is *dominated*: a better
page of another URL matches it, and it has been told so. So a probe reads one summary per group,
not every copy, and revises only the summary's members it newly dominates (the versions of the
group's best URL, a handful), marking each one's entry with the dominator's version id; a replay
of the dominator re-sends to the entries it marked. A page dominated in its group has a
`duplicate_of` that may itself be a duplicate: following the chain ends at the canonical.

LSH band tables (MinHash on) work the same way: a band bucket holds the pages whose band hash is
the probe's, and a group there is one MinHash signature (`table | band hash | signature hash`), so
its members match one another (identical signatures share every band, with an estimate of 1) and
every member relates to a probing page alike (the same estimate, the same bands), as the members
of a near group have one fingerprint. Candidates there are confirmed by the rule (`match_of`):
sharing the band's rows and a Jaccard estimate >= J.

Containment tables (a design with a `ContainmentDesign`) hold every page under one 32-bit minimum per
one-row band and its size class; a group there is one main text (`0xE0 | band | minimum | size class |
text hash`), whose members are its copies, in rank order in the summary as elsewhere. A probe reads
the size classes within `MAX_SIZE_CLASSES` of its page's and, per group, relates its page to the
group's best member of another URL (`partial_match`, both ways): a page it holds joins its answer's
`partials`; the group's undominated members that hold it are told by a notice carrying a `Partial`
(from the first containment band the two share, `first_shared_containment`). The duplicate rule does
not look at these tables (two duplicates always meet in a digest, near or band table).

Two pages that meet in several tables exchange one notice, from the first table they share
under that table's own test (`first_shared_table`: equal digests; a near bucket only when the two
are within k bits; a band only when the band's rows are equal and the estimate >= J), which is
where the probe of the later of the two finds the other. Probe-then-insert on a bucket must be
serialised, which a single writer per bucket (one partition, one agent) gives; then of two pages
within k bits (or sharing a band), whichever is inserted second sees the first in a shared bucket.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple, TypeVar

import mmh3
import msgpack

from neardup_core.dedup.rule import (
    Match,
    Partial,
    band_jaccard,
    better,
    better_ranked,
    match_of,
    merge_partials,
    partial_match,
    shared_minimum,
)
from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.containment import MAX_SIZE_CLASSES, minimum_of, size_class
from neardup_core.fingerprint.minhash import band_bytes, shared_band, signature_bytes
from neardup_core.fingerprint.simhash import hamming
from neardup_core.index.keys import (
    BODY_TABLE,
    CONTAINMENT_BUCKET_BYTES,
    TEXT_TABLE,
    VERSION_ID_BYTES,
    band_bucket_range,
    band_group_key,
    containment_bucket_range,
    containment_group_key,
    containment_read_from,
    containment_read_to,
    exact_bucket_range,
    exact_group_key,
    expiry_key,
    group_of_key,
    group_range,
    is_band_table,
    is_containment_table,
    near_bucket_range,
    near_group_key,
    permuted_of_key,
    version_record_key,
)
from neardup_core.index.tables import BandDesign, TableDesign
from neardup_core.store.base import Store
from neardup_core.store.overlay import Overlay
from neardup_core.wire import Positional, positional, positional_from_list, positional_to_list

T = TypeVar("T")


@positional()
class Probe(NamedTuple):
    """Look up and insert `page` in one bucket, [lo, hi) of table `table`, as a member of `group`;
    with `remove`, take the page's entry out of that bucket instead (its URL let the version go:
    `removals_for`). A removal travels as a probe so it reaches the partition that holds the
    bucket, after the probes that inserted the entry. (A named tuple, as `Answer`: a page makes one
    of each per table, and a frozen dataclass takes 3x as long to make.)"""

    table: int
    lo: bytes
    hi: bytes
    group: bytes
    page: PageVersion
    remove: bool = False

    def to_list(self) -> list[Any]:  # replaced on first use by the code @positional makes
        return positional_to_list(self)

    @classmethod
    def from_list(cls, data: list[Any]) -> Probe:
        return positional_from_list(cls, data)

    @property
    def entry_key(self) -> bytes:
        return self.group + self.page.version_id


@positional()
class Answer(NamedTuple):
    """What some tables say about a page: its best better-ranked match there, if any, the pages it holds
    found there (containment tables; `merge_partials` of them), and the containment bands whose bucket of
    the page is saturated (`dead`, bit b for band b)."""

    url: str
    version_id: bytes
    round_ms: int
    tables: tuple[int, ...]
    best: Match | None
    partials: tuple[Partial, ...] = ()
    dead: int = 0

    def to_list(self) -> list[Any]:  # replaced on first use by the code @positional makes
        return positional_to_list(self)

    @classmethod
    def from_list(cls, data: list[Any]) -> Answer:
        return positional_from_list(cls, data)


@dataclass(frozen=True, slots=True)
class Notice(Positional):
    """Tell the page `version_id` of `url` that `match` is a better copy of it (it is worse-ranked), that
    it holds `partial` (a containment table found the two; `match` is then None), or that its buckets of
    the containment bands `dead` (a mask, bit b for band b) are saturated (both None)."""

    url: str
    version_id: bytes
    match: Match | None
    partial: Partial | None = None
    dead: int = 0

    @property
    def said(self) -> tuple[Any, ...]:
        """What a containment notice says, to send it once per index step however many bands found it."""
        return (self.version_id, self.partial.candidate.version_id if self.partial else None, self.dead)


def has_bands(lsh: BandDesign | None, page: PageVersion) -> bool:
    """Whether a page is probed in the band tables: MinHash on and a signature of the design's length."""
    return lsh is not None and page.minhash is not None and \
        len(page.minhash) == signature_bytes(lsh.permutations, lsh.bits)


def has_containment(design: TableDesign, page: PageVersion) -> bool:
    """Whether a page is probed in the containment tables: the design has them and the page has the
    containment minima (of the design's band count) and its shingle count."""
    return design.partial is not None and page.minima is not None and page.shingles is not None and \
        len(page.minima) >= 4 * design.partial.bands


def table_ids(design: TableDesign, page: PageVersion) -> list[int]:
    """The tables a page is probed in: every near table if it has a SimHash, every band table if it
    has a MinHash signature (and the design has bands), every containment table if it has containment
    minima (and the design has them), and both digests."""
    near = list(range(design.table_count)) if page.simhash is not None else []
    bands = list(design.lsh.tables) if design.lsh is not None and has_bands(design.lsh, page) else []
    partial = list(design.partial.tables) if design.partial is not None and has_containment(design, page) else []
    return near + bands + partial + [TEXT_TABLE, BODY_TABLE]


SATURATED = b"\x01"
"""The value of a saturated containment bucket's key (its lower bound), before the version that saturated it."""
EVERY_CLASS = range(0, 255)
"""Every size class of a containment bucket (`size_class` is far below 255)."""


def size_classes(page: PageVersion) -> range:
    """The size classes a containment probe of `page` reads: its own, and `MAX_SIZE_CLASSES` either side."""
    own = size_class(page.shingles or 0)
    return range(max(0, own - MAX_SIZE_CLASSES), own + MAX_SIZE_CLASSES + 1)


def band_hash(lsh: BandDesign, signature: bytes, band: int) -> int:
    """The 32-bit bucket key of one band of a signature: a hash of its rows."""
    return mmh3.hash(band_bytes(signature, band, lsh.rows, lsh.bits), seed=band, signed=False)


def signature_hash(signature: bytes) -> int:
    """A 64-bit hash of a whole signature: the group of its copies within a band bucket."""
    return int(mmh3.hash64(signature, signed=False)[0])


def probes_for(design: TableDesign, page: PageVersion) -> list[Probe]:
    out = []
    sig_hash = signature_hash(page.minhash) if page.minhash is not None else 0
    for table in table_ids(design, page):
        if is_containment_table(table):
            assert design.partial is not None and page.minima is not None and page.shingles is not None
            band = table - design.partial.tables.start
            minimum = minimum_of(page.minima, band)
            lo, hi = containment_bucket_range(band, minimum, size_classes(page))
            group = containment_group_key(band, minimum, size_class(page.shingles), page.text_sha256)
        elif is_band_table(table):
            assert design.lsh is not None and page.minhash is not None
            key = band_hash(design.lsh, page.minhash, table - design.lsh.tables.start)
            lo, hi = band_bucket_range(table, key)
            group = band_group_key(table, key, sig_hash)
        elif table == TEXT_TABLE or table == BODY_TABLE:
            digest = page.text_sha256 if table == TEXT_TABLE else page.body_sha256
            lo, hi = exact_bucket_range(table, digest)
            group = exact_group_key(table, digest)
        else:
            assert page.simhash is not None
            permuted = design.permute(page.simhash, table)
            bits = design.key_bits[table]
            lo, hi = near_bucket_range(table, permuted >> (64 - bits), bits)
            group = near_group_key(table, permuted)
        out.append(Probe(table, lo, hi, group, page))
    return out


def removals_for(design: TableDesign, page: PageVersion) -> list[Probe]:
    """The removals of a version's entries: one per table it was probed in (`probes_for`)."""
    return [Probe(p.table, p.lo, p.hi, p.group, p.page, remove=True) for p in probes_for(design, page)]


def encode_page(page: PageVersion) -> bytes:
    return page.packed


DECODED_CACHE = 1 << 14
"""Stored versions and summaries kept decoded: a bucket's members are read again by every probe that
lands there, and a decoded version computes its identity, id and rank once (`PageVersion`)."""


@lru_cache(maxsize=DECODED_CACHE)
def decode_page(raw: bytes) -> PageVersion:
    return PageVersion.from_list(msgpack.unpackb(raw, raw=False))


def encode_summary(members: list[PageVersion]) -> bytes:
    """A msgpack array of the members' `to_list()`, from their packed forms (`PageVersion.packed`)."""
    return _ARRAY.pack_array_header(len(members)) + b"".join(m.packed for m in members)


_ARRAY = msgpack.Packer(use_bin_type=True)


def decode_summary(raw: bytes) -> list[PageVersion]:
    return list(_decode_summary(raw))


@lru_cache(maxsize=DECODED_CACHE)
def _decode_summary(raw: bytes) -> tuple[PageVersion, ...]:
    return tuple(PageVersion.from_list(m) for m in msgpack.unpackb(raw, raw=False))


def summary_of(members: list[PageVersion]) -> list[PageVersion]:
    """A group's members in rank order up to and including the best member of a second URL:
    every member after it is dominated (the best member, or that one, is better, of another URL,
    and matches it), and a probe needs none of them."""
    out: list[PageVersion] = []
    for member in sorted(members, key=lambda m: m.rank):
        out.append(member)
        if member.identity != out[0].identity:
            break
    return out


def undominated(summary: list[PageVersion]) -> list[PageVersion]:
    """The members no better member of another URL matches: the best URL's versions in the summary."""
    return [m for m in summary if m.identity == summary[0].identity]


def first_shared_table(design: TableDesign, a: PageVersion, b: PageVersion) -> int | None:
    """The first table (digests, then near tables, then bands, in order) where two pages share a
    bucket and that table's test matches them: a near table only when they are within k bits, a
    band only when its rows are equal and the Jaccard estimate is >= J. None when they do not match.

    Two matching pages usually meet in several tables; only the probe of this one sends the
    notice, so a worse page hears of a better one once, not once per table. It must be a table
    whose probe finds the other page: two pages in one near bucket more than k bits apart are not
    found there (the probe skips them), though they may match through a band.
    """
    if a.text_sha256 == b.text_sha256:
        return TEXT_TABLE
    if a.body_sha256 == b.body_sha256:
        return BODY_TABLE
    if a.simhash is not None and b.simhash is not None and hamming(a.simhash, b.simhash) <= design.k:
        for table in range(design.table_count):
            if design.bucket(a.simhash, table) == design.bucket(b.simhash, table):
                return table
    lsh = design.lsh
    if lsh is not None and has_bands(lsh, a) and has_bands(lsh, b) and band_jaccard(a, b, lsh) is not None:
        assert a.minhash is not None and b.minhash is not None
        band = shared_band(a.minhash, b.minhash, lsh.bands, lsh.rows, lsh.bits)
        if band is not None:
            return lsh.table(band)
    return None


def first_shared_containment(design: TableDesign, a: PageVersion, b: PageVersion) -> int | None:
    """The first containment table where two pages share a bucket and both read each other's size class:
    where the probe of the later of the two finds the other, and the one that sends its notice."""
    if design.partial is None:
        return None
    band = shared_minimum(a, b, design.partial.bands)
    return None if band is None else design.partial.table(band)


class Pairs:
    """What the rule says of two pages, asked once per pair in an index step: a page meets the same
    candidate in many of its tables (a copy shares both digests, every near table and every band), and
    `match_of` and `first_shared_table` depend on the two pages only. Keyed by the objects' ids, which
    stay unique while the memo holds the objects."""

    def __init__(self, design: TableDesign, k: int) -> None:
        self.design, self.k = design, k
        self._said: dict[tuple[str, int, int], tuple[PageVersion, PageVersion, Any]] = {}

    def match(self, page: PageVersion, other: PageVersion) -> Match | None:
        """`match_of(page, other)` under the design's k and bands."""
        return self._once("match", page, other, lambda: match_of(page, other, self.k, self.design.lsh))

    def first_shared_table(self, page: PageVersion, other: PageVersion) -> int | None:
        """`first_shared_table(design, page, other)`."""
        return self._once("table", page, other, lambda: first_shared_table(self.design, page, other))

    def _once(self, what: str, page: PageVersion, other: PageVersion, ask: Callable[[], T]) -> T:
        key = (what, id(page), id(other))
        seen = self._said.get(key)
        if seen is None:
            seen = self._said[key] = (page, other, ask())
        said: T = seen[2]
        return said


def _scope(probe: Probe, whole: bool = False) -> tuple[bool, tuple[bytes, bytes], int]:
    """Whether the probe's candidates are all of its range (an exact, band or containment table: no
    Hamming filter), the key range it reads (its group in an exact table, its bucket in a near or band
    table, its size classes of its bucket in a containment table, or with `whole` all of them), and its
    page's permuted fingerprint (0 but in near tables)."""
    if probe.table in (TEXT_TABLE, BODY_TABLE):
        return True, group_range(probe.group), 0
    if is_containment_table(probe.table):
        if whole:
            return True, (containment_read_from(probe.lo, EVERY_CLASS), containment_read_to(probe.lo, EVERY_CLASS)), 0
        return True, (containment_read_from(probe.lo, size_classes(probe.page)), probe.hi), 0
    if is_band_table(probe.table):
        return True, (probe.lo, probe.hi), 0
    return False, (probe.lo, probe.hi), permuted_of_key(probe.group)


def _candidate_groups(store: Store, probe: Probe, k: int, whole: bool = False
                      ) -> list[tuple[bytes, list[tuple[bytes, bytes]]]]:
    """The groups of the probe's bucket that can match its page: (group key, its items up to the
    first entry when the group has a summary, else all of them). Near groups are kept when their
    fingerprint is within k bits of the page's (Hamming distance is the same after permutation).

    A group with a summary (its key sorts first) is read no further: the scan starts again past
    the group, so a probe reads one record of a cluster of any size, not every copy's entry."""
    exact, (lo, hi), mine = _scope(probe, whole)
    groups: list[tuple[bytes, list[tuple[bytes, bytes]]]] = []
    skip: bytes | None = None
    start: bytes | None = lo
    while start is not None:
        scan_from, start = start, None
        for key, value in store.scan(scan_from, hi):
            group = group_of_key(key)
            if group == skip:
                continue
            summary = key == group
            if not exact and hamming(permuted_of_key(key), mine) > k:
                skip = group
            elif groups and groups[-1][0] == group:
                groups[-1][1].append((key, value))
            else:
                groups.append((group, [(key, value)]))
            if summary:  # the group's entries after it are not needed: seek past them
                skip, start = group, group_range(group)[1]
                break
    return groups


def _members(store: Store, group: bytes, items: list[tuple[bytes, bytes]]) -> list[PageVersion]:
    """A group's summary, or the pages of its entries when it has none (one entry, or none)."""
    if items and items[0][0] == group:
        return decode_summary(items[0][1])
    out = []
    for key, _ in items:
        raw = store.get(version_record_key(key[len(group):]))
        if raw is not None:
            out.append(decode_page(raw))
    return out


def group_members(store: Store, group: bytes) -> list[PageVersion]:
    """The pages of every entry of a group (not only its summary's)."""
    out = []
    for key, _ in store.scan(*group_range(group)):
        if len(key) == len(group) + VERSION_ID_BYTES:
            raw = store.get(version_record_key(key[len(group):]))
            if raw is not None:
                out.append(decode_page(raw))
    return out


def drop_from_summary(store: Store, group: bytes, vid: bytes) -> None:
    """Rebuild the group's summary without `vid` if it names it (its entry is already deleted), or drop
    it when fewer than two members remain: members the version dominated become undominated again,
    so a later better page revises them."""
    raw = store.get(group)
    if raw is None or all(m.version_id != vid for m in decode_summary(raw)):
        return
    members = group_members(store, group)
    if len(members) >= 2:
        store.put(group, encode_summary(summary_of(members)))
    else:
        store.delete(group)


def remove_entry(store: Store, probe: Probe) -> int:
    """Carry out a removal (`Probe.remove`): the page's entry in the probe's group goes, the group's
    summary forgets it, and so does the version record this store holds (with its expiry key, when a
    retention wrote one). Idempotent; the entries removed (0 or 1)."""
    vid = probe.page.version_id
    found = store.get(probe.entry_key) is not None
    if found:
        store.delete(probe.entry_key)
    record = store.get(version_record_key(vid))
    if record is not None:
        store.delete(expiry_key(decode_page(record).fetched_at_ms, vid))
        store.delete(version_record_key(vid))
    drop_from_summary(store, probe.group, vid)
    return int(found)


def probe_bucket(store: Store, probe: Probe, design: TableDesign, k: int,
                 records: dict[bytes, PageVersion] | None = None, horizon_ms: int | None = None,
                 window_ms: int | None = None, pairs: Pairs | None = None) -> tuple[Answer, list[Notice]]:
    """Look `probe.page` up in its bucket, insert it, and return its answer and the notices.

    0. With a cap on a containment bucket's texts: a saturated bucket, or one the page's main text
       saturates, answers only that (`_saturation`); the probe reads and writes nothing more.
    1. Every group that can match: its best better-ranked member of another URL is a candidate
       answer, and its undominated members that the page is better than and matches are told so
       (from the first table the two share).
    2. In the page's own group those members are now dominated: their entries are marked with
       the page's version id, and a replay of the page (its entry exists) re-sends to every
       entry marked so, since the first sending may have been lost with a crash.
    3. The page's version record (the earliest fetch wins), its entry and its group's summary
       are written.

    With a retention (`horizon_ms`, `index/expiry.py`), versions first fetched before the horizon
    are treated as gone before the sweep removes them: they match nothing (a group whose summary
    names one is read from all its entries), and a stored record that old, or older than the page
    by more than the window (`window_ms`: the URL's state let it go, while this partition's clock
    lags), is replaced by the page's (a body fetched again after its version expired is a new
    version); each record written gets its expiry key. `pairs`: the rule's answers for pairs met before
    in the same index step (`probe_batch` shares one).
    """
    page = probe.page
    vid = page.version_id
    best: Match | None = None
    notices: dict[bytes, Notice] = {}
    own_members: list[PageVersion] = []
    own_summarised = False  # own_members are the group's stored summary, as read
    marks: list[bytes] = []

    rule = pairs if pairs is not None else Pairs(design, k)

    def revise(other: PageVersion) -> None:
        if probe.table == rule.first_shared_table(page, other):
            back = rule.match(other, page)
            if back is not None:
                notices[other.version_id] = Notice(other.url, other.version_id, back)

    containment = is_containment_table(probe.table)
    partials: tuple[Partial, ...] = ()
    if containment and design.partial is not None and design.partial.bucket_texts:
        dead, groups = _saturation(store, probe, design, k, notices)  # 0.
        if dead:
            return Answer(page.url, vid, page.fetched_at_ms, (probe.table,), None, (), dead), list(notices.values())
        classes = size_classes(page)
        groups = [(group, items) for group, items in groups if group[CONTAINMENT_BUCKET_BYTES] in classes]
    else:
        groups = _candidate_groups(store, probe, k)
    for group, items in groups:  # 1.
        members = _members(store, group, items)
        summarised = bool(items) and items[0][0] == group
        if horizon_ms is not None and any(m.fetched_at_ms < horizon_ms for m in members):
            # expired, not swept yet: as if gone. A summary that names one may hide the members it
            # dominated, so the group's summary is taken from all its live entries, as the sweep will
            horizon = horizon_ms
            members = summary_of([m for m in group_members(store, group) if m.fetched_at_ms >= horizon])
            summarised = False
        if group == probe.group:
            own_members, own_summarised = members, summarised
        if containment:
            partials = merge_partials(partials, _relate_partials(design, probe, members, notices))
            continue
        open_to_notice = {m.version_id for m in undominated(members)} if members else set()
        for other in members:
            if other.version_id == vid or other.identity == page.identity:
                continue
            found = rule.match(page, other)
            if found is None:
                continue
            if better_ranked(other, page):
                best = better(best, found)
            elif other.version_id in open_to_notice and better_ranked(page, other):
                revise(other)
                if group == probe.group:
                    marks.append(other.version_id)

    existed = store.get(probe.entry_key)  # 2.
    if existed is not None:
        for key, value in store.scan(*group_range(probe.group)):
            if value == vid and len(key) == len(probe.group) + VERSION_ID_BYTES:
                raw = store.get(version_record_key(key[len(probe.group):]))
                if raw is not None:
                    revise(decode_page(raw))

    record_key = version_record_key(vid)  # 3.
    kept = records.get(vid) if records is not None else None
    if kept is None:
        stored = store.get(record_key)
        kept = decode_page(stored) if stored is not None else None
    expired = horizon_ms is not None and kept is not None and (
        kept.fetched_at_ms < horizon_ms
        or (window_ms is not None and kept.fetched_at_ms < page.fetched_at_ms - window_ms))
    if kept is None or kept.fetched_at_ms > page.fetched_at_ms or expired:
        if horizon_ms is not None:
            if kept is not None:
                store.delete(expiry_key(kept.fetched_at_ms, vid))
            store.put(expiry_key(page.fetched_at_ms, vid), b"")
        kept = page
        store.put(record_key, encode_page(page))
    if records is not None:
        records[vid] = kept
    writes: list[tuple[bytes, bytes]] = [(probe.group + m, vid) for m in marks]
    if existed is None:
        writes.append((probe.entry_key, b""))
    others = [m for m in own_members if m.version_id != vid]
    if others:
        summary = summary_of([*others, kept])
        if not (own_summarised and summary == own_members):  # a page the summary does not reach leaves it
            writes.append((probe.group, encode_summary(summary)))
    for key, value in writes:
        store.put(key, value)
    return Answer(page.url, vid, page.fetched_at_ms, (probe.table,), best, partials), list(notices.values())


def _relate_partials(design: TableDesign, probe: Probe, members: list[PageVersion],
                     notices: dict[bytes, Notice]) -> list[Partial]:
    """The probe's page against one containment group (one main text): the group's best member of another
    URL, if the page holds it; and a notice to each undominated member that holds the page, from the
    first containment table the two share (the members of one text relate to the page alike)."""
    page = probe.page
    ranked = sorted(members, key=lambda m: m.rank)
    out = []
    representative = next((m for m in ranked if m.identity != page.identity), None)
    if representative is not None:
        held = partial_match(page, representative, design)
        if held is not None:
            out.append(held)
    capped = design.partial is not None and design.partial.bucket_texts > 0
    for other in undominated(ranked) if ranked else []:
        if other.identity == page.identity:
            continue
        back = partial_match(other, page, design)
        # without a cap the first shared band always finds the pair; with one, that band may be saturated, so
        # every band that finds it tells (`probe_batch` sends what one step's bands say once)
        if back is not None and (capped or probe.table == first_shared_containment(design, page, other)):
            notices[other.version_id] = Notice(other.url, other.version_id, None, back)
    return out


def _saturation(store: Store, probe: Probe, design: TableDesign, k: int, notices: dict[bytes, Notice]
                ) -> tuple[int, list[tuple[bytes, list[tuple[bytes, bytes]]]]]:
    """Step 0 of `probe_bucket` with a cap K on a containment bucket's texts (`ContainmentDesign.bucket_texts`):
    the band's bit when the probe's bucket is saturated (the probe reads and writes nothing more), else 0 and
    the bucket's groups, of every size class (at most K: one per main text).

    A bucket is saturated once its key (the bucket's lower bound, `probe.lo`) holds `SATURATED` and the
    version that saturated it: the page whose main text would have been its (K+1)th. That page marks it and
    tells the undominated members of its K texts (`Notice.dead`: those that hold partial copies, or may
    later, through this band); a replay of that page tells them again, since a crash may have lost the first
    telling. A text counts from its first entry until its last one is removed (a URL letting the version go,
    `forget`, a retention) or for good once the bucket is saturated."""
    assert design.partial is not None
    bit = 1 << (probe.table - design.partial.tables.start)
    vid = probe.page.version_id
    marked = store.get(probe.lo)
    if marked is not None and marked[len(SATURATED):] != vid:
        return bit, []
    groups = _candidate_groups(store, probe, k, whole=True)
    if marked is None:
        if any(group == probe.group for group, _ in groups) or len(groups) < design.partial.bucket_texts:
            return 0, groups
        store.put(probe.lo, SATURATED + vid)
    for group, items in groups:
        for member in undominated(_members(store, group, items)):
            notices[member.version_id] = Notice(member.url, member.version_id, None, None, bit)
    return bit, []


def probe_batch(store: Store, probes: list[Probe], design: TableDesign, k: int, horizon_ms: int | None = None,
                window_ms: int | None = None, *, buffered: bool = False, pairs: Pairs | None = None
                ) -> tuple[list[Answer], list[Notice]]:
    """Apply probes in order with one write to the store: one answer per page version and round
    (its tables together), and every notice they cause; `horizon_ms` and `window_ms` as for
    `probe_bucket`. A removal (`Probe.remove`) answers nothing. `buffered`: `store` is an `Overlay` its
    caller made for this step and drops if the step raises (the index process's), so the probes write
    into it directly, not through one more overlay committed into it. `pairs`: the rule's answers to
    share with other batches of the same pages (the index partitions one index process steps together:
    a page meets a copy in every partition holding one of its tables); a new one by default."""
    overlay = store if buffered else Overlay(store)
    assert isinstance(overlay, Overlay), "a buffered store is an Overlay"
    answers: list[Answer] = []
    notices: list[Notice] = []
    records: dict[bytes, PageVersion] = {}  # the version records this batch read or wrote (a page has one per table)
    pairs = Pairs(design, k) if pairs is None else pairs
    told: set[tuple[Any, ...]] = set()  # what containment notices said: several bands find one pair
    for probe in probes:
        if probe.remove:
            remove_entry(overlay, probe)
            records.pop(probe.page.version_id, None)
            continue
        answer, found = probe_bucket(overlay, probe, design, k, records, horizon_ms, window_ms, pairs)
        answers.append(answer)
        for notice in found:
            if notice.match is None:
                if notice.said in told:
                    continue
                told.add(notice.said)
            notices.append(notice)
    if not buffered:
        overlay.commit()
    return merged_answers(answers), notices


def merged_answers(answers: Iterable[Answer]) -> list[Answer]:
    """One answer per page version and round: its tables together, its best match the better one
    (`better`), the pages it holds merged (`merge_partials`). An answer is "what some tables say about a
    page", so the answers of one page's tables, in one index step or from several index partitions (the
    tables of two partitions are never the same ones), put together say the same; the gather step then
    decodes and applies one answer per page instead of one per table or partition."""
    by_page: dict[tuple[bytes, int], list[Answer]] = {}
    for answer in answers:
        by_page.setdefault((answer.version_id, answer.round_ms), []).append(answer)
    return [_merged(same) for same in by_page.values()]


def _merged(answers: list[Answer]) -> Answer:
    """One page's answers as one: their tables in order, the best match, the partials merged."""
    if len(answers) == 1:
        return answers[0]
    first = answers[0]
    best: Match | None = None
    partials: tuple[Partial, ...] = ()
    dead = 0
    for answer in answers:
        best = better(best, answer.best)
        if answer.partials:
            partials = merge_partials(partials, answer.partials)
        dead |= answer.dead
    return Answer(first.url, first.version_id, first.round_ms, tuple(t for a in answers for t in a.tables), best,
                  partials, dead)


def versions_within(store: Store, probe: Probe, k: int) -> list[PageVersion]:
    """Every stored version in the probe's bucket within k bits of its page (or of its digest, or
    with its band hash), dominated ones included: what brute force would find there (for tests and
    benchmarks)."""
    out = []
    exact, (lo, hi), mine = _scope(probe)
    for key, _ in store.scan(lo, hi):
        group = group_of_key(key)
        if key == group or (not exact and hamming(permuted_of_key(key), mine) > k):
            continue
        raw = store.get(version_record_key(key[len(group):]))
        if raw is not None:
            out.append(decode_page(raw))
    return out
