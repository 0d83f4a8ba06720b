"""The URL's identity (DESIGN, the decision rule): the normal form that does not change the resource."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup_core.dedup.rank import rank_of
from neardup_core.dedup.rule import match_of
from neardup_core.dedup.version import PageVersion, version_id
from neardup_core.hosts.urls import url_identity


@pytest.mark.parametrize(("url", "identity"), [
    ("http://example.com", "http://example.com/"),  # DESIGN's example: one URL
    ("http://Example.com:80/", "http://example.com/"),
    ("HTTP://EXAMPLE.COM/", "http://example.com/"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("http://example.com:443/a", "http://example.com:443/a"),  # 443 is not http's default
    ("https://example.com:80/a", "https://example.com:80/a"),
    ("http://example.com:8080", "http://example.com:8080/"),
    ("http://example.com:/a", "http://example.com/a"),  # an empty port is the default
    ("http://example.com/a#top", "http://example.com/a"),
    ("http://example.com#top", "http://example.com/"),
    ("http://example.com?b=2&a=1", "http://example.com/?b=2&a=1"),
    ("http://example.com/Path/X%2fY?B=%41&a=1", "http://example.com/Path/X%2fY?B=%41&a=1"),  # untouched
    ("http://example.com/a?", "http://example.com/a?"),
    ("http://BÜCHER.Example/Straße", "http://xn--bcher-kva.example/Straße"),  # IDN host as punycode, path kept
    ("http://xn--bcher-kva.EXAMPLE/", "http://xn--bcher-kva.example/"),
    ("http://u@Bücher.example:80/x", "http://u@xn--bcher-kva.example/x"),
    ("http://bücher.example./", "http://xn--bcher-kva.example./"),
    ("http://例え.テスト/", "http://xn--r8jz45g.xn--zckzah/"),
    ("http://straße.example/", "http://xn--strae-oqa.example/"),  # IDNA 2008 keeps ß (IDNA 2003: strasse)
    ("http://ﬁ.Example/", "http://fi.example/"),  # UTS 46 mapping: the ligature is "fi"
    ("http://User:PW@Example.com:80/", "http://User:PW@example.com/"),  # userinfo kept
    ("http://[::1]:80/x", "http://[::1]/x"),
    ("http://[2001:DB8::1]:8080", "http://[2001:db8::1]:8080/"),
])
def test_the_normal_form(url: str, identity: str) -> None:
    assert url_identity(url) == identity
    assert url_identity(identity) == identity  # idempotent


def test_path_case_and_query_order_make_other_urls() -> None:
    assert url_identity("http://a.example/A") != url_identity("http://a.example/a")
    assert url_identity("http://a.example/?a=1&b=2") != url_identity("http://a.example/?b=2&a=1")


def page(url: str, body: str = "b" * 64, text: str = "t" * 64) -> PageVersion:
    return PageVersion(url, 0.0, 1000, body, text, 0)


def test_version_id_rank_and_own_url_use_the_identity() -> None:
    a, b = page("http://example.com"), page("http://Example.com:80/")
    assert version_id(a.url, a.body_sha256) == version_id(b.url, b.body_sha256) == a.version_id == b.version_id
    assert a.rank == b.rank == rank_of("http://example.com/", 0.0, 1000, "b" * 64)
    assert match_of(a, b, 3) is None and match_of(b, a, 3) is None  # never a duplicate of its own URL
    assert match_of(a, page("http://example.com/other"), 3) is not None
    assert b.url == "http://Example.com:80/"  # the URL as received is kept


def test_an_idn_host_and_its_punycode_are_one_url() -> None:
    assert url_identity("http://bücher.example/") == url_identity("http://xn--bcher-kva.example/")
    assert url_identity("https://BÜCHER.example:443/a") == url_identity("https://xn--bcher-kva.example/a")
    a, b = page("http://bücher.example/"), page("http://xn--bcher-kva.example/")
    assert a.version_id == b.version_id and match_of(a, b, 3) is None  # never a duplicate of its own URL


@pytest.mark.parametrize("host", [
    "Bü_cher.example",  # "_" is not allowed in an IDNA 2008 label
    "-Bücher.example",  # nor a leading hyphen
    "bü--cher.example",  # nor "--" in the third and fourth place
    "A" * 64 + "ü.example",  # a label over 63 characters
    "Bücher..example",  # an empty label
    "Ü.١٢٣",  # a right-to-left label starting with a digit (the bidi rule)
    "Bü cher.example", "bü%41.example",
])
def test_an_invalid_idn_host_is_kept_as_lower_cased_text(host: str) -> None:
    url = f"http://{host}/Path"
    assert url_identity(url) == f"http://{host.lower()}/Path"
    assert url_identity(url_identity(url)) == url_identity(url)


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/?#@:[]"), max_size=40))
def test_any_host_gives_an_identity_without_raising(host: str) -> None:
    identity = url_identity(f"http://{host}/a")
    assert url_identity(identity) == identity
