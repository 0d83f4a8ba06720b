"""Pigeonhole table designs for finding 64-bit fingerprints within k bits.

Split the 64 bits into b blocks. Two fingerprints within k bits differ in at most k blocks, so
at least b - k blocks are equal. A design keeps one table per choice of b - k blocks (C(b, k)
tables); a table's bucket key is those blocks, moved to the front of a permuted fingerprint.
Two fingerprints within k bits share the bucket of at least one table, so probing every table
and confirming candidates by full Hamming distance finds exactly the stored fingerprints within
k bits.

Cost per probe: T bucket scans, and about T * N / 2**key_bits random candidates for N stored
fingerprints (`expected_candidates`). The seed design (k = 3, 4 blocks of 16 bits) has 4 tables
with 16 key bits: cheap to write, but about N / 16384 candidates per probe. Manku et al.'s
6-choose-3 design has 20 tables with 31 to 33 key bits: five times the writes, and about
N / 1.1e8 candidates, which stays flat to billions of pages.

With MinHash on, a design also has LSH bands (`BandDesign`): the signature's first bands * rows rows
cut into bands of `rows` rows, each band one more table (ids from `BAND_TABLE_BASE`), keyed by a hash
of its rows. Two pages share a band when all its rows are equal, so they share that band table's
bucket; candidates are confirmed by the Jaccard estimate of the whole signatures (>= `jaccard`). The
probability that two pages whose rows agree with probability s share a band is
1 - (1 - s**rows)**bands (`band_probability`), the usual S-curve.

A design may also have a containment index (`ContainmentDesign`, with MinHash on): one-row bands over
32-bit minima of their own permutations (`fingerprint/containment.py`), one table each, whose entries
are keyed by the page's size class, so that a small page B inside a large page A (low Jaccard, high
containment of B in A) shares a bucket with A with probability 1 - (1 - J)**bands and a probe reads
only pages within a few size classes of its own (the reason datasketch's LSH Ensemble partitions by
set size). Candidates are confirmed by the containment estimate (>= `containment`).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from functools import cached_property

from neardup_core.index.keys import (
    BAND_BUCKET_BYTES,
    BAND_TABLE_BASE,
    CONTAINMENT_TABLE_BASE,
    MAX_BANDS,
    MAX_CONTAINMENT_BANDS,
    shared_prefix_bytes,
)

MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class BandDesign:
    """LSH bands over a b-bit MinHash signature of `bands * rows` rows, and the Jaccard estimate
    (at least `jaccard`) that confirms a page sharing a band."""

    bands: int
    rows: int
    jaccard: float
    bits: int = 8

    def __post_init__(self) -> None:
        if not 1 <= self.bands <= MAX_BANDS:
            raise ValueError(f"bands must be 1 to {MAX_BANDS}, got {self.bands}")
        if not 1 <= self.rows <= 32:
            raise ValueError(f"rows must be 1 to 32, got {self.rows}")
        if not 0.0 < self.jaccard <= 1.0 or abs(self.jaccard * 100 - round(self.jaccard * 100)) > 1e-9:
            raise ValueError(f"jaccard must be a multiple of 0.01 in (0, 1], got {self.jaccard}")
        if self.bits not in (8, 16):
            raise ValueError(f"bits must be 8 or 16, got {self.bits}")

    @property
    def permutations(self) -> int:
        """Rows of the signature."""
        return self.bands * self.rows

    @property
    def name(self) -> str:
        bits = "" if self.bits == 8 else f"b{self.bits}"
        return f"l{self.bands}x{self.rows}{bits}-j{round(self.jaccard * 100):d}"

    def table(self, band: int) -> int:
        return BAND_TABLE_BASE + band

    @property
    def tables(self) -> range:
        return range(BAND_TABLE_BASE, BAND_TABLE_BASE + self.bands)

    def band_probability(self, agreement: float) -> float:
        """Probability that two signatures whose rows agree with probability `agreement` share a band."""
        return 1.0 - (1.0 - agreement ** self.rows) ** self.bands


MAX_BUCKET_TEXTS = 254
"""The largest cap on a containment bucket's texts: its count is one byte, and K + 1 marks it saturated."""


