"""A page version: one body fetched at one URL, as the index stores and the rule compares it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from neardup_core.keys import VERSION_ID_BYTES
from neardup_core.rank import Rank, rank_of


@dataclass(frozen=True)
class PageVersion:
    """A URL's body; `fetched_at_ms` is the first fetch of this body at this URL, so recrawls of
    an unchanged body keep the version's rank. Its version id and rank are computed once (the
    index step reads both on every probe of the page)."""

    url: str
    importance: float
    fetched_at_ms: int
    body_sha256: str
    text_sha256: str
    simhash: int | None

    @cached_property
    def version_id(self) -> bytes:
        return version_id(self.url, self.body_sha256)

    @cached_property
    def rank(self) -> Rank:
        return rank_of(self.url, self.importance, self.fetched_at_ms, self.body_sha256)

    def to_list(self) -> list[Any]:
        return [self.url, self.importance, self.fetched_at_ms, self.body_sha256, self.text_sha256, self.simhash]

    @classmethod
    def from_list(cls, data: list[Any]) -> PageVersion:
        return cls(*data)

    def with_fetched_at(self, fetched_at_ms: int) -> PageVersion:
        return PageVersion(self.url, self.importance, fetched_at_ms, self.body_sha256, self.text_sha256,
                           self.simhash)


def version_id(url: str, body_sha256: str) -> bytes:
    """A fixed-width id of (URL, body)."""
    return hashlib.sha256(f"{url}\0{body_sha256}".encode()).digest()[:VERSION_ID_BYTES]


@dataclass(frozen=True, slots=True)
class Fetch:
    """One fetched page after fingerprinting: what the decision stage gets.

    `skip_reason` is set for pages that are not deduplicated (error status, not HTML, no main
    text); those carry no text digest and no SimHash.
    """

    url: str
    host: str
    fetched_at_ms: int
    importance: float
    body_sha256: str
    text_sha256: str | None
    simhash: int | None
    skip_reason: str | None = None

    @property
    def version(self) -> PageVersion | None:
        if self.skip_reason is not None or self.text_sha256 is None:
            return None
        return PageVersion(self.url, self.importance, self.fetched_at_ms, self.body_sha256, self.text_sha256,
                           self.simhash)

    def to_list(self) -> list[Any]:
        return [self.url, self.host, self.fetched_at_ms, self.importance, self.body_sha256, self.text_sha256,
                self.simhash, self.skip_reason]

    @classmethod
    def from_list(cls, data: list[Any]) -> Fetch:
        return cls(*data)
