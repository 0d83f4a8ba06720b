"""`neardup scan` on constructed pages: a blog post that embeds a whole news article between paragraphs of
its own commentary names the article in `partial_of`, stays `unique`, and says the same whether the
article is fetched before or after it."""

from __future__ import annotations

import random
from html import escape
from pathlib import Path

import pytest
from rich.console import Console

from neardup_core.dedup.explain import explain
from neardup_core.hosts.statistics import apply_decision, signal_for
from neardup_core.ingest.lookup import load_page
from neardup_core.messages import Decision
from neardup_core.settings import CoreSettings
from neardup_core.testing.synthetic import _Prose
from streams.cli.explain import render
from streams.cli.scan import run_scan
from streams.settings import Settings
from tests.functional.test_scan import scan, write

T0 = 1_700_000_000_000
PARTIAL_ENV = {"NEARDUP_PARTIAL_COPIES": "1"}  # partial copies are off by default (their cost is not bounded yet)
ARTICLE = "https://news.example/2026/rail-line-reopens"
BLOG = "https://blog.example/posts/what-the-rail-line-means"
OTHER = "https://other.example/markets/week"
MIRROR = "https://mirror.example/copies/2026/rail-line-reopens"


def html(title: str, paragraphs: list[str]) -> str:
    body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    return f"<!DOCTYPE html><html lang=\"en\"><head><title>{escape(title)}</title></head><body><main>" \
           f"<h1>{escape(title)}</h1>{body}</main></body></html>"


@pytest.fixture(scope="module")
def pages() -> dict[str, dict]:
    article = _Prose(random.Random(1), "climate").paragraphs(300)
    commentary = _Prose(random.Random(2), "space").paragraphs(500)
    half = len(commentary) // 2
    blog = commentary[:half] + article + commentary[half:]
    other = _Prose(random.Random(3), "markets").paragraphs(300)
    return {
        ARTICLE: {"url": ARTICLE, "body": html("Rail line reopens", article), "content_type": "text/html"},
        BLOG: {"url": BLOG, "body": html("What the rail line means", blog), "content_type": "text/html"},
        OTHER: {"url": OTHER, "body": html("Markets this week", other), "content_type": "text/html"},
        MIRROR: {"url": MIRROR, "body": html("Rail line reopens", article) + "<!-- mirror -->",
                 "content_type": "text/html"},
    }


def run(tmp: Path, name: str, pages: dict[str, dict], order: list[str]) -> dict[str, dict]:
    events = [{**pages[url], "fetched_at": T0 + i * 1000} for i, url in enumerate(order)]
    decisions, _, _ = scan(tmp, name, write(tmp / f"{name}.in.jsonl", events), env=PARTIAL_ENV)
    return decisions


def test_an_embedded_article_is_named_whether_it_comes_before_or_after(pages: dict[str, dict],
                                                                       tmp_path: Path) -> None:
    before = run(tmp_path, "before", pages, [ARTICLE, OTHER, BLOG])
    after = run(tmp_path, "after", pages, [BLOG, OTHER, ARTICLE])
    for decisions in (before, after):
        blog = decisions[BLOG]
        assert blog["verdict"] == "unique" and blog["duplicate_of"] is None  # a partial copy is no duplicate
        assert [p["url"] for p in blog["partial_of"]] == [ARTICLE]
        assert blog["partial_of"][0]["containment"] >= 0.8
        assert decisions[ARTICLE]["partial_of"] == [] and decisions[OTHER]["partial_of"] == []
    assert before[BLOG]["partial_of"] == after[BLOG]["partial_of"]
    assert after[BLOG]["revision"] == 2  # decided alone first, then revised when the article arrived
    summary = run_scan(Settings(partial_copies=True), [tmp_path / "after.in.jsonl"], state=tmp_path / "again.state",
                       out=tmp_path / "again.jsonl", progress=False)
    assert summary.partial_copies == 1  # the scan summary counts the blog post


