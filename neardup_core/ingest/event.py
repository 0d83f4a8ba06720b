"""The input event (`pages.fetched`): parsing and validation, with a clear reason for each refusal.

A `body_b64` whose `headers` name a Content-Encoding is inflated here (`content.py`, capped at the
body cap), so every later step sees the payload; a text `body` is taken as decoded already. An
event with a `revisit` object (a WARC revisit record) carries the payload of the capture it refers
to; without one it is refused, naming what it referred to.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson
import pybase64

from neardup_core.ingest.content import ContentError, content_coding, decode_content
from neardup_core.timefmt import rfc3339_to_ms

MIN_TIME_MS = 788_918_400_000  # 1995-01-01: before that, a fetch time is a bug
MAX_TIME_MS = 4_102_444_800_000  # 2100-01-01
DEFAULT_MAX_BODY_BYTES = 5 * 1024 * 1024
DEFAULT_MAX_URL_BYTES = 8192
"""Longer URLs (and record keys) are refused: a URL travels in every internal record, in its
decision up to four times (key, `url`, `duplicate_of`, `host`), and each of them must fit the
producer's limit. 8 KiB is what common servers accept in a request line (Apache's 8190)."""
_MIME = re.compile(r"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+$")
REVISIT_FIELDS = ("refers_to", "refers_to_uri", "refers_to_date", "payload_digest")


class EventError(ValueError):
    """A bad input event; `stage` says which step refused it."""

    def __init__(self, reason: str, stage: str = "validate") -> None:
        super().__init__(reason)
        self.reason = reason
        self.stage = stage


@dataclass(frozen=True, slots=True)
class FetchedPage:
    url: str
    body: bytes
    fetched_at_ms: int
    status: int = 200
    content_type: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    encoding: str | None = None
    importance: float = 0.0
    crawl_id: str | None = None


def parse_event(raw: bytes, *, key: bytes | None = None, timestamp_ms: int | None = None,
                max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, max_url_bytes: int = DEFAULT_MAX_URL_BYTES
                ) -> FetchedPage:
    """Parse one `pages.fetched` value; `key` and `timestamp_ms` come from the Kafka record."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EventError(f"event is not UTF-8: {exc}") from None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise EventError(f"event is not JSON: {exc}") from None
    return validate_event(data, key=key, timestamp_ms=timestamp_ms, max_body_bytes=max_body_bytes,
                          max_url_bytes=max_url_bytes)


def validate_event(data: Any, *, key: bytes | None = None, timestamp_ms: int | None = None,
                   max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, max_url_bytes: int = DEFAULT_MAX_URL_BYTES
                   ) -> FetchedPage:
    """The `FetchedPage` of a parsed event, or `EventError` with the first rule it breaks."""
    if not isinstance(data, dict):
        raise EventError(f"event is not a JSON object but {type(data).__name__}")
    url = data.get("url")
    if url is None:
        raise EventError("event has no 'url'")
    if not isinstance(url, str):
        raise EventError(f"'url' is not a string but {type(url).__name__}")
    url_bytes = len(url.encode("utf-8", "surrogatepass"))
    if url_bytes > max_url_bytes:
        raise EventError(f"'url' has {url_bytes} bytes, over the cap of {max_url_bytes} (NEARDUP_MAX_URL_BYTES)")
    if key is not None and len(key) > max_url_bytes:  # the URL is within the cap: they cannot agree
        raise EventError(f"record key has {len(key)} bytes, over the URL cap of {max_url_bytes} "
                         "(NEARDUP_MAX_URL_BYTES)")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise EventError(f"'url' is not an absolute http(s) URL: {url[:200]!r}")
    if key is not None and key.decode("utf-8", "replace") != url:
        raise EventError(f"record key {key[:200]!r} disagrees with the event's url {url[:200]!r}")
    revisit = _revisit(data.get("revisit"))
    if revisit is not None and data.get("body") is None and data.get("body_b64") is None:
        raise EventError(_unresolved(revisit))
    body = _body_of(data, max_body_bytes)
    headers = _headers(data.get("headers"))
    if data.get("body") is None:  # a text `body` was decoded already; `body_b64` holds the bytes as sent
        body = _payload(body, headers, max_body_bytes)
    return FetchedPage(
        url=url, body=body, fetched_at_ms=_fetched_at(data.get("fetched_at"), timestamp_ms),
        status=_int_field(data, "status", 200), content_type=_content_type(data.get("content_type")),
        headers=headers, encoding=_opt_str(data, "encoding"),
        importance=_importance(data.get("importance")), crawl_id=_opt_str(data, "crawl_id"))


