"""Charset resolution: each source in its turn, bogus names falling through, binary refused."""

from __future__ import annotations

import codecs
import gzip
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_core.ingest.decode import Decoded, DecodeError, decode_body, is_html_content_type, resolve_charset

RUSSIAN = "Москва - столица России, крупнейший по численности населения город страны. " * 8
FRENCH = "Le café est très apprécié à Paris, où l'on boit souvent un crème au comptoir. " * 8


def page(body: str, head: str = "") -> str:
    return f"<html><head>{head}<title>t</title></head><body><p>{body}</p></body></html>"


def test_event_encoding_comes_first() -> None:
    body = page(RUSSIAN, '<meta charset="utf-8">').encode("cp1251")
    decoded = decode_body(body, encoding="windows-1251", content_type="text/html; charset=koi8-r")
    assert decoded == Decoded(page(RUSSIAN, '<meta charset="utf-8">'), "cp1251", "event")


def test_header_charset_from_argument_or_headers() -> None:
    body = page(RUSSIAN).encode("koi8-r")
    assert decode_body(body, content_type='text/html; charset="KOI8-R"').source == "header"
    by_headers = decode_body(body, headers={"CONTENT-TYPE": "text/html;charset=koi8-r"})
    assert (by_headers.charset, by_headers.source) == ("koi8-r", "header")
    assert RUSSIAN in by_headers.text


@pytest.mark.parametrize("head", [
    '<meta charset="windows-1251">',
    "<meta http-equiv='Content-Type' content='text/html; charset=windows-1251'>",
])
def test_meta_charset(head: str) -> None:
    decoded = decode_body(page(RUSSIAN, head).encode("cp1251"))
    assert (decoded.charset, decoded.source) == ("cp1251", "meta")
    assert RUSSIAN in decoded.text


def test_xml_declaration_counts_as_meta() -> None:
    text = '<?xml version="1.0" encoding="ISO-8859-15"?>' + page(FRENCH)
    decoded = decode_body(text.encode("iso8859-15"))
    assert (decoded.charset, decoded.source) == ("iso8859-15", "meta")


def test_bom() -> None:
    decoded = decode_body(codecs.BOM_UTF16_LE + page(FRENCH).encode("utf-16-le"))
    assert (decoded.charset, decoded.source) == ("utf-16-le", "bom")
    assert decoded.text == page(FRENCH)


def test_utf8_bom_is_stripped() -> None:
    assert decode_body(codecs.BOM_UTF8 + page(FRENCH).encode()).text == page(FRENCH)


def test_detection_tries_utf8_first() -> None:
    decoded = decode_body(page(RUSSIAN).encode())
    assert (decoded.charset, decoded.source) == ("utf-8", "detected")


def test_detection_of_cyrillic_single_byte() -> None:
    decoded = decode_body(page(RUSSIAN).encode("cp1251"))
    assert decoded.source == "detected"
    assert RUSSIAN in decoded.text


def test_unlabelled_western_page_reads_as_windows_1252() -> None:
    text = page(FRENCH + " It\u2019s \u201cquoted\u201d \u2014 like browsers do.")
    decoded = decode_body(text.encode("cp1252"))
    assert (decoded.charset, decoded.text) == ("cp1252", text)


@pytest.mark.parametrize("bogus", ["x-bogus", "utf-7", "base64", "", "  "])
def test_bogus_names_fall_through(bogus: str) -> None:
    body = page(RUSSIAN, '<meta charset="windows-1251">').encode("cp1251")
    decoded = decode_body(body, encoding=bogus, content_type=f"text/html; charset={bogus}")
    assert (decoded.charset, decoded.source) == ("cp1251", "meta")


def test_declared_charset_that_does_not_decode_falls_through() -> None:
    body = page(FRENCH, '<meta charset="windows-1252">').encode("cp1252")
    decoded = decode_body(body, content_type="text/html; charset=utf-8")
    assert (decoded.charset, decoded.source) == ("cp1252", "meta")
    assert FRENCH in decoded.text


def test_latin1_label_means_windows_1252() -> None:
    decoded = decode_body(page("It\x92s here. " * 20).encode("latin-1"), encoding="ISO-8859-1")
    assert decoded.charset == "cp1252"
    assert "It\u2019s here." in decoded.text


def test_empty_body() -> None:
    assert decode_body(b"").text == ""
    assert decode_body(b"", encoding="latin-1") == Decoded("", "cp1252", "event")


@pytest.mark.parametrize("body", [
    random.Random(7).randbytes(4096),
    b"\x00" * 2000,
    b"\x89PNG\r\n\x1a\n" + random.Random(8).randbytes(3000),
    bytes(range(32)) * 50,
    b"\x1f\x8b\x08\x00" + random.Random(9).randbytes(2000),
])
def test_binary_is_refused(body: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        decode_body(body, content_type="text/html; charset=iso-8859-1")
    assert isinstance(info.value, ValueError)
    assert "binary" in info.value.reason


def test_a_compressed_body_says_so() -> None:
    """A gzipped page given as the body (a saved .html.gz) is refused with what it is and the way in."""
    page = b"<html><body><p>" + b"A page of plain words. " * 40 + b"</p></body></html>"
    with pytest.raises(DecodeError) as info:
        decode_body(gzip.compress(page))
    assert "gzip-compressed" in info.value.reason and "Content-Encoding" in info.value.reason
    with pytest.raises(DecodeError) as info:
        decode_body(random.Random(5).randbytes(3000))
    assert "compressed" not in info.value.reason


def test_resolve_charset() -> None:
    assert resolve_charset("UTF8") == "utf-8"
    assert resolve_charset("gb2312") == "gb18030"
    assert resolve_charset("Shift_JIS") == "cp932"
    assert resolve_charset("nonsense") is None
    assert resolve_charset("rot13") is None


@pytest.mark.parametrize(("ct", "html"), [
    (None, True), ("", True), ("text/html", True), ("TEXT/HTML; charset=utf-8", True),
    ("application/xhtml+xml", True), ("application/pdf", False), ("text/plain", False),
    ("image/png", False), ("text/htmlx", False),
])
def test_is_html_content_type(ct: str | None, html: bool) -> None:
    assert is_html_content_type(ct) is html


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)), max_size=40)
       | st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=40)
       | st.text(alphabet=st.characters(max_codepoint=0x10FFFF), max_size=40)  # lone surrogates too
       | st.text(alphabet=st.sampled_from("a \t\n\r\x0c\x00\x1f\x7f\x80\x9f\xa0\xc2\xef\xbf\xbd\u0100\u2019"
                                          "\ufffd\ufeff\ud800\U0001f600"), max_size=40))
def test_junk_share_is_the_share_of_control_and_replacement_characters(text: str) -> None:
    from neardup_core.ingest.decode import _junk_share

    junk = sum(1 for c in text if ord(c) < 0x20 and c not in "\t\n\x0c\r" or 0x7F <= ord(c) <= 0x9F or c == "\ufffd")
    assert _junk_share(text) == (junk / len(text) if text else 0.0)
