"""Main-content extraction on generated pages: boilerplate dropped, stoplist chosen, fallback, and the
fast engine making stock jusText's paragraphs and decisions."""

from __future__ import annotations

import random
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import justext
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from justext.utils import normalize_whitespace as stock_normalize
from lxml import etree

from neardup_core.extract import fastjustext
from neardup_core.extract import main_text as extract_module
from neardup_core.extract.main_text import EMPTY, ExtractError, Extraction, choose_stoplist, extract
from neardup_core.extract.stoplists import stoplist, stoplist_for, union_stoplist

ENGLISH = [
    "The city council voted on Tuesday to approve a new plan for the riverside park, which has been "
    "closed to the public for more than two years while engineers repaired the flood walls that were "
    "damaged in the storms of the previous winter.",
    "According to the mayor, the work will be finished before the summer, and the park will then be "
    "open again to all of the residents who have been asking for it to return as soon as it could be "
    "made safe for them and for their children.",
    "Several members of the council said that they were worried about the cost, but in the end most "
    "of them agreed that it was better to spend the money now than to wait until the problems became "
    "even more serious and much more expensive to fix.",
]
GERMAN = [
    "Der Stadtrat hat am Dienstag beschlossen, dass der Park am Fluss nach der langen Sanierung wieder "
    "für alle Bürger geöffnet werden soll, sobald die Arbeiten an den Mauern abgeschlossen sind und die "
    "Ingenieure ihre Prüfung beendet haben.",
    "Nach Angaben des Bürgermeisters werden die Arbeiten noch vor dem Sommer fertig sein, und dann "
    "können die Menschen, die schon lange auf diesen Tag warten, endlich wieder in den Park gehen und "
    "sich dort mit ihren Kindern erholen.",
    "Einige Mitglieder des Rates waren über die Kosten besorgt, aber am Ende waren sich die meisten "
    "einig, dass es besser ist, das Geld jetzt auszugeben, als zu warten, bis die Probleme noch größer "
    "und noch teurer werden würden.",
]
NAV = ["Home", "World", "Business", "Sport", "Culture", "Weather", "Contact us"]


def templated_page(article: list[str], *, lang: str | None = "en", title: str = "River park") -> str:
    """A news page: navigation, an ad, the article, related links and a footer around it."""
    nav = "".join(f'<li><a href="/{item.lower()}">{item}</a></li>' for item in NAV)
    related = "".join(f'<li><a href="/story/{i}">Related story number {i} about the news</a></li>'
                      for i in range(6))
    body = "".join(f"<p>{paragraph}</p>" for paragraph in article)
    lang_attr = f' lang="{lang}"' if lang else ""
    return f"""<!DOCTYPE html>
<html{lang_attr}><head><title>{title}</title><style>p {{ color: red }}</style>
<script>var tracking = "the the the the the the the the";</script></head>
<body>
  <div id="header"><a href="/">Example News</a> <form><input name="q"> <button>Search</button></form></div>
  <ul class="nav">{nav}</ul>
  <div class="ad"><a href="http://ads.example/click">Advertisement: buy one, get one free!</a></div>
  <div class="article"><h1>{title}</h1>{body}</div>
  <div class="related"><h3>Related</h3><ul>{related}</ul></div>
  <div id="footer">&copy; 2024 Example News Ltd. All rights reserved. <a href="/privacy">Privacy</a> |
    <a href="/terms">Terms</a></div>
</body></html>"""


def test_article_is_kept_and_boilerplate_dropped() -> None:
    result = extract(templated_page(ENGLISH))
    assert result.paragraphs[-3:] == tuple(ENGLISH)
    assert result.text.endswith("\n".join(ENGLISH))
    for boilerplate in ("Advertisement", "Related story", "All rights reserved", "Contact us", "Search"):
        assert boilerplate not in result.text
    assert "tracking" not in result.text and "color" not in result.text
    assert result.language == "English"
    assert not result.fallback
    assert 0.2 < result.boilerplate_ratio < 0.6


def test_german_page_gets_the_german_stoplist() -> None:
    result = extract(templated_page(GERMAN, lang=None))
    assert result.language == "German"
    assert result.paragraphs[-3:] == tuple(GERMAN)


def test_declared_language_that_does_not_match_the_words_loses() -> None:
    assert extract(templated_page(GERMAN, lang="en")).language == "German"
    assert extract(templated_page(GERMAN, lang="de")).language == "German"
    assert extract(templated_page(GERMAN, lang=None), language="de-AT").language == "German"


def test_declared_language_decides_for_short_pages() -> None:
    html = '<html lang="fr"><body><p>Bonjour tout le monde</p></body></html>'
    assert extract(html).language == "French"


