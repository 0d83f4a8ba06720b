"""The decision rule.

A page is a duplicate if and only if a better-ranked page of another URL has the same text or
body digest (`exact_duplicate`) or is near it (`near_duplicate`): a SimHash within k bits, or, with
MinHash on (a design with `BandDesign` bands), a MinHash signature that shares an LSH band with the
page's (all rows of the band equal) and whose Jaccard estimate is at least J. `duplicate_of` names
the best such page (`Match.order`): exact matches first, then SimHash matches by the smallest
distance, then MinHash-only matches by the highest Jaccard estimate, then the best rank.
Otherwise it is `unique`. The rule depends only on the set of pages and their ranks, so any
arrival order reaches the same decisions once every page is in: a later, better page revises
the decisions of the worse pages it matches.

Partial copies (`partial_of`, with a containment index) are a second relation beside the verdict,
which they never change. Page A holds page B (`partial_match`) when they are of different URLs and
main texts, are not duplicates of each other (`match_of` is None, whatever their ranks), A has more
distinct shingles than B (ties: the larger text digest; so of two pages at most one holds the other,
and a copy holds its original, not the reverse), their size classes are within `MAX_SIZE_CLASSES`,
they share a containment band (an equal 32-bit minimum in one of its one-row bands), and the
containment estimate of B in A is at least the threshold. A's `partial_of` names, per main text it
holds, that text's best-ranked page of another URL, and of those the `MAX_PARTIALS` best
(`Partial.order`: the highest containment, then the best rank). It depends only on the set of pages,
so it too is order-independent: a later original revises the copy. An exact duplicate's is empty
(its canonical, `duplicate_of`, has the same text and says it).

With a cap on a containment bucket's texts (`ContainmentDesign.bucket_texts`, K), a shared band counts only
while its bucket (the band and the shared minimum) is not saturated: A holds B when, besides the above, some
band where their minima are equal has a bucket into which at most K distinct main texts were inserted over
the whole input. A bucket's texts only grow, so this too depends on the set of pages alone; a pair found
through a bucket that saturates later is withdrawn unless another of its buckets stays under the cap
(`Partial.bands`, `named_partials`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.containment import (
    MAX_SIZE_CLASSES,
    containment_from_jaccard,
    size_class,
)
from neardup_core.fingerprint.minhash import jaccard as jaccard_estimate
from neardup_core.fingerprint.minhash import shared_band
from neardup_core.fingerprint.simhash import hamming
from neardup_core.index.tables import BandDesign, TableDesign
from neardup_core.messages import Verdict
from neardup_core.wire import Positional

NO_DISTANCE = 65
"""Sorts after every distance: a match without a SimHash distance within k."""


@dataclass(frozen=True, slots=True)
class Match(Positional):
    """A page that `page` duplicates, and how: `exact` (equal digests; `distance` is then the SimHash
    distance or 0), else `distance` when the SimHash is within k bits (None when it is not) and
    `jaccard`, the Jaccard estimate, when the two share an LSH band with an estimate >= J (None when
    not, and for exact matches). The candidate is kept without its signature."""

    candidate: PageVersion
    exact: bool
    distance: int | None
    jaccard: float | None = None

    @property
    def order(self) -> tuple[Any, ...]:
        """Lower is a better `duplicate_of`: exact, then the smallest SimHash distance, then the
        highest Jaccard estimate, then the best rank."""
        return (not self.exact, NO_DISTANCE if self.distance is None else self.distance, -(self.jaccard or 0.0),
                self.candidate.rank)


MAX_PARTIALS = 3
"""A decision's `partial_of` names at most this many pages."""
ALL_BANDS = (1 << 64) - 1
"""A band mask naming every containment band (a `Partial` written before masks: it is never withdrawn)."""


@dataclass(frozen=True, slots=True)
class Partial(Positional):
    """A page whose main text a page holds to the degree `containment` (the estimate of its share of the
    candidate's shingles), and the containment bands where the two have an equal minimum (`bands`, bit b for
    band b): the buckets that find the pair, which stands while one of them is not saturated. The candidate
    is kept without its sketches."""

    candidate: PageVersion
    containment: float
    bands: int = ALL_BANDS

    @property
    def order(self) -> tuple[Any, ...]:
        """Lower is named first: the highest containment, then the best rank."""
        return (-self.containment, self.candidate.rank)


def holds(a: PageVersion, b: PageVersion) -> bool:
    """Whether `a` is the larger of two pages (more distinct shingles; ties: the larger text digest), the
    one that can hold the other: of two pages exactly one is, whatever their ranks and arrival."""
    return (b.shingles or 0, b.text_sha256) < (a.shingles or 0, a.text_sha256)


def shared_minimum(a: PageVersion, b: PageVersion, bands: int) -> int | None:
    """The first containment band where two pages have an equal minimum and their size classes are within
    `MAX_SIZE_CLASSES` (where the probe of either finds the other), or None."""
    if a.minima is None or b.minima is None or a.shingles is None or b.shingles is None:
        return None
    if abs(size_class(a.shingles) - size_class(b.shingles)) > MAX_SIZE_CLASSES:
        return None
    shared = shared_minima(a, b, bands)
    return (shared & -shared).bit_length() - 1 if shared else None


