"""The template check (`neardup_core.extract.template`) on small pages: kept text that is a sidebar,
a footer or lies outside the page's content is recognised, and the page is decided on what it holds
(or skipped); an ordinary article is left as jusText extracts it."""

from __future__ import annotations

import base64

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from neardup_core.extract import fastjustext, template
from neardup_core.extract.fastjustext.clean import clean, parse_root
from neardup_core.extract.main_text import extract
from neardup_core.extract.template import element_roles, template_role, text_role
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import NO_TEXT, fingerprint_event, html_fingerprints

SIDEBAR = ("<div class='widget HTML' id='HTML18'><h2>The Style Scout app</h2><p>To download the app, go to "
           "the web site from your phone and tap on the button to add it to your home screen. It is the "
           "best way to see all of the new looks that we find on the streets of the city every day of "
           "the week, and it is free for all of our readers.</p></div>")
NAV = "<ul class='links'>" + "".join(f"<li><a href='/s/{i}'>Section number {i} of the site</a></li>"
                                     for i in range(40)) + "</ul>"
FOOTER = ("<div id='blq-foot'><p>This page is best viewed in an up-to-date web browser with style sheets "
          "enabled. While you will be able to view the content of this page in your current browser, you "
          "will not be able to get the full visual experience of the site, so please consider upgrading "
          "your browser software or enabling style sheets if you are able to do so.</p></div>")


def page(body: str) -> str:
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


def photo_post(title: str) -> str:
    """A photo-blog post: a title, a photo, a date; jusText keeps only the sidebar's app widget."""
    post = (f"<div class='post hentry'><h3 class='post-title'>{title}</h3><img src='/p.jpg'>"
            f"<div class='post-footer'>Posted 6 Nov</div></div>")
    return page(f"<div class='main'>{post}</div>{NAV}<aside><div class='sidebar'>{SIDEBAR}</div></aside>")


def short_paragraph_article(sentences: list[str]) -> str:
    """An article of one-sentence paragraphs (near-good, none long enough to be good by itself) between
    link lists, and a long footer notice that jusText keeps instead."""
    story = "".join(f"<p>{s}</p>" for s in sentences)
    return page(f"{NAV}<table><tr><td><h1>Story</h1>{story}</td></tr></table>{NAV}{FOOTER}")


FRANCE = [
    "French President Nicolas Sarkozy has announced his country is to return to the military command.",
    "Mr Sarkozy confirmed the decision in a speech to defence experts at the staff college in Paris.",
    "President Charles de Gaulle pulled France out of the integrated military command in the sixties.",
    "Critics say that France will now be no more than a clone of some other of its neighbours.",
    "But Mr Sarkozy said there was no sense in France having no say in how it is run at all.",
    "He went on to say that a solitary nation is a nation that has no influence in the world.",
]
JAPAN = [
    "An extensive search operation is under way off an island in central Japan after two ships collided.",
    "One of the ships, with sixteen crew members, is missing and is feared to have sunk in the night.",
    "The coast guard has six patrol vessels and three helicopters involved in the search effort now.",
    "The collision happened near the island, about one hundred kilometres south of the capital city.",
    "A coast guard official said that there is nothing they can see around the waters at this time.",
    "The missing crew includes seven sailors from one country and nine sailors from another one.",
]


def test_kept_sidebar_only_is_template_and_the_page_is_skipped() -> None:
    html = photo_post("In the pink")
    assert extract(html, template_check=False).text.startswith("The Style Scout app")  # jusText keeps the widget
    result = extract(html)
    assert result.template is not None and result.template.action == "skip"
    assert result.text == "" and result.paragraphs == ()
    assert result.skip_reason and "template" in result.skip_reason
    assert result.template.kept[0] == "The Style Scout app"


def test_two_posts_that_share_only_the_sidebar_do_not_collide() -> None:
    a, b = photo_post("In the pink"), photo_post("London fashion week")
    before_a, before_b = (extract(h, template_check=False).text for h in (a, b))
    assert before_a == before_b  # the extraction collision
    assert html_fingerprints(a) == html_fingerprints(b) == NO_TEXT  # no digest: never equal


