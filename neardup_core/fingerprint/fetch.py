"""A fetched page after fingerprinting: what the decision stage gets, and its page version."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from neardup_core.dedup.version import PageVersion


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
    minhash: bytes | None = None
    shingles: int | None = None
    minima: bytes | None = None

    @property
    def version(self) -> PageVersion | None:
        if self.skip_reason is not None or self.text_sha256 is None:
            return None
        return PageVersion(self.url, self.importance, self.fetched_at_ms, self.body_sha256, self.text_sha256,
                           self.simhash, self.minhash, self.shingles, self.minima)

    def to_list(self) -> list[Any]:
        out = [self.url, self.host, self.fetched_at_ms, self.importance, self.body_sha256, self.text_sha256,
               self.simhash, self.skip_reason]
        if self.minhash is None and self.minima is None:
            return out
        out.append(None if self.minhash is None else base64.b64encode(self.minhash).decode("ascii"))
        if self.minima is None:
            return out
        return [*out, self.shingles, base64.b64encode(self.minima).decode("ascii")]

    @classmethod
    def from_list(cls, data: list[Any]) -> Fetch:
        url, host, fetched_at_ms, importance, body, text, simhash, skip_reason = data[:8]
        signature = base64.b64decode(data[8]) if len(data) > 8 and data[8] is not None else None
        shingles = data[9] if len(data) > 10 else None
        minima = base64.b64decode(data[10]) if len(data) > 10 and data[10] is not None else None
        return cls(url, host, fetched_at_ms, importance, body, text, simhash, skip_reason, signature, shingles, minima)