def shared_minima(a: PageVersion, b: PageVersion, bands: int) -> int:
    """The mask of the containment bands (bit b: band b) where two pages have an equal minimum: the buckets
    they share (0 when either has no minima)."""
    if a.minima is None or b.minima is None:
        return 0
    n = min(bands, len(a.minima) // 4, len(b.minima) // 4)
    equal = np.frombuffer(a.minima, "<u4", n) == np.frombuffer(b.minima, "<u4", n)
    return int.from_bytes(np.packbits(equal, bitorder="little").tobytes(), "little")


def containment_estimate(a: PageVersion, b: PageVersion, bits: int = 8) -> float:
    """The containment estimate of B's shingles in A's: from the Jaccard estimate of the two signatures and
    the distinct shingle counts (`containment.containment_from_jaccard`). The containment minima only find
    candidates: they are over longer shingles (`containment.MINIMA_SHINGLE_SIZE`)."""
    assert a.minhash is not None and b.minhash is not None and a.shingles is not None and b.shingles is not None
    return containment_from_jaccard(jaccard_estimate(a.minhash, b.minhash, bits), a.shingles, b.shingles)


def partial_match(page: PageVersion, other: PageVersion, design: TableDesign) -> Partial | None:
    """`other` as a page `page` holds (the rule in the module docstring), or None."""
    partial = design.partial
    if partial is None or other.identity == page.identity or other.text_sha256 == page.text_sha256:
        return None
    if not holds(page, other) or page.shingles is None or other.shingles is None or page.minima is None \
            or other.minima is None or abs(size_class(page.shingles) - size_class(other.shingles)) > MAX_SIZE_CLASSES:
        return None
    # the cheap tests first: the index step asks this of every group its probe reads
    estimate = containment_estimate(page, other, design.lsh.bits if design.lsh is not None else 8)
    if estimate < partial.containment:
        return None
    bands = shared_minima(page, other, partial.bands)
    if not bands or match_of(page, other, design.k, design.lsh) is not None:
        return None
    return Partial(other.without_minhash(), estimate, bands)


def merge_partials(held: Iterable[Partial], new: Iterable[Partial]) -> tuple[Partial, ...]:
    """Two lists as one, one per main text (its best-ranked page), in `Partial.order`: a merge that gives the
    same result in any order and grouping, so answers and revisions may come in any order. Every text is
    kept, not only the named ones: a named one may be withdrawn (`named_partials`). (One text's pages have
    one minimum per band, so one band mask.)"""
    per_text: dict[str, Partial] = {}
    for p in [*held, *new]:
        seen = per_text.get(p.candidate.text_sha256)
        if seen is None or p.candidate.rank < seen.candidate.rank:
            per_text[p.candidate.text_sha256] = p
    return tuple(sorted(per_text.values(), key=lambda p: p.order))


def named_partials(partials: Iterable[Partial], dead: int = 0) -> tuple[Partial, ...]:
    """What `partial_of` names: the `MAX_PARTIALS` best of the pages held through a band whose bucket is not
    saturated (`dead`: the mask of the page's saturated bands)."""
    return tuple(sorted((p for p in partials if p.bands & ~dead), key=lambda p: p.order)[:MAX_PARTIALS])


def better_ranked(candidate: PageVersion, page: PageVersion) -> bool:
    """Whether `candidate` ranks better than `page`: only such a page can be what `page` duplicates."""
    return candidate.rank < page.rank


def band_jaccard(a: PageVersion, b: PageVersion, lsh: BandDesign | None) -> float | None:
    """The Jaccard estimate of two pages when their signatures share a band and it is >= J, else None."""
    if lsh is None or a.minhash is None or b.minhash is None or len(a.minhash) != len(b.minhash):
        return None
    if shared_band(a.minhash, b.minhash, lsh.bands, lsh.rows, lsh.bits) is None:
        return None
    estimate = jaccard_estimate(a.minhash, b.minhash, lsh.bits)
    return estimate if estimate >= lsh.jaccard else None


def match_of(page: PageVersion, other: PageVersion, k: int, lsh: BandDesign | None = None) -> Match | None:
    """How `page` relates to `other` regardless of rank: an exact or near match, or None."""
    if other.identity == page.identity:
        return None  # a page is never a duplicate of its own URL (by its identity)
    distance = hamming(page.simhash, other.simhash) if page.simhash is not None and other.simhash is not None \
        else None
    if other.text_sha256 == page.text_sha256 or other.body_sha256 == page.body_sha256:
        return Match(other.without_minhash(), True, distance or 0)
    within = distance if distance is not None and distance <= k else None
    jaccard = band_jaccard(page, other, lsh)
    if within is not None or jaccard is not None:
        return Match(other.without_minhash(), False, within, jaccard)
    return None


def better(a: Match | None, b: Match | None) -> Match | None:
    """The better `duplicate_of` of two candidate matches."""
    if a is None or a is b:
        return b
    if b is None:
        return a
    return a if a.order <= b.order else b


def verdict_of(best: Match | None) -> Verdict:
    if best is None:
        return "unique"
    return "exact_duplicate" if best.exact else "near_duplicate"


def reason_of(page: PageVersion, best: Match | None, k: int, lsh: BandDesign | None = None) -> str:
    if best is None:
        minhash = f" or sharing a MinHash band with Jaccard >= {lsh.jaccard:.2f}" if lsh is not None else ""
        return f"no better-ranked page within {k} bits{minhash} or with an equal digest"
    other = best.candidate
    if best.exact:
        what = "body" if other.body_sha256 == page.body_sha256 else "main text"
        return f"same {what} as a better-ranked page"
    if best.distance is not None:
        return f"main text within {best.distance} of {k} bits of a better-ranked page"
    assert lsh is not None and best.jaccard is not None
    return f"main text shares a MinHash band with a better-ranked page, Jaccard {best.jaccard:.3f} >= {lsh.jaccard:.2f}"