def _payload(body: bytes, headers: Mapping[str, str], max_body_bytes: int) -> bytes:
    try:
        return decode_content(body, content_coding(headers), max_body_bytes)
    except ContentError as exc:
        raise EventError(f"Content-Encoding: {exc.reason}", stage="decode") from None


def _revisit(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str | None) for v in value.values()):
        raise EventError("'revisit' is not an object of strings")
    return {k: v for k, v in value.items() if k in REVISIT_FIELDS and v}


def _unresolved(revisit: dict[str, str]) -> str:
    if not revisit:
        return ("revisit without a payload that names no capture it refers to "
                "(no refers_to, refers_to_uri or payload_digest: WARC-Refers-To*, WARC-Payload-Digest)")
    named = ", ".join(f"{k}={v[:200]!r}" for k, v in revisit.items())
    return f"revisit without a payload: the capture it refers to ({named}) is not in the input read before it"


def _body_of(data: dict[str, Any], max_body_bytes: int) -> bytes:
    if data.get("body") is not None:
        if not isinstance(data["body"], str):
            raise EventError(f"'body' is not a string but {type(data['body']).__name__}")
        body = data["body"].encode("utf-8", "surrogatepass")
    elif data.get("body_b64") is not None:
        if not isinstance(data["body_b64"], str):
            raise EventError("'body_b64' is not a string")
        body = _b64decode(data["body_b64"])
    else:
        raise EventError("event has neither 'body' nor 'body_b64'")
    if len(body) > max_body_bytes:
        raise EventError(f"body has {len(body)} bytes, over the cap of {max_body_bytes} (NEARDUP_MAX_BODY_BYTES)")
    return body


def _b64decode(text: str) -> bytes:
    """Strict base64 (no whitespace, no other characters): pybase64's SIMD decoder, 50x the standard
    library's on a page. What it refuses is decoded again by the standard library's strict decoder,
    which gives the precise reason and accepts what it always has (excess padding)."""
    try:
        return pybase64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        pass
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise EventError(f"'body_b64' is not valid base64: {exc}") from None


def _fetched_at(value: Any, timestamp_ms: int | None) -> int:
    if value is None:
        if timestamp_ms is None:
            raise EventError("event has no 'fetched_at' and its record has no timestamp")
        ms = int(timestamp_ms)
    elif isinstance(value, bool):
        raise EventError("'fetched_at' is a boolean")
    elif isinstance(value, int | float):
        if not math.isfinite(value):
            raise EventError(f"'fetched_at' is not finite: {value}")
        ms = int(value)
    elif isinstance(value, str):
        try:
            ms = rfc3339_to_ms(value)
        except ValueError:
            raise EventError(f"'fetched_at' is not RFC 3339 or epoch ms: {value[:60]!r}") from None
    else:
        raise EventError(f"'fetched_at' is not a time but {type(value).__name__}")
    if not MIN_TIME_MS <= ms < MAX_TIME_MS:
        raise EventError(f"'fetched_at' {value!r} is outside 1995..2100 (epoch ms {ms})")
    return ms


def _int_field(data: dict[str, Any], name: str, default: int) -> int:
    value = data.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise EventError(f"'{name}' is not an integer: {value!r}")
    return value


def _opt_str(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise EventError(f"'{name}' is not a string: {value!r}")
    return value


def _content_type(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise EventError(f"'content_type' is not a string: {value!r}")
    mime = value.split(";", 1)[0].strip()
    if not _MIME.match(mime):
        raise EventError(f"'content_type' is not a media type: {value[:100]!r}")
    return value


def _headers(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise EventError("'headers' is not an object of strings")
    return value


def _importance(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise EventError(f"'importance' is not a finite number: {value!r}")
    return float(value)