def test_gibberish_uses_the_union_stoplist() -> None:
    rng = random.Random(3)
    letters = "bcdfghjklmnpqrstvwxz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(400)]
    html = "<html><body>" + "".join(f"<p>{' '.join(words[i:i + 40])}</p>" for i in range(0, 400, 40))
    result = extract(html + "</body></html>")
    assert result.language is None
    assert choose_stoplist(html, [" ".join(words)]) is None


def test_fallback_to_visible_text_when_jusText_keeps_nothing() -> None:
    html = """<html><head><title>Menu</title><script>var hidden = 1;</script></head><body>
      <noscript>Please enable JavaScript</noscript>
      <ul><li><a href="/a">Products</a></li><li><a href="/b">Prices</a></li></ul>
      <div>Opening hours: 9 to 5</div><style>.x {}</style></body></html>"""
    result = extract(html)
    assert result.fallback
    assert result.paragraphs == ("Products", "Prices", "Opening hours: 9 to 5")
    assert result.text == "Products\nPrices\nOpening hours: 9 to 5"
    assert result.boilerplate_ratio == 1.0


@pytest.mark.parametrize("html", ["", "   \n\t ", "<!-- only a comment -->"])
def test_empty_input_gives_an_empty_extraction(html: str) -> None:
    assert extract(html) == EMPTY
    assert extract(html, engine="justext") == EMPTY


@pytest.mark.parametrize("html", [
    "<html><body><p>unclosed <b>bold <i>italic</p></div></span>",
    "<<<>>><p>&&&; &#xZZ; &nosuchentity; text</p></td></tr></table>",
    "<p>" + "<div>" * 300 + "deep" + "</div>" * 300,
    "plain text without any markup at all",
    "\x00\x01<p>control characters \ufffe\udc80</p>",
    '<?xml version="1.0" encoding="iso-8859-1"?><html><body><p>café</p></body></html>',
])
def test_malformed_html_does_not_raise(html: str) -> None:
    assert isinstance(extract(html), Extraction)
    assert extract(html) == extract(html, engine="justext")


def test_parser_failure_raises_extract_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(html: str, *, extra_kill: tuple[str, ...] = ()) -> list[fastjustext.FastParagraph]:
        raise etree.ParserError("the parser gave up")

    monkeypatch.setattr(extract_module.fastjustext, "paragraphs_of", fail)
    with pytest.raises(ExtractError, match="gave up") as info:
        extract("<p>text</p>")
    assert isinstance(info.value, ValueError)


def test_unknown_engine() -> None:
    with pytest.raises(ValueError, match="engine"):
        extract("<p>x</p>", engine="nope")  # type: ignore[arg-type]


def test_engines_agree_on_generated_pages() -> None:
    for page in (templated_page(ENGLISH), templated_page(GERMAN, lang="de"), templated_page(ENGLISH[:1])):
        assert extract(page) == extract(page, engine="justext")


def test_stoplist_names_and_codes() -> None:
    assert stoplist_for("en-US") == "English"
    assert stoplist_for("de, en") == "German"
    assert stoplist_for("english") == "English"
    assert stoplist_for("pt_BR") == "Portuguese"
    assert stoplist_for("zh-Hans") is None
    assert stoplist_for(None) is None
    assert "the" in stoplist("English")
    assert {"the", "und", "le"} <= union_stoplist()
    assert stoplist("German") is stoplist("German")


# Stock jusText against the fast engine on random markup: every paragraph and every decision.

PIECES = [
    "<p>The committee said that it would publish all of the reports before the end of the year.</p>",
    "plain text in the body", " ", "\n  ", "<div>a division with some of the words in it</div>",
    "<span>span text</span>", "<b>bold</b>", "<!-- comment -->", "<script>var x = 1;</script>",
    "<form><p>inside a form</p></form>", "<br>", "<br><br>", "<br> <br>", "<a href=x>link text</a>",
    "<a href=y> spaced   link </a>", "<iframe>frame</iframe>", "<head><title>t</title></head>",
    "<body>", "</body>", "<body><p>second body</p></body>", "<legend>legend</legend>",
    "<option>option</option>", "<h2>A heading</h2>", "<text id=x>", "</text>", "<?php echo 1 ?>",
    "<table><tr><td>cell</td></tr></table>", "<noscript>noscript</noscript>", "<img src=a>",
    "<link rel=stylesheet href=a.css>", "<image src=b>", "<li>list item</li>", "<html>", "</html>",
    "<select><option>o</option></select>", "<object><p>object</p></object>", "&amp; &copy; &nbsp;x",
    "<center>centered</center>", "<h7>custom heading</h7>", "<ng-select>choice</ng-select>", "\xa0",
    "<textarea>typed</textarea>", "</p>", "</div>", "<p>", "<div>", "<!DOCTYPE html>",
]