def test_a_skipped_page_carries_the_reason() -> None:
    event = orjson.dumps({"url": "https://blog.example/p/1", "status": 200, "content_type": "text/html",
                          "body_b64": base64.b64encode(photo_post("In the pink").encode()).decode(),
                          "fetched_at": 1_600_000_000_000})
    fetch = fingerprint_event(event)
    assert isinstance(fetch, Fetch)
    assert fetch.text_sha256 is None and fetch.skip_reason and "template" in fetch.skip_reason


def test_dropped_prose_block_replaces_a_kept_footer() -> None:
    html = short_paragraph_article(FRANCE)
    before = extract(html, template_check=False)
    assert before.text.startswith("This page is best viewed")
    result = extract(html)
    assert result.template is not None and result.template.action == "block"
    assert result.paragraphs == ("Story", *FRANCE)
    other = short_paragraph_article(JAPAN)
    assert extract(other, template_check=False).text == before.text  # the collision
    assert html_fingerprints(html) != html_fingerprints(other)


def test_kept_text_outside_the_content_elements_gives_way_to_them() -> None:
    entries = "".join(f"<li><a href='/{i}'>Release {i} of the storage gateway and the new region</a></li>"
                      for i in range(12))
    post = f"<div class='entry-content'><h3>Week in review</h3><ul>{entries}</ul></div>"
    events = ("<div id='gamma'><h2>Featured events</h2><div>Monday, November 1: this session will use real "
              "world case studies to help introduce how companies can use the cloud to stay ahead of the "
              "competition, and what they have learned from the ones who did it before them, in the "
              "place where they work and with the people they work with every day.</div></div>")
    html = page(f"{NAV}<div id='alpha'>{post}</div>{events}")
    assert extract(html, template_check=False).text.startswith("Featured events")
    result = extract(html)
    assert result.template is not None and result.template.action == "content"
    assert result.paragraphs[0] == "Week in review" and "Release 3" in result.text


def test_an_ordinary_article_is_unaffected() -> None:
    article = "".join(
        f"<p>{s} It was the subject of a long debate in the chamber, where members of all the parties spoke "
        f"about what it would mean for the people who live and work in the region.</p>" for s in FRANCE)
    html = page(f"{NAV}<div class='article'><h1>France returns</h1>{article}</div>"
                f"<div class='sidebar'>{SIDEBAR}</div>{FOOTER}")
    plain = extract(html, template_check=False)
    result = extract(html)
    assert result.template is None
    assert result == plain and FRANCE[0] in result.text


def test_roles_of_elements() -> None:
    root = etree.fromstring(
        "<div id='main'><div class='widget Blog'><div class='post'><h3 id='t'>x</h3></div></div>"
        "<div class='widget-content'><p id='w'>y</p></div><div class='articleBody'><p id='a'>z</p></div>"
        "<footer><p id='f'>f</p></footer><div><p id='n'>n</p></div></div>", etree.HTMLParser())
    by_id = {el.get("id"): el for el in root.iter() if el.get("id")}
    assert template_role(by_id["main"]) is False
    assert text_role(by_id["t"]) is False  # the post's own element decides, not the widget around it
    assert text_role(by_id["w"]) is True  # template and content words in one element: template
    assert text_role(by_id["a"]) is False  # camel case: article, body
    assert text_role(by_id["f"]) is True
    assert text_role(by_id["n"]) is False  # inherited from the main wrapper


def test_the_scoring_helpers_fingerprint_a_page_as_scan_does() -> None:
    """`html_fingerprints` scores pairs in the tests, `tune` and the
    benchmarks: on each page the template check touches they give what `fingerprint_event` gives scan."""
    pages = [photo_post("In the pink"), short_paragraph_article(FRANCE), short_paragraph_article(JAPAN),
             page("<p>   </p>")]
    for n, html in enumerate(pages):
        event = orjson.dumps({"url": f"https://blog.example/p/{n}", "status": 200, "content_type": "text/html",
                              "body": html, "fetched_at": 1_600_000_000_000})
        fetch = fingerprint_event(event)
        assert isinstance(fetch, Fetch)
        fingerprints = html_fingerprints(html)
        assert fingerprints[:3] == (fetch.text_sha256, fetch.simhash, fetch.minhash)
        assert (fingerprints.shingles is None) == (fetch.simhash is None)
        assert (fetch.skip_reason is None) == (fetch.text_sha256 is not None) == (n in (1, 2))


