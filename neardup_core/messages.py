"""The message schemas of the product contract, one place for each.

`Decision` is a line of `dedup.decisions` (and of `neardup scan --out`), `HostSignal` a line of
`frontier.host-signals` (and of `scan --hosts`), `Rejection` a line of `pages.rejected` (and of
`scan --rejects`), made by `dead_letter`, which cuts it to the producer's limit. The input event
is validated in `ingest/event.py`.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field, replace
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

    @property
    def is_duplicate(self) -> bool:
        """An exact or near duplicate of a better-ranked page (`duplicate_of`): a copy to skip."""
        return self.verdict in ("exact_duplicate", "near_duplicate")

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


PRODUCER_REQUEST_BYTES = 1_000_000
"""The largest request the producer sends by default (Faust's `producer_max_request_size`, the
`max_request_size` aiokafka checks each record against before it sends it)."""
RECORD_HEADROOM_BYTES = 16_384
"""What a record costs beyond its key and value when the producer measures it: the record batch
header (61 bytes), the record's varints, and headers (none today; room for tracing ones)."""
DEFAULT_MAX_MESSAGE_BYTES = PRODUCER_REQUEST_BYTES - RECORD_HEADROOM_BYTES
"""A dead letter's key and encoded value together stay within this (`NEARDUP_MAX_MESSAGE_BYTES`)."""
MIN_MESSAGE_BYTES = 65_536
"""The smallest message limit allowed: the bounded error, source and key, and room for some raw bytes."""
MAX_ERROR_CHARS = 2000
"""An error text longer than this is cut (an exception's message can hold a whole input)."""
MAX_SOURCE_CHARS = 2000
"""A `topic` longer than this is cut (in `scan` it is a file path)."""
DEFAULT_MAX_KEY_BYTES = 8192
"""A dead letter's key longer than this is cut (the input key; a valid one is a URL within
`NEARDUP_MAX_URL_BYTES`, whose default this is)."""


@dataclass(frozen=True, slots=True)
class Rejection:
    """A bad input event: the reason, where it came from, and its original bytes (base64), cut when
    the whole dead letter would not fit the producer's limit (`dead_letter`). `raw_bytes` and
    `raw_sha256` are the full original's length and digest, so a cut one is still identified, and
    fetched again from its topic, partition and offset. Both are None in dead letters written before
    they existed."""

    error: str
    stage: str
    topic: str | None
    partition: int | None
    offset: int | None
    raw_b64: str
    raw_bytes: int | None = None
    raw_sha256: str | None = None

    def to_json(self) -> bytes:
        return orjson.dumps(self)  # orjson writes dataclasses as asdict would, without the copy

    @classmethod
    def from_json(cls, raw: bytes | str) -> Rejection:
        return cls(**orjson.loads(raw))

    @classmethod
    def of(cls, error: str, stage: str, topic: str | None, partition: int | None, offset: int | None,
           raw: bytes, *, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> Rejection:
        """The dead letter's value without a key (`dead_letter`)."""
        return dead_letter(error, stage, topic, partition, offset, raw, max_bytes=max_bytes).rejection


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A `pages.rejected` record as it is sent: `len(key or b"") + len(value)` is within the limit
    it was cut to."""

    key: bytes | None
    value: bytes
    rejection: Rejection


def dead_letter(error: str, stage: str, topic: str | None, partition: int | None, offset: int | None,
                raw: bytes, *, key: bytes | None = None, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                max_key_bytes: int = DEFAULT_MAX_KEY_BYTES) -> DeadLetter:
    """The dead letter of `raw`, cut so its key and encoded value together take at most `max_bytes`.

    A dead letter the producer refuses is lost with the batch around it (issue 21), so the bounds
    are by construction: the error and topic are cut to a few thousand characters (at most 6 bytes
    each in JSON, as \\uXXXX) and made valid UTF-8, the key to `max_key_bytes`; what remains of
    `max_bytes` holds the base64 of the longest prefix of `raw` that fits. `raw_bytes` and
    `raw_sha256` describe the whole of `raw`."""
    check_limits(max_bytes, max_key_bytes)
    cut_key = None if key is None else key[:max_key_bytes]
    rejection = Rejection(_bounded(error, MAX_ERROR_CHARS), stage,
                          None if topic is None else _bounded(topic, MAX_SOURCE_CHARS), partition, offset, "",
                          len(raw), hashlib.sha256(raw).hexdigest())
    room = max_bytes - len(cut_key or b"") - len(rejection.to_json())
    prefix = raw[:max(0, room) // 4 * 3]  # base64 writes 4 ASCII bytes per 3, escaped by nothing in JSON
    if prefix:
        rejection = replace(rejection, raw_b64=base64.b64encode(prefix).decode())
    value = rejection.to_json()
    if len(cut_key or b"") + len(value) > max_bytes:  # impossible by the bounds above; never send one that fails
        raise AssertionError(f"dead letter of {len(value)} bytes over the limit of {max_bytes}")
    return DeadLetter(cut_key, value, rejection)


def check_limits(max_bytes: int, max_key_bytes: int) -> None:
    """Refuse limits a dead letter cannot be cut to: the bounded error, topic and key need room."""
    if max_bytes < MIN_MESSAGE_BYTES or not 0 <= max_key_bytes <= max_bytes // 8:
        raise ValueError(f"dead letters need max_bytes >= {MIN_MESSAGE_BYTES} and a key bound of at most an "
                         f"eighth of it (got {max_bytes}, {max_key_bytes})")


def _bounded(text: str, max_chars: int) -> str:
    """`text` as valid UTF-8 (a lone surrogate, which orjson refuses, becomes `?`), cut to
    `max_chars` characters with a note of its full length."""
    if len(text) > max_chars:
        note = f"... (cut, {len(text)} characters)"
        text = text[:max_chars - len(note)] + note
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text