@dataclass(frozen=True)
class ContainmentDesign:
    """The containment index: `bands` one-row bands (32-bit minima), the containment estimate (at least
    `containment`, in hundredths) that confirms a page B found in a page A as a partial copy, and the cap
    on a bucket's distinct texts (`bucket_texts`, K; 0: none): a bucket into which more than K main texts
    were ever inserted is saturated, read no more, and finds no pair (`index/bucket.py`)."""

    bands: int
    containment: float
    bucket_texts: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.bands <= MAX_CONTAINMENT_BANDS:
            raise ValueError(f"containment bands must be 1 to {MAX_CONTAINMENT_BANDS}, got {self.bands}")
        if not 0.0 < self.containment <= 1.0 or abs(self.containment * 100 - round(self.containment * 100)) > 1e-9:
            raise ValueError(f"containment must be a multiple of 0.01 in (0, 1], got {self.containment}")
        if not 0 <= self.bucket_texts <= MAX_BUCKET_TEXTS:
            raise ValueError(f"bucket texts must be 0 (no cap) to {MAX_BUCKET_TEXTS}, got {self.bucket_texts}")

    @property
    def name(self) -> str:
        cap = f"-s{self.bucket_texts}" if self.bucket_texts else ""
        return f"p{self.bands}-c{round(self.containment * 100):d}{cap}"

    def table(self, band: int) -> int:
        return CONTAINMENT_TABLE_BASE + band

    @property
    def tables(self) -> range:
        return range(CONTAINMENT_TABLE_BASE, CONTAINMENT_TABLE_BASE + self.bands)

    def find_probability(self, jaccard: float) -> float:
        """Probability that two pages of Jaccard similarity `jaccard` share a one-row band."""
        return 1.0 - (1.0 - jaccard) ** self.bands


@dataclass(frozen=True)
class TableDesign:
    """b blocks over 64 bits and one table per choice of b - k blocks as the bucket key."""

    k: int
    blocks: int
    lsh: BandDesign | None = None
    """The LSH bands of the MinHash signatures, when MinHash is on."""
    partial: ContainmentDesign | None = None
    """The containment index (partial copies), when MinHash is on."""

    def __post_init__(self) -> None:
        if not 0 <= self.k < self.blocks <= 64:
            raise ValueError(f"a design needs 0 <= k < blocks <= 64, got k={self.k}, blocks={self.blocks}")
        if math.comb(self.blocks, self.k) > BAND_TABLE_BASE:
            raise ValueError(f"a design has at most {BAND_TABLE_BASE} tables, k={self.k} and blocks={self.blocks} "
                             f"give {math.comb(self.blocks, self.k)}")

    def with_bands(self, lsh: BandDesign | None, partial: ContainmentDesign | None = None) -> TableDesign:
        return TableDesign(self.k, self.blocks, lsh, partial)

    @cached_property
    def block_bits(self) -> tuple[tuple[int, int], ...]:
        """(shift, width) of each block, most significant first; widths differ by at most one."""
        base, extra = divmod(64, self.blocks)
        widths = [base + (1 if i < extra else 0) for i in range(self.blocks)]
        out, top = [], 64
        for w in widths:
            top -= w
            out.append((top, w))
        return tuple(out)

    @cached_property
    def tables(self) -> tuple[tuple[int, ...], ...]:
        """For each table, the block order of its permutation: key blocks first."""
        out = []
        for key in itertools.combinations(range(self.blocks), self.blocks - self.k):
            rest = tuple(i for i in range(self.blocks) if i not in key)
            out.append(key + rest)
        return tuple(out)

    @property
    def table_count(self) -> int:
        return len(self.tables)

    @cached_property
    def key_bits(self) -> tuple[int, ...]:
        """Bucket key width of each table."""
        return tuple(sum(self.block_bits[i][1] for i in order[: self.blocks - self.k]) for order in self.tables)

    @property
    def name(self) -> str:
        near = f"k{self.k}-b{self.blocks}-t{self.table_count}"
        bands = near if self.lsh is None else f"{near}-{self.lsh.name}"
        return bands if self.partial is None else f"{bands}-{self.partial.name}"

    @cached_property
    def _moves(self) -> tuple[tuple[tuple[int, int, int], ...], ...]:
        """For each table, (shift, mask, destination shift) of each block in its order."""
        out = []
        for order in self.tables:
            moves, top = [], 64
            for i in order:
                shift, width = self.block_bits[i]
                top -= width
                moves.append((shift, (1 << width) - 1, top))
            out.append(tuple(moves))
        return tuple(out)

    def permute(self, fp: int, table: int) -> int:
        """The fingerprint with the table's blocks in its order, key blocks in the top bits."""
        out = 0
        for shift, mask, top in self._moves[table]:
            out |= ((fp >> shift) & mask) << top
        return out

    def unpermute(self, permuted: int, table: int) -> int:
        out, top = 0, 64
        for i in self.tables[table]:
            shift, width = self.block_bits[i]
            top -= width
            out |= ((permuted >> top) & ((1 << width) - 1)) << shift
        return out

    def bucket(self, fp: int, table: int) -> int:
        """The bucket key of a fingerprint in one table."""
        return self.permute(fp, table) >> (64 - self.key_bits[table])

    def buckets(self, fp: int) -> list[int]:
        """`bucket(fp, t)` for every table t."""
        return [self.bucket(fp, t) for t in range(self.table_count)]

    @property
    def prefix_bytes(self) -> int:
        """The leading key bytes every bucket of this design shares: what the store's prefix
        Bloom filters hash (`keys.shared_prefix_bytes` of the narrowest table)."""
        near = shared_prefix_bytes(min(self.key_bits, default=64))
        return near if self.lsh is None else min(near, BAND_BUCKET_BYTES)

    def expected_candidates(self, stored: int) -> float:
        """Random (non-near) candidates a probe confirms, summed over tables, for `stored` entries."""
        return sum(stored / 2.0**bits for bits in self.key_bits)