def paragraph_facts(paragraphs: Sequence[Any]) -> list[tuple[object, ...]]:
    return [(p.text, p.class_type, p.cf_class, p.dom_path, p.xpath, p.chars_count_in_links, p.tags_count,
             p.heading) for p in paragraphs]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=10))
def test_fast_engine_matches_stock_jusText(pieces: list[str]) -> None:
    html = "".join(pieces)
    words = stoplist("English")
    try:
        stock = paragraph_facts(justext.justext(html, words))
    except (etree.ParserError, AssertionError, ValueError):  # stock fails on documents without elements
        return  # and on a stylesheet link or a comment as the root; the fast engine returns nothing
    assert paragraph_facts(fastjustext.justext(html, words)) == stock


@given(st.text(alphabet=st.sampled_from(list("ab \n\r\t\xa0\u2028\x1c\u200b\xad\x85é\u3000")), max_size=30))
def test_whitespace_normalisation_matches_jusText(text: str) -> None:
    assert fastjustext.normalize_whitespace(text) == stock_normalize(text)


def test_stopword_counts_match_per_paragraph_counting() -> None:
    paragraphs = fastjustext.paragraphs_of(templated_page(ENGLISH + GERMAN))
    words = justext.core.define_stoplist(stoplist("English"))
    fastjustext.count_stopwords(paragraphs, words)
    for paragraph in paragraphs:
        assert paragraph.words_count == len(paragraph.text.split())
        assert paragraph.stopwords_count(words) == sum(w.lower() in words for w in paragraph.text.split())


def test_fallback_reparses_only_when_the_page_shows_noscript() -> None:
    """The fallback drops noscript elements; the parse notes whether the page shows one (one inside
    the head or a script does not count), and both engines give the same extraction either way."""
    body = '<ul><li><a href="/a">Products</a></li></ul><div>Opening hours: 9 to 5</div>'
    shown = f"<html><body><noscript>Enable JavaScript</noscript>{body}</body></html>"
    hidden = (f"<html><head><noscript><style>x{{}}</style></noscript></head><body>{body}"
              "<script>document.write('<noscript>x</noscript>')</script></body></html>")
    assert fastjustext.paragraphs_of(shown).noscript
    assert not fastjustext.paragraphs_of(hidden).noscript
    for html in (shown, hidden):
        result = extract(html)
        assert result.fallback and result.paragraphs == ("Products", "Opening hours: 9 to 5")
        assert result == extract(html, engine="justext")


def test_classifying_again_matches_stock_jusText() -> None:
    """A second classification sees the first one's classes (jusText's heading step reads them):
    the fast pass revises them as stock jusText does."""
    html = ('<html><body><ul><li><a href="/a">Home</a></li><li><a href="/b">World news</a></li></ul>'
            "<h2>Short heading</h2><p>A short line of text.</p>"
            + "".join(f"<p>{paragraph}</p>" for paragraph in ENGLISH) + "</body></html>")
    words = stoplist("English")
    stock = justext.justext(html, words)
    justext.core.classify_paragraphs(stock, words)
    justext.core.revise_paragraph_classification(stock)
    fast = fastjustext.classify(fastjustext.justext(html, words), words)
    assert paragraph_facts(fast) == paragraph_facts(stock)
    assert paragraph_facts(fast) != paragraph_facts(justext.justext(html, words))  # the step did act


def test_upper_case_stoplist_is_lower_cased_like_stock_jusText() -> None:
    html = templated_page(ENGLISH)
    words = frozenset(word.upper() for word in stoplist("English"))
    assert paragraph_facts(fastjustext.justext(html, words)) == paragraph_facts(justext.justext(html, words))
    assert paragraph_facts(fastjustext.justext(html, words)) == paragraph_facts(
        fastjustext.justext(html, stoplist("English")))


def _paragraphs_or_error(html: str) -> object:
    try:
        return [(p.text, p.dom_path, p.xpath, p.tags_count, p.chars_count_in_links)
                for p in fastjustext.paragraphs_of(html)]
    except etree.ParserError as exc:
        return str(exc)


def test_reused_parser_carries_nothing_from_one_document_to_the_next() -> None:
    """Each thread reuses its parser: documents in any order, failures between them included, and
    documents parsed in other threads at the same time give the same paragraphs."""
    pages = [templated_page(ENGLISH), "<p>a fragment</p><div>and a div</div>", "<!-- only a comment -->",
             templated_page(GERMAN, lang="de"), "<span>only inline</span>", "<<<",
             '<?xml version="1.0" encoding="utf-8"?><html><body><p>café</p></body></html>']
    forward = [_paragraphs_or_error(page) for page in pages]
    assert [_paragraphs_or_error(page) for page in reversed(pages)] == forward[::-1]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(_paragraphs_or_error, pages * 20)) == forward * 20
