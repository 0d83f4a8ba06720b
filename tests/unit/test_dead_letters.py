"""Every dead letter fits the producer's limit (G4, issue 21): a rejected event of any size becomes a
`pages.rejected` record whose key and value together stay within NEARDUP_MAX_MESSAGE_BYTES, with the
original's full length and SHA-256 and as much of its bytes as fit; URLs over NEARDUP_MAX_URL_BYTES are
rejected before they reach any internal record."""

from __future__ import annotations

import base64
import hashlib

import orjson
import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import Rejected, fingerprint_event
from neardup_core.ingest.event import EventError, parse_event
from neardup_core.messages import PRODUCER_REQUEST_BYTES, Rejection, dead_letter
from neardup_core.settings import DEFAULT_SETTINGS, CoreSettings

LIMIT = DEFAULT_SETTINGS.max_message_bytes
PAGE = "<html><body><p>" + "A sentence long enough to be the main text of this page. " * 8 + "</p></body></html>"


def event(url: str, body: str = PAGE) -> bytes:
    return orjson.dumps({"url": url, "body": body, "fetched_at": "2026-01-02T03:04:05Z", "content_type": "text/html"})


def huge_body() -> tuple[bytes, bytes]:
    """7 MB: a body over the 5 MiB cap (base64 of it would be 9.3 MB)."""
    return event("https://big.example/a", "x" * 7_000_000), b"https://big.example/a"


def bad_json() -> tuple[bytes, bytes]:
    """900 KB that is not JSON (cut off before its end)."""
    return b'{"url": "https://bad.example/a", "body": "' + b"y" * 900_000, b"https://bad.example/a"


def huge_url() -> tuple[bytes, bytes]:
    """A 500 KB URL, which is also the record's key."""
    url = "https://long.example/" + "q" * 500_000
    return event(url), url.encode()


CASES = {"body over the cap (7 MB)": huge_body, "bad JSON (900 KB)": bad_json, "URL of 500 KB": huge_url}