SEED_DESIGN = TableDesign(k=3, blocks=4)


def design_named(name: str) -> TableDesign:
    """Parse `TableDesign.name` ("k3-b6-t20"; the table count is implied; with bands, e.g.
    "k3-b6-t20-l16x4-j50": 16 bands of 4 rows, Jaccard >= 0.50; with a containment index, e.g.
    "k3-b6-t20-l16x4-j50-p48-c50-s16": 48 one-row bands, containment >= 0.50, at most 16 texts per bucket;
    without "-s16", no cap)."""
    m = re.fullmatch(r"k(\d+)-b(\d+)(?:-t\d+)?(?:-l(\d+)x(\d+)(?:b(\d+))?-j(\d+))?"
                     r"(?:-p(\d+)-c(\d+)(?:-s(\d+))?)?", name)
    if not m:
        raise ValueError(f"not a table design name: {name!r} (expected e.g. 'k3-b6-t20')")
    lsh = BandDesign(int(m[3]), int(m[4]), int(m[6]) / 100, int(m[5] or 8)) if m[3] else None
    partial = ContainmentDesign(int(m[7]), int(m[8]) / 100, int(m[9] or 0)) if m[7] else None
    return TableDesign(k=int(m[1]), blocks=int(m[2]), lsh=lsh, partial=partial)


def choose_design(k: int, expected_pages: int, *, max_tables: int = 64, candidate_weight: float = 1.0) -> TableDesign:
    """The design with the lowest probe cost for k bits and a collection of `expected_pages`.

    Cost = table count (bucket scans and writes per page) + candidate_weight * expected random
    candidates per probe; designs with more than `max_tables` tables are not considered.
    """
    best: tuple[float, TableDesign] | None = None
    for blocks in range(k + 1, 65):
        if math.comb(blocks, k) > max_tables:
            if blocks > k + 1:
                break
            continue
        design = TableDesign(k=k, blocks=blocks)
        cost = design.table_count + candidate_weight * design.expected_candidates(expected_pages)
        if best is None or cost < best[0]:
            best = (cost, design)
    if best is None:
        raise ValueError(f"no design with at most {max_tables} tables for k={k}")
    return best[1]
