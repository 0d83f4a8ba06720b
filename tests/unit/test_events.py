"""Input validation: every malformed event is refused with a reason that names the problem."""

from __future__ import annotations

import base64
import binascii

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup_core.ingest.event import EventError, parse_event

OK = {"url": "https://example.org/a", "body": "<p>hello</p>", "fetched_at": "2026-11-01T10:00:00Z"}


def ev(**changes: object) -> bytes:
    data = {**OK, **changes}
    return orjson.dumps({k: v for k, v in data.items() if v is not ...})


def test_a_good_event_parses() -> None:
    page = parse_event(ev(importance=2, status=200, headers={"content-type": "text/html"}), key=b"https://example.org/a")
    assert page.url == OK["url"] and page.body == b"<p>hello</p>" and page.importance == 2.0
    assert page.fetched_at_ms == 1_793_527_200_000


def test_body_b64_and_epoch_ms_and_record_timestamp() -> None:
    raw = orjson.dumps({"url": "http://x.org/", "body_b64": base64.b64encode(b"\xe9t\xe9").decode()})
    page = parse_event(raw, timestamp_ms=1_700_000_000_000)
    assert page.body == b"\xe9t\xe9" and page.fetched_at_ms == 1_700_000_000_000
    assert parse_event(ev(fetched_at=1_700_000_000_123)).fetched_at_ms == 1_700_000_000_123


@given(st.binary(max_size=300), st.text(alphabet="ABCab01+/=\n -_*\u00e9", max_size=12))
def test_body_b64_decodes_as_the_standard_librarys_strict_decoder(body: bytes, text: str) -> None:
    """The fast decoder changes nothing: every body comes back, and any string is accepted or refused
    (with the standard library's own reason) exactly as `base64.b64decode(validate=True)` does."""
    assert parse_event(ev(body=..., body_b64=base64.b64encode(body).decode())).body == body
    try:
        expected: bytes | str = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        expected = f"'body_b64' is not valid base64: {exc}"
    try:
        got: bytes | str = parse_event(ev(body=..., body_b64=text)).body
    except EventError as exc:
        got = exc.reason
    assert got == expected


@pytest.mark.parametrize(("raw", "key", "words"), [
    (b"{nope", None, "not JSON"),
    (b'{"url": "\xff"}', None, "not UTF-8"),
    (b"[1]", None, "not a JSON object"),
    (ev(url=...), None, "no 'url'"),
    (ev(url=5), None, "not a string"),
    (ev(url="/relative"), None, "absolute http(s)"),
    (ev(body=...), None, "neither 'body' nor 'body_b64'"),
    (ev(body=..., body_b64="***"), None, "not valid base64"),
    (ev(body=7), None, "'body' is not a string"),
    (ev(fetched_at=-1), None, "outside 1995..2100"),
    (ev(fetched_at="3000-01-01T00:00:00Z"), None, "outside 1995..2100"),
    (ev(fetched_at="yesterday"), None, "not RFC 3339"),
    (ev(fetched_at=True), None, "boolean"),
    (ev(content_type="nonsense"), None, "not a media type"),
    (ev(status="200"), None, "not an integer"),
    (ev(importance="high"), None, "not a finite number"),
    (ev(headers=["a"]), None, "not an object of strings"),
    (ev(), b"https://example.org/other", "disagrees"),
])
def test_bad_events_are_refused_with_their_reason(raw: bytes, key: bytes | None, words: str) -> None:
    with pytest.raises(EventError) as info:
        parse_event(raw, key=key)
    assert words in info.value.reason


def test_body_over_the_cap() -> None:
    with pytest.raises(EventError, match="over the cap of 10"):
        parse_event(ev(body="x" * 11), max_body_bytes=10)
