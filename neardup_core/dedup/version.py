"""A page version: one body fetched at one URL, as the index stores and the rule compares it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property, lru_cache

import msgpack

from neardup_core.dedup.rank import Rank, rank_of
from neardup_core.hosts.urls import url_identity
from neardup_core.index.keys import VERSION_ID_BYTES
from neardup_core.wire import Positional


@dataclass(frozen=True)
class PageVersion(Positional):
    """A URL's body; `fetched_at_ms` is the first fetch of this body at this URL, so recrawls of
    an unchanged body keep the version's rank. Its version id and rank are computed once (the
    index step reads both on every probe of the page). `minhash` is the page's b-bit MinHash
    signature when MinHash is on (`neardup_core/fingerprint/minhash.py`), else None; `shingles` and
    `minima` its distinct shingle count and containment minima (`neardup_core/fingerprint/containment.py`)
    when the design has a containment index, else None."""

    url: str
    importance: float
    fetched_at_ms: int
    body_sha256: str
    text_sha256: str
    simhash: int | None
    minhash: bytes | None = None
    shingles: int | None = None
    minima: bytes | None = None

    @cached_property
    def identity(self) -> str:
        """The URL's identity (`url_identity`): what "the same URL" means; `url` stays as received."""
        return url_identity(self.url)

    @cached_property
    def version_id(self) -> bytes:
        return version_id(self.identity, self.body_sha256)

    @cached_property
    def rank(self) -> Rank:
        return rank_of(self.url, self.importance, self.fetched_at_ms, self.body_sha256)

    @cached_property
    def packed(self) -> bytes:
        """`to_list()` in msgpack: the version as the index stores it (its record, its place in a group's
        summary), made once per object: in the stream a page's record is written in every index partition
        holding one of its tables, and one call's steps share the page's object."""
        return msgpack.packb(self.to_list(), use_bin_type=True)

    def with_fetched_at(self, fetched_at_ms: int) -> PageVersion:
        return PageVersion(self.url, self.importance, fetched_at_ms, self.body_sha256, self.text_sha256,
                           self.simhash, self.minhash, self.shingles, self.minima)

    def without_minhash(self) -> PageVersion:
        """The version without its signature and containment sketch: what a `Match` names (a decision
        needs neither of the page it names, and the URL state is JSON). Made once per version, with the
        identity, id and rank already computed (they are the same): the index step names one stored
        version in many matches."""
        if self.minhash is None and self.minima is None and self.shingles is None:
            return self
        return self._bare

    @cached_property
    def _bare(self) -> PageVersion:
        bare = PageVersion(self.url, self.importance, self.fetched_at_ms, self.body_sha256, self.text_sha256,
                           self.simhash)
        for name in ("identity", "version_id", "rank"):  # cached_property values, if computed
            if name in self.__dict__:
                bare.__dict__[name] = self.__dict__[name]
        return bare


@lru_cache(maxsize=1 << 16)
def version_id(url: str, body_sha256: str) -> bytes:
    """A fixed-width id of (URL identity, body): two spellings of one URL (`url_identity`) share it."""
    return hashlib.sha256(f"{url_identity(url)}\0{body_sha256}".encode()).digest()[:VERSION_ID_BYTES]
