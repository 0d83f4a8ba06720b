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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.minhash import jaccard as jaccard_estimate
from neardup_core.fingerprint.minhash import shared_band
from neardup_core.fingerprint.simhash import hamming
from neardup_core.index.tables import BandDesign
from neardup_core.messages import Verdict

NO_DISTANCE = 65
"""Sorts after every distance: a match without a SimHash distance within k."""


@dataclass(frozen=True, slots=True)
class Match:
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

    def to_list(self) -> list[Any]:
        out = [self.candidate.to_list(), self.exact, self.distance]
        return out if self.jaccard is None else [*out, self.jaccard]

    @classmethod
    def from_list(cls, data: list[Any]) -> Match:
        return cls(PageVersion.from_list(data[0]), data[1], data[2], data[3] if len(data) > 3 else None)


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
    if a is None:
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
