"""Content-Encoding: bodies inflated with a cap (a bomb costs at most the cap), refusals with reasons,
and the event's `revisit` field."""

from __future__ import annotations

import base64
import gzip
import zlib

import orjson
import pytest

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import Rejected, fingerprint_event
from neardup_core.ingest.content import ContentError, decode_content
from neardup_core.ingest.event import EventError, parse_event
from neardup_core.settings import CoreSettings

PAGE = b"<html><body><p>" + b"A page that a server sent compressed. " * 40 + b"</p></body></html>"
CAP = 100_000


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(("coding", "body"), [
    ("gzip", gzip.compress(PAGE)), ("x-gzip", gzip.compress(PAGE)), ("GZIP", gzip.compress(PAGE)),
    ("deflate", zlib.compress(PAGE)), ("deflate", raw_deflate(PAGE)), ("identity", PAGE), (None, PAGE),
    ("gzip, deflate", zlib.compress(gzip.compress(PAGE))),
])
def test_codings_are_undone(coding: str | None, body: bytes) -> None:
    assert decode_content(body, coding, CAP) == PAGE


def test_gzip_members_are_joined_and_a_cut_short_stream_keeps_what_inflated() -> None:
    assert decode_content(gzip.compress(PAGE) + gzip.compress(PAGE), "gzip", CAP) == PAGE + PAGE
    partial = decode_content(gzip.compress(PAGE)[:-30], "gzip", CAP)
    assert partial and PAGE.startswith(partial)


def test_br_when_brotli_is_installed() -> None:
    brotli = pytest.importorskip("brotli")
    assert decode_content(brotli.compress(PAGE), "br", CAP) == PAGE
    with pytest.raises(ContentError, match="past the cap"):
        decode_content(brotli.compress(bytes(CAP * 100)), "br", CAP)


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_bomb_stops_at_the_cap(coding: str) -> None:
    payload = bytes(CAP * 1000)  # 100 MB of zeros, about 100 KB compressed
    body = gzip.compress(payload) if coding == "gzip" else zlib.compress(payload)
    assert len(body) < CAP
    with pytest.raises(ContentError, match="past the cap of 100000 bytes"):
        decode_content(body, coding, CAP)
    assert len(decode_content(body, coding, len(payload))) == len(payload)


@pytest.mark.parametrize(("coding", "body", "words"), [
    ("gzip", PAGE, "does not inflate"), ("deflate", b"\xff" * 50, "does not inflate"),
    ("compress", PAGE, "unsupported Content-Encoding 'compress'"), ("zstd", PAGE, "unsupported"),
])
def test_undecodable_bodies_are_refused(coding: str, body: bytes, words: str) -> None:
    with pytest.raises(ContentError, match=words):
        decode_content(body, coding, CAP)


def event(body: bytes, coding: str, **extra: object) -> bytes:
    return orjson.dumps({"url": "https://e.example/", "body_b64": base64.b64encode(body).decode(),
                         "headers": {"Content-Encoding": coding, "Content-Type": "text/html"}, **extra})


def test_the_event_body_is_the_payload() -> None:
    page = parse_event(event(gzip.compress(PAGE), "gzip"), timestamp_ms=1_800_000_000_000)
    assert page.body == PAGE
    plain = fingerprint_event(orjson.dumps({"url": "https://e.example/", "body": PAGE.decode()}),
                              timestamp_ms=1_800_000_000_000)
    packed = fingerprint_event(event(gzip.compress(PAGE), "gzip"), timestamp_ms=1_800_000_000_000)
    assert isinstance(plain, Fetch) and isinstance(packed, Fetch)
    assert (packed.body_sha256, packed.text_sha256, packed.simhash) == (plain.body_sha256, plain.text_sha256,
                                                                        plain.simhash)


def test_a_text_body_is_taken_as_decoded_already() -> None:
    raw = orjson.dumps({"url": "https://e.example/", "body": PAGE.decode(), "headers": {"content-encoding": "gzip"}})
    assert parse_event(raw, timestamp_ms=1_800_000_000_000).body == PAGE


def test_a_bomb_event_and_an_undecodable_event_are_rejected_at_decode() -> None:
    settings = CoreSettings(max_body_bytes=CAP)
    bomb = fingerprint_event(event(gzip.compress(bytes(CAP * 50)), "gzip"), timestamp_ms=1_800_000_000_000,
                             settings=settings)
    broken = fingerprint_event(event(b"\x1f\x8b\x08 not gzip at all", "gzip"), timestamp_ms=1_800_000_000_000,
                               settings=settings)
    assert isinstance(bomb, Rejected) and bomb.stage == "decode" and "inflates past the cap" in bomb.reason
    assert isinstance(broken, Rejected) and broken.stage == "decode" and "does not inflate" in broken.reason


def test_a_revisit_without_a_body_is_refused_with_what_it_named() -> None:
    base = {"url": "https://e.example/r", "fetched_at": 1_800_000_000_000}
    with pytest.raises(EventError, match="refers_to_uri='https://e.example/'.*not in the input"):
        parse_event(orjson.dumps({**base, "revisit": {"refers_to_uri": "https://e.example/", "refers_to_date": None}}))
    with pytest.raises(EventError, match="names no capture"):
        parse_event(orjson.dumps({**base, "revisit": {}}))
    with pytest.raises(EventError, match="'revisit' is not an object of strings"):
        parse_event(orjson.dumps({**base, "revisit": {"refers_to": 5}}))
    page = parse_event(orjson.dumps({**base, "body": "<p>x</p>", "revisit": {"payload_digest": "sha1:X"}}))
    assert page.body == b"<p>x</p>"