# The roles the fast segmenter notes while it parses, against those of the page parsed and cleaned again (what
# the check read before, and still reads for stock jusText's paragraphs): equal for every paragraph.

MARKUP = [
    "<div class='sidebar'>", "</div>", "<div id='main-content'>", "<p>a paragraph with a few words in it</p>",
    "<p>", "</p>", "text", "<article>", "</article>", "<aside>", "</aside>", "<main>", "<nav><p>menu</p></nav>",
    "<footer><p>footer words</p></footer>", "<span id=footer>s</span>", "<p class='entry-content'>entry</p>",
    "<h2 class=storyHeadline>Head</h2>", "<li class='menu-item'>item</li>", "<a class=related href=x>link</a>",
    "<form class='sidebar'><p>inside a form</p></form>", "<form id=main><div class=x><p>a</p></div><p>b</p></form>",
    "<iframe class=widget><p>f</p></iframe>", "<object class=menu><p>o</p></object>", "<image class=nav src=x>",
    "<table class=nav><tr><td>cell</td></tr></table>", "<html class=content>", "<html id=article>", "</html>",
    "<body class='post'>", "<body id=sidebar>", "</body>", "<head><title>t</title></head>", "<!-- c -->",
    "<?xml version='1.0'?>", "<!DOCTYPE html>", "<?php x ?>", "<br><br>", "<text id=x>", "</text>",
]


def roles_both_ways(html: str) -> tuple[list[bool | None], list[bool | None]]:
    """The role of each fast paragraph's element as the template check reads it, and as the cleaned tree
    of the page parsed again gives it."""
    paragraphs = fastjustext.paragraphs_of(html)
    if not paragraphs:
        return [], []
    noted = element_roles(html, paragraphs)
    root = parse_root(html)
    clean(root)
    tree = template._TreeRoles(root)
    assert isinstance(noted, template._SegmentRoles)
    return [noted.of(p) for p in paragraphs], [tree.of(p) for p in paragraphs]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(MARKUP), min_size=1, max_size=10))
def test_the_segmenter_notes_the_roles_of_the_cleaned_tree(pieces: list[str]) -> None:
    html = "".join(pieces)
    try:
        noted, parsed = roles_both_ways(html)
    except etree.ParserError:  # a document without elements: no paragraphs, no check
        return
    assert noted == parsed


def test_roles_above_jusTexts_root_count_as_in_the_document() -> None:
    """A document that does not start with <html> (here a comment first) gets the body's only child as
    jusText's root; the body's class above it still says what the text is, as it did when the check
    found the paragraph's element in the document parsed again."""
    html = ("<!-- cached --><html><body class='single-post'><div><p>one paragraph</p><div class='sidebar'>"
            "<p>a widget</p></div></div></body></html>")
    noted, parsed = roles_both_ways(html)
    assert noted == parsed == [False, True]


def test_the_check_does_not_parse_the_page_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the fast engine the template check reads the segmenter's notes (same findings as stock
    jusText's paragraphs located in the page parsed again); only the stock engine parses again."""
    pages = [photo_post("In the pink"), short_paragraph_article(FRANCE), short_paragraph_article(JAPAN)]
    stock = [extract(html, engine="justext").template for html in pages]
    assert all(finding is not None for finding in stock)

    def refuse(html: str, **kwargs: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(template, "parse_root", refuse)
    assert [extract(html).template for html in pages] == stock
    with pytest.raises(AssertionError, match="parsed again"):
        extract(pages[0], engine="justext")


def test_stock_paragraphs_are_located_under_a_tag_that_holds_a_bracket() -> None:
    """Script text parsed as markup makes tags such as ``x=a[i]`` (one corpus page has one): the
    xpath step ``x=a[i][1]`` is that tag, first of its name, and locating it does not fail."""
    from neardup_core.extract.main_text import _paragraphs

    html = page("<div class='sidebar'><x=a[i]><p>text in a sidebar</p></x=a[i]></div><p>own text</p>")
    paragraphs = _paragraphs(html, "justext")
    assert [p.xpath for p in paragraphs][0].endswith("/x=a[i][1]/p[1]")
    roles = element_roles(html, paragraphs)
    assert isinstance(roles, template._TreeRoles)
    assert [roles.of(p) for p in paragraphs] == [True, None]
