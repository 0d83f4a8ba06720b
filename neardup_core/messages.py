"""The message schemas of the product contract, one place for each.

`Decision` is a line of `dedup.decisions` (and of `neardup scan --out`), `HostSignal` a line of
`frontier.host-signals` (and of `scan --hosts`), `Rejection` a line of `pages.rejected` (and of
`scan --rejects`). The input event is validated in `ingest/event.py`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

Verdict = Literal["unique", "exact_duplicate", "near_duplicate", "skipped"]
VERDICTS: tuple[Verdict, ...] = ("unique", "exact_duplicate", "near_duplicate", "skipped")


@dataclass(frozen=True, slots=True)
class Decision:
    """The dedup decision for one URL; the one with the highest `revision` wins. `distance` is the
    SimHash distance of the match when it is exact or within k bits (else None), `jaccard` the MinHash
    Jaccard estimate when the match shares an LSH band with an estimate >= J (else None)."""

    url: str
    host: str
    verdict: Verdict
    duplicate_of: str | None
    distance: int | None
    simhash: str | None
    text_sha256: str | None
    body_sha256: str | None
    reason: str
    revision: int
    complete: bool
    fetched_at: str
    decided_at: str
    jaccard: float | None = None

    def to_json(self) -> bytes:
        return orjson.dumps(self)  # orjson writes dataclasses as asdict would, without the copy

    @classmethod
    def from_json(cls, raw: bytes | str) -> Decision:
        return cls(**orjson.loads(raw))

    def verdict_key(self) -> tuple[Any, ...]:
        """What a decision says, without when it was said: equal for equal decisions."""
        return (self.url, self.verdict, self.duplicate_of, self.distance, self.jaccard)


@dataclass(frozen=True, slots=True)
class UrlRule:
    """A learned URL normalisation rule, e.g. `ignore_query_param` for a session id."""

    kind: str
    param: str | None
    support: int
    confidence: float
    example: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "param": self.param, "support": self.support,
               "confidence": round(self.confidence, 4)}
        if self.example is not None:
            out["example"] = self.example
        return out


@dataclass(frozen=True, slots=True)
class HostSignal:
    """Per-host trap signal for the crawl frontier (compacted by host; the last one wins).

    `penalty`, `budget_factor` and `url_rules` are the host's cumulative state in every signal; the
    counts are a window's when `window_start` is set, else the host's. `revision` numbers the host's
    signals from 1 and only grows; a signal sent again (after a crash) keeps its number, so a frontier
    keeps the signal with the highest revision per host (0: from a version that did not number them)."""

    host: str
    window_start: str | None
    window_end: str | None
    pages: int
    exact_duplicates: int
    near_duplicates: int
    same_host_duplicates: int
    dup_ratio: float
    penalty: float
    budget_factor: float
    url_rules: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    revision: int = 0

    def to_json(self) -> bytes:
        return orjson.dumps(self)  # orjson writes dataclasses as asdict would, without the copy

    @classmethod
    def from_json(cls, raw: bytes | str) -> HostSignal:
        return cls(**orjson.loads(raw))


@dataclass(frozen=True, slots=True)
class Rejection:
    """A bad input event with the reason and its original bytes (base64)."""

    error: str
    stage: str
    topic: str | None
    partition: int | None
    offset: int | None
    raw_b64: str

    def to_json(self) -> bytes:
        return orjson.dumps(self)  # orjson writes dataclasses as asdict would, without the copy

    @classmethod
    def from_json(cls, raw: bytes | str) -> Rejection:
        return cls(**orjson.loads(raw))

    @classmethod
    def of(cls, error: str, stage: str, topic: str | None, partition: int | None, offset: int | None,
           raw: bytes) -> Rejection:
        return cls(error, stage, topic, partition, offset, base64.b64encode(raw).decode())