@pytest.mark.parametrize("case", list(CASES))
def test_the_dead_letter_of_a_large_rejected_event_fits_the_limit_and_identifies_the_original(case: str) -> None:
    raw, key = CASES[case]()
    assert len(raw) >= 500_000
    rejected = fingerprint_event(raw, key=key)
    assert isinstance(rejected, Rejected) and rejected.stage == "validate"
    letter = rejected.dead_letter(raw, "pages.fetched", 3, 41, key=key)
    assert len(letter.key or b"") + len(letter.value) <= LIMIT
    # what aiokafka checks against max_request_size (1,000,000 bytes by default) before it sends
    assert DefaultRecordBatchBuilder.estimate_size_in_bytes(letter.key, letter.value, []) <= PRODUCER_REQUEST_BYTES
    assert letter.key is not None and key.startswith(letter.key) and len(letter.key) <= DEFAULT_SETTINGS.max_url_bytes
    rejection = Rejection.from_json(letter.value)
    assert rejection == letter.rejection
    assert (rejection.topic, rejection.partition, rejection.offset) == ("pages.fetched", 3, 41)
    assert rejection.raw_bytes == len(raw)
    assert rejection.raw_sha256 == hashlib.sha256(raw).hexdigest()
    kept = base64.b64decode(rejection.raw_b64)
    assert raw.startswith(kept) and (kept == raw or len(kept) > LIMIT // 2)  # as much as fits


@pytest.mark.parametrize("case", list(CASES))
def test_the_value_alone_fits_as_the_agents_ask_for_it_today(case: str) -> None:
    raw, key = CASES[case]()
    rejected = fingerprint_event(raw, key=key)
    assert isinstance(rejected, Rejected)
    value = rejected.message(raw, "pages.fetched", 0, 7).to_json()
    assert len(value) <= LIMIT


def test_a_small_rejected_event_keeps_all_its_bytes() -> None:
    raw = b"{broken json"
    rejection = Rejection.from_json(dead_letter("event is not JSON", "validate", "pages.fetched", 0, 1, raw).value)
    assert base64.b64decode(rejection.raw_b64) == raw
    assert (rejection.raw_bytes, rejection.raw_sha256) == (len(raw), hashlib.sha256(raw).hexdigest())


def test_a_huge_error_text_and_source_are_cut_and_any_text_encodes() -> None:
    """An exception's message can hold the whole input, or a lone surrogate orjson refuses."""
    raw = b"z" * 2_000_000
    letter = dead_letter("internal error: ValueError: " + "\ud800\x01" * 600_000, "fingerprint",
                         "/data/" + "d" * 100_000 + ".jsonl", None, 9, raw, key=b"k" * 900_000)
    assert len(letter.key or b"") + len(letter.value) <= LIMIT
    rejection = Rejection.from_json(letter.value)
    assert rejection.error.startswith("internal error: ValueError: ") and "cut, 1200028 characters" in rejection.error
    assert len(rejection.error) <= 2000 and rejection.topic is not None and len(rejection.topic) <= 2000
    assert rejection.raw_bytes == len(raw) and raw.startswith(base64.b64decode(rejection.raw_b64))


def test_a_lower_limit_is_kept_too() -> None:
    settings = CoreSettings(max_message_bytes=65_536)
    raw, key = huge_body()
    rejected = fingerprint_event(raw, key=key, settings=settings)
    assert isinstance(rejected, Rejected)
    letter = rejected.dead_letter(raw, "pages.fetched", 0, 0, key=key, settings=settings)
    assert len(letter.key or b"") + len(letter.value) <= 65_536
    assert raw.startswith(base64.b64decode(letter.rejection.raw_b64))


def test_a_limit_without_room_is_refused() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        dead_letter("x", "validate", None, None, None, b"", max_bytes=1000)


def test_a_dead_letter_written_before_raw_bytes_existed_still_reads() -> None:
    old = b'{"error":"e","stage":"validate","topic":"t","partition":0,"offset":1,"raw_b64":""}'
    assert Rejection.from_json(old).raw_bytes is None


def url_of(n: int) -> str:
    """An http URL of exactly `n` bytes."""
    head = "https://example.com/"
    return head + "p" * (n - len(head))


def test_a_url_over_the_cap_is_rejected_naming_the_cap_and_its_length() -> None:
    url = url_of(9 * 1024)
    with pytest.raises(EventError) as caught:
        parse_event(event(url), key=url.encode())
    assert caught.value.stage == "validate"
    assert caught.value.reason == "'url' has 9216 bytes, over the cap of 8192 (NEARDUP_MAX_URL_BYTES)"
    rejected = fingerprint_event(event(url), key=url.encode())
    assert isinstance(rejected, Rejected)
    assert (rejected.stage, rejected.reason) == ("validate", caught.value.reason)


def test_a_url_at_the_cap_is_accepted() -> None:
    url = url_of(8 * 1024)
    assert parse_event(event(url), key=url.encode()).url == url
    assert isinstance(fingerprint_event(event(url), key=url.encode()), Fetch)


def test_the_cap_counts_utf8_bytes_and_follows_the_setting() -> None:
    url = "https://example.com/" + "é" * 200  # 420 bytes, 220 characters
    with pytest.raises(EventError, match="'url' has 420 bytes, over the cap of 256"):
        parse_event(event(url), max_url_bytes=256)
    assert isinstance(fingerprint_event(event(url), settings=CoreSettings(max_url_bytes=420)), Fetch)


def test_a_record_key_over_the_cap_is_rejected() -> None:
    key = url_of(20_000).encode()
    with pytest.raises(EventError) as caught:
        parse_event(event("https://example.com/a"), key=key)
    assert caught.value.stage == "validate"
    assert caught.value.reason == "record key has 20000 bytes, over the URL cap of 8192 (NEARDUP_MAX_URL_BYTES)"
