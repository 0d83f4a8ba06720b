"""A fetched page after fingerprinting: what the decision stage gets, and its page version."""

from __future__ import annotations

from dataclasses import dataclass

from neardup_core.dedup.version import PageVersion
from neardup_core.wire import Positional


@dataclass(frozen=True, slots=True)
class Fetch(Positional, keep=8, base64=("minhash", "minima")):
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
    minhash: bytes | None = None
    shingles: int | None = None
    minima: bytes | None = None

    @property
    def version(self) -> PageVersion | None:
        if self.skip_reason is not None or self.text_sha256 is None:
            return None
        return PageVersion(self.url, self.importance, self.fetched_at_ms, self.body_sha256, self.text_sha256,
                           self.simhash, self.minhash, self.shingles, self.minima)
