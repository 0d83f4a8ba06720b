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
"""A decision's verdict: `unique` (the copy to keep), `exact_duplicate` (the same body or main text
as a better-ranked page), `near_duplicate` (within k bits, or over the Jaccard threshold, of one) or
`skipped` (not deduplicated: not HTML, an error status, no main text)."""
VERDICTS: tuple[Verdict, ...] = ("unique", "exact_duplicate", "near_duplicate", "skipped")


@dataclass(frozen=True, slots=True)
class Decision:
    """The dedup decision for one URL, a line of `dedup.decisions` (and of `neardup scan`'s output);
    per URL the one with the highest `revision` wins."""

    url: str
    """The page's URL, as fetched (also the record key)."""
    host: str
    """The URL's hostname."""
    verdict: Verdict
    """What the page is: unique, a duplicate (exact or near) of `duplicate_of`, or skipped."""
    duplicate_of: str | None
    """The better-ranked copy a duplicate is of; None for unique and skipped pages."""
    distance: int | None
    """SimHash distance in bits to `duplicate_of`, when the match is exact or within k bits."""
    simhash: str | None
    """The main text's 64-bit SimHash in hex; None when skipped or when the text has too few features."""
    text_sha256: str | None
    """Hex SHA-256 of the normalised main text (None when skipped): what an exact duplicate shares."""
    body_sha256: str | None
    """Hex SHA-256 of the body (after any Content-Encoding is undone; a text `body` as UTF-8)."""
    reason: str
    """Why, in words: what matched and how, or why the page was skipped."""
    revision: int
    """The URL's decision number, from 1; a later page can revise a decision (keep the highest)."""
    complete: bool
    """False when decided provisionally, before every probe answered (`decision_timeout_ms`)."""
    fetched_at: str
    """RFC 3339 fetch time of the URL's latest fetch."""
    decided_at: str
    """RFC 3339 time the decision was made."""
    jaccard: float | None = None
    """MinHash Jaccard estimate with `duplicate_of` when the match shares an LSH band, else None."""
    partial_of: list[dict[str, Any]] = field(default_factory=list)
    """The pages whose main text this page holds to a large degree (partial copies, `dedup/rule.py`),
    each `{"url", "containment"}` (the estimated share of that page's shingles found in this one, 4
    decimals), highest containment first, at most three; empty when none, and for exact duplicates
    (their canonical has the same text). It never changes the verdict."""

    def __hash__(self) -> int:
        """Over the fields but `partial_of` (a list of dicts, as JSON gives it back): equal decisions hash
        equal, so they can be set members and dict keys (equal ones published once)."""
        return hash((self.url, self.verdict, self.duplicate_of, self.revision, self.complete, self.decided_at))

    def to_json(self) -> bytes:
        """The message as its topic carries it: a JSON object of the fields."""
        return orjson.dumps(self)  # orjson writes dataclasses as asdict would, without the copy

    @classmethod
    def from_json(cls, raw: bytes | str) -> Decision:
        """A decision read from `dedup.decisions` (one written before `jaccard` or `partial_of` existed has
        None or an empty list)."""
        return cls(**orjson.loads(raw))

    @property
    def is_duplicate(self) -> bool:
        """An exact or near duplicate of a better-ranked page (`duplicate_of`): a copy to skip."""
        return self.verdict in ("exact_duplicate", "near_duplicate")

    def verdict_key(self) -> tuple[Any, ...]:
        """What a decision says, without when it was said: equal for equal decisions."""
        return (self.url, self.verdict, self.duplicate_of, self.distance, self.jaccard,
                tuple((p["url"], p["containment"]) for p in self.partial_of))


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
    """The hostname (`www.` kept), also the record key."""
    window_start: str | None
    """RFC 3339 start of the window whose counts this signal carries; None in a cumulative signal."""
    window_end: str | None
    """RFC 3339 end of that window; None in a cumulative signal."""
    pages: int
    """Pages counted (skipped pages are not), the window's or the host's."""
    exact_duplicates: int
    """Of those, exact duplicates."""
    near_duplicates: int
    """Of those, near duplicates."""
    same_host_duplicates: int
    """Of those, duplicates of a page on the same site (`www.` and bare count as one site)."""
    dup_ratio: float
    """(exact + near) / pages, for information."""
    penalty: float
    """The host's trap penalty, same-site duplicates / (pages + 20), in [0, 1)."""
    budget_factor: float
    """The share of the host's crawl budget to keep: max(0.05, 1 - penalty)."""
    url_rules: list[dict[str, Any]] = field(default_factory=list)
    """The host's learned URL rules, each a `UrlRule` as a dict (`kind`, `param`, `support`, ...)."""
    reason: str = ""
    """Why it was sent, in words: a threshold crossed, a window closed, settled, end of input."""
    revision: int = 0
    """The host's signal number, from 1; a signal sent again keeps its number (keep the highest)."""
    partial_copies: int = 0
    """Of the pages counted, those whose `partial_of` names a page of another site: partial copies of other
    hosts' pages (a host made mostly of them is a scraper; they raise no trap penalty)."""

    def to_json(self) -> bytes:
        """The message as its topic carries it: a JSON object of the fields."""
        return orjson.dumps(self)  # orjson writes dataclasses as asdict would, without the copy

    @classmethod
    def from_json(cls, raw: bytes | str) -> HostSignal:
        """A signal read from `frontier.host-signals` (one written before `revision` existed has 0)."""
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
        """The message as its topic carries it: a JSON object of the fields."""
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