def test_the_best_ranked_copy_of_the_article_is_named_and_exact_copies_name_nothing(pages: dict[str, dict],
                                                                                    tmp_path: Path) -> None:
    decisions = run(tmp_path, "mirror", pages, [BLOG, MIRROR, ARTICLE])
    assert decisions[MIRROR]["verdict"] == "exact_duplicate"  # same main text, ranked after the article
    assert [p["url"] for p in decisions[BLOG]["partial_of"]] == [ARTICLE]  # its text's best-ranked page
    assert decisions[MIRROR]["partial_of"] == []


def test_explain_shows_each_pages_containment_in_the_other_and_who_names_whom(pages: dict[str, dict],
                                                                             tmp_path: Path) -> None:
    path = write(tmp_path / "pair.in.jsonl", [{**pages[url], "fetched_at": T0} for url in (BLOG, ARTICLE)])
    result = explain(load_page(f"{path}#{BLOG}", now_ms=T0), load_page(f"{path}#{ARTICLE}", now_ms=T0),
                     CoreSettings(partial_copies=True))
    c = result.containment
    assert c is not None
    assert c.holder == "A" and c.names == "A"  # the blog post holds the article and names it
    assert c.exact_b_in_a is not None and c.exact_b_in_a >= 0.95 and abs(c.b_in_a - c.exact_b_in_a) < 0.2
    assert c.exact_a_in_b is not None and c.exact_a_in_b < 0.7 and abs(c.a_in_b - c.exact_a_in_b) < 0.1
    assert c.shingles_a > c.shingles_b and c.shared_bands and c.threshold == 0.5
    decisions, _, _ = scan(tmp_path, "pair", path, env=PARTIAL_ENV)
    assert decisions[BLOG]["partial_of"][0]["containment"] == round(c.b_in_a, 4)  # what scan said
    console = Console(record=True, width=400, color_system=None)
    render(result, console)
    text = console.export_text()
    assert "Containment: B in A" in text and "A's partial_of names B" in text


def test_explain_with_partial_copies_off_says_what_they_would_find(pages: dict[str, dict], tmp_path: Path) -> None:
    path = write(tmp_path / "pair.in.jsonl", [{**pages[url], "fetched_at": T0} for url in (BLOG, ARTICLE)])
    a, b = load_page(f"{path}#{BLOG}", now_ms=T0), load_page(f"{path}#{ARTICLE}", now_ms=T0)
    on, off = explain(a, b, CoreSettings(partial_copies=True)), explain(a, b, CoreSettings())
    assert on.containment is not None and off.containment is not None
    assert on.containment.enabled and not off.containment.enabled
    assert off.containment.names == on.containment.names == "A"
    assert off.containment.b_in_a == on.containment.b_in_a  # the same figures
    console = Console(record=True, width=400, color_system=None)
    render(off, console)
    text = console.export_text()
    assert "partial copies are off (NEARDUP_PARTIAL_COPIES); with them on, A's partial_of would name B" in text
    assert "A's partial_of names B" not in text


def test_host_signals_count_partial_copies_of_other_hosts_pages() -> None:
    base = dict(duplicate_of=None, distance=None, simhash=None, text_sha256=None, body_sha256=None, reason="r",
                complete=True, fetched_at="2026-12-05T10:00:00Z", decided_at="2026-12-05T10:00:00Z")
    alone = Decision(url=BLOG, host="blog.example", verdict="unique", revision=1, **base)
    revised = Decision(url=BLOG, host="blog.example", verdict="unique", revision=2,
                       partial_of=[{"url": ARTICLE, "containment": 0.97}], **base)
    own = Decision(url="https://blog.example/posts/2", host="blog.example", verdict="unique", revision=1,
                   partial_of=[{"url": "https://www.blog.example/posts/1", "containment": 0.9}], **base)
    state = apply_decision(None, None, alone)
    assert state.partial_copies == 0
    state = apply_decision(state, alone, revised)  # the article arrived: the post moves to the partial copies
    assert state.partial_copies == 1 and state.pages == 1
    state = apply_decision(state, None, own)  # a copy of the same site's page is not counted
    assert state.partial_copies == 1 and state.pages == 2
    assert signal_for(state).partial_copies == 1
