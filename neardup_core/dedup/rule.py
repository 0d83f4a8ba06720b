"""The decision rule.

A page is a duplicate if and only if a better-ranked page of another URL has the same text or
body digest (`exact_duplicate`) or a SimHash within k bits (`near_duplicate`); `duplicate_of`
names the best such page: exact matches first, then the smallest distance, then the best rank.
Otherwise it is `unique`. The rule depends only on the set of pages and their ranks, so any
arrival order reaches the same decisions once every page is in: a later, better page revises
the decisions of the worse pages it matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.simhash import hamming
from neardup_core.messages import Verdict


@dataclass(frozen=True, slots=True)
class Match:
    """A page that `page` duplicates, and how."""

    candidate: PageVersion
    exact: bool
    distance: int

    @property
    def order(self) -> tuple[Any, ...]:
        """Lower is a better `duplicate_of`."""
        return (not self.exact, self.distance, self.candidate.rank)

    def to_list(self) -> list[Any]:
        return [self.candidate.to_list(), self.exact, self.distance]

    @classmethod
    def from_list(cls, data: list[Any]) -> Match:
        return cls(PageVersion.from_list(data[0]), data[1], data[2])


def better_ranked(candidate: PageVersion, page: PageVersion) -> bool:
    """Whether `candidate` ranks better than `page`: only such a page can be what `page` duplicates."""
    return candidate.rank < page.rank


def match_of(page: PageVersion, other: PageVersion, k: int) -> Match | None:
    """How `page` relates to `other` regardless of rank: an exact or near match, or None."""
    if other.url == page.url:
        return None  # a page is never a duplicate of its own URL
    distance = hamming(page.simhash, other.simhash) if page.simhash is not None and other.simhash is not None \
        else None
    if other.text_sha256 == page.text_sha256 or other.body_sha256 == page.body_sha256:
        return Match(other, True, distance or 0)
    if distance is not None and distance <= k:
        return Match(other, False, distance)
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


def reason_of(page: PageVersion, best: Match | None, k: int) -> str:
    if best is None:
        return f"no better-ranked page within {k} bits or with an equal digest"
    other = best.candidate
    if best.exact:
        what = "body" if other.body_sha256 == page.body_sha256 else "main text"
        return f"same {what} as a better-ranked page"
    return f"main text within {best.distance} of {k} bits of a better-ranked page"
