"""The loop's Scrapy components on a crawler of their own (no crawl, no network): settings checked, the frontier's
rewrite, drop, priority and budget on learned signals, the items middleware's drop and mark; embedded mode."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from neardup_core.settings import SettingError
from streams.scrapy import CANONICAL_FIELD, LoopOptions, NeardupFrontier, NeardupItems, read_loop_settings

SPIDER = Spider(name="t")


def article(title: str, words: str) -> bytes:
    text = " ".join(f"{words} sentence number {i} tells the story of {title} in the valley." for i in range(12))
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1><p>{text}</p></article>" \
           f"</body></html>".encode()


def story(n: int) -> bytes:
    """An article whose text shares no word with another `story`'s (`article`'s differ in one word: near
    duplicates of each other)."""
    words = " ".join(hashlib.sha256(f"{n}/{i}".encode()).hexdigest()[:7] for i in range(160))
    return article(f"Story {n}", words)


def components(settings: dict[str, Any] | None = None) -> tuple[NeardupFrontier, NeardupItems]:
    """The two middlewares on one crawler; items not held (a hold waits on Twisted's reactor, which these tests
    do not run: the crawls of tests/functional and tests/integration hold them)."""
    crawler = get_crawler(Spider, {"NEARDUP_MODE": "embedded", "NEARDUP_ITEM_HOLD_S": 0, **(settings or {})})
    return NeardupFrontier.from_crawler(crawler), NeardupItems.from_crawler(crawler)


def fetch(frontier: NeardupFrontier, url: str, body: bytes, *, check: bool = True) -> Request:
    """A request through the frontier (asserted to pass, with `check`) and its response decided."""
    request = Request(url)
    try:
        passed = frontier.process_request(request, SPIDER) is None
    except IgnoreRequest:
        passed = False
    assert passed or not check
    frontier.process_response(request, HtmlResponse(url, body=body, request=request,
                                                    headers={"Content-Type": "text/html; charset=utf-8"}), SPIDER)
    return request


def stat(frontier: NeardupFrontier, name: str) -> int:
    return int(frontier.stats.get_value(f"neardup/{name}", 0))


@pytest.mark.parametrize(("name", "value", "rule"), [
    ("NEARDUP_MODE", "both", "embedded, kafka"), ("NEARDUP_PRIORITY_STEP", "high", "integer"),
    ("NEARDUP_PRIORITY_STEP", -1, "from 0 to 1000"), ("NEARDUP_DUPLICATE_ITEMS", "hide", "drop, mark, keep"),
    ("NEARDUP_DECISION_WAIT_S", "nan", "from 0 to 3600"), ("NEARDUP_ITEM_HOLD_S", "soon", "seconds"),
    ("NEARDUP_TRAP_PENALTY", 2, "from 0 to 1"), ("NEARDUP_APPLY_RULES", "maybe", "True or False"),
])
def test_a_bad_setting_is_refused_by_name(name: str, value: object, rule: str) -> None:
    with pytest.raises(SettingError, match=rule) as caught:
        read_loop_settings(Settings({name: value}))
    assert name in str(caught.value)


def test_settings_defaults_and_a_state_dir_only_in_embedded_mode() -> None:
    defaults = read_loop_settings(Settings())
    assert defaults == LoopOptions()
    assert (defaults.follow_duplicates, defaults.item_hold_s) == (False, 2.0), "what the measured crawl needs"
    assert read_loop_settings(Settings({"NEARDUP_MODE": "kafka"})).item_hold_s == 3.0, "decisions come back later"
    given = read_loop_settings(Settings({"NEARDUP_MODE": "kafka", "NEARDUP_ITEM_HOLD_S": "0",
                                         "NEARDUP_FOLLOW_DUPLICATES": "True", "NEARDUP_DUPLICATE_ITEMS": "mark"}))
    assert (given.item_hold_s, given.follow_duplicates, given.duplicate_items) == (0.0, True, "mark")
    with pytest.raises(SettingError, match="NEARDUP_STATE_DIR"):
        read_loop_settings(Settings({"NEARDUP_MODE": "kafka", "NEARDUP_STATE_DIR": "state"}))


def test_a_learned_session_parameter_rewrites_and_drops_what_was_fetched(caplog: pytest.LogCaptureFixture) -> None:
    frontier, _ = components()
    fetch(frontier, "http://news.example/story0", article("Story 0", "Story 0 words"))
    assert frontier.process_request(Request("http://news.example/story0?sid=a0"), SPIDER) is None, \
        "no rule before the evidence"
    for i in range(1, 5):  # the session-id copies are fetched to learn from (the frontier rewrites the later ones)
        body = article(f"Story {i}", f"Story {i} words")
        fetch(frontier, f"http://news.example/story{i}", body)
        fetch(frontier, f"http://news.example/story{i}?sid=a{i}", body, check=False)
    before = stat(frontier, "rewritten")
    with caplog.at_level(logging.DEBUG, logger="streams.scrapy"):
        rewritten = frontier.process_request(Request("http://news.example/story9?sid=zz"), SPIDER)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG] == [
        "neardup: http://news.example/story9?sid=zz rewritten to http://news.example/story9 by the rules of "
        "news.example"]
    assert isinstance(rewritten, Request) and rewritten.url == "http://news.example/story9"
    assert stat(frontier, "rewritten") == before + 1
    assert frontier.process_request(rewritten, SPIDER) is None, "the normal form itself is fetched"
    with pytest.raises(IgnoreRequest):
        frontier.process_request(Request("http://news.example/story9"), SPIDER)
    with pytest.raises(IgnoreRequest):  # fetched before the rule was learned, under its session id
        frontier.process_request(Request("http://news.example/story1?sid=b", meta={"neardup_rewritten_from": "x"}),
                                 SPIDER)
    assert stat(frontier, "dropped_seen") >= 2
    retry = Request("http://news.example/story9", dont_filter=True)  # asked for again on purpose
    assert frontier.process_request(retry, SPIDER) is None


def test_the_normal_form_is_fetched_once_when_only_a_variant_was_fetched_before_the_rule() -> None:
    """A session-id URL fetched before the rule was learned does not stand for the URL without it: that one
    ranks better (fewer parameters), so it is fetched, once; dropping it left the worse copy the canonical."""
    frontier, _ = components()
    early = fetch(frontier, "http://news.example/story7?sid=early", story(7))
    for i in range(5):
        fetch(frontier, f"http://news.example/story{i}", story(i))
        fetch(frontier, f"http://news.example/story{i}?sid=a{i}", story(i), check=False)
    clean = fetch(frontier, "http://news.example/story7", story(7))
    assert early.meta["neardup"]["verdict"] == "unique" and clean.meta["neardup"]["verdict"] == "unique"
    assert frontier.loop.source.canonical(early.url) == clean.url, "the clean URL is the copy to keep"
    rewritten = frontier.process_request(Request("http://news.example/story7?sid=late"), SPIDER)
    assert isinstance(rewritten, Request) and rewritten.url == clean.url
    with pytest.raises(IgnoreRequest):
        frontier.process_request(rewritten, SPIDER)


def test_a_calendar_trap_is_cut_by_its_rule_or_by_its_budget() -> None:
    def calendar(frontier: NeardupFrontier, days: Iterable[int]) -> None:
        for day in days:
            fetch(frontier, f"http://cal.example/calendar/2026-03-{day:02d}",
                  article(f"Events on 2026-03-{day:02d}", "No events are listed on this day"), check=False)

    by_rule, _ = components()
    calendar(by_rule, range(1, 9))
    with pytest.raises(IgnoreRequest):
        by_rule.process_request(Request("http://cal.example/calendar/2026-04-17"), SPIDER)

    by_budget, _ = components({"NEARDUP_APPLY_RULES": False})
    calendar(by_budget, range(1, 31))
    signal = by_budget.loop.source.host_signal("cal.example")
    assert signal is not None and signal.penalty >= 0.5
    lowered = by_budget.process_request(Request("http://cal.example/calendar/2026-05-01", priority=3), SPIDER)
    assert stat(by_budget, "dropped_seen") == 0 and stat(by_budget, "rewritten") == 0, "rules were not applied"
    assert isinstance(lowered, Request) and lowered.priority == 3 - int(signal.penalty * 10) and lowered.dont_filter
    passed = dropped = 0
    dropped_before, lowered_before = stat(by_budget, "dropped_budget"), stat(by_budget, "deprioritised")
    for day in range(1, 29):
        request = Request(f"http://cal.example/calendar/2026-06-{day:02d}", meta={"neardup_requeued": True})
        try:
            passed += by_budget.process_request(request, SPIDER) is None
        except IgnoreRequest:
            dropped += 1
    assert passed + dropped == 28 and abs(passed - 28 * signal.budget_factor) <= 1.5, (passed, signal.budget_factor)
    assert stat(by_budget, "dropped_budget") - dropped_before == dropped > 0
    assert stat(by_budget, "deprioritised") == lowered_before, "a request scheduled again once is not lowered again"


def test_a_sound_host_below_the_trap_penalty_is_left_alone() -> None:
    frontier, _ = components()
    fetch(frontier, "http://news.example/a", article("A", "Alpha"))
    fetch(frontier, "http://news.example/a/print", article("A", "Alpha"))
    signal = frontier.loop.source.host_signal("news.example")
    assert signal is not None and 0 < signal.penalty < 0.5
    assert frontier.process_request(Request("http://news.example/b"), SPIDER) is None


async def _outputs(items: NeardupItems, response: HtmlResponse, outputs: list[Any]) -> list[Any]:
    async def result() -> AsyncIterator[Any]:
        for out in outputs:
            yield out

    return [out async for out in items.process_spider_output(response, result(), SPIDER)]


@pytest.mark.parametrize("action", ["drop", "mark", "keep"])
def test_items_of_a_duplicate_page_are_dropped_or_marked_and_its_links_kept(action: str) -> None:
    frontier, items = components({"NEARDUP_DUPLICATE_ITEMS": action, "NEARDUP_FOLLOW_DUPLICATES": True})
    original = fetch(frontier, "http://news.example/a", article("A", "Alpha"))
    copy = fetch(frontier, "http://news.example/a?ref=feed", article("A", "Alpha"))
    assert copy.meta["neardup"] == {"verdict": "exact_duplicate", "duplicate_of": "http://news.example/a",
                                    "canonical": "http://news.example/a"}
    link = Request("http://news.example/b")
    copy_response = HtmlResponse(copy.url, body=b"", request=copy)
    out = asyncio.run(_outputs(items, copy_response, [{"title": "A"}, link]))
    expected: dict[str, list[Any]] = {"drop": [link], "mark": [link, {"title": "A", CANONICAL_FIELD: original.url}],
                                      "keep": [link, {"title": "A"}]}
    assert out == expected[action]
    assert asyncio.run(_outputs(items, HtmlResponse(original.url, body=b"", request=original),
                                [{"title": "A"}])) == [{"title": "A"}], "the canonical's items go out"


def test_a_duplicate_s_links_are_dropped_when_not_followed() -> None:
    frontier, items = components()  # the default
    fetch(frontier, "http://news.example/a", article("A", "Alpha"))
    copy = fetch(frontier, "http://mirror.example/a", article("A", "Alpha"))
    out = asyncio.run(_outputs(items, HtmlResponse(copy.url, body=b"", request=copy),
                               [Request("http://mirror.example/b"), {"title": "A"}]))
    assert out == [] and stat(frontier, "links_dropped") == 1 and stat(frontier, "items_dropped") == 1


def test_a_state_dir_carries_what_was_learned_to_the_next_crawl(tmp_path: Path) -> None:
    first, _ = components({"NEARDUP_STATE_DIR": str(tmp_path / "state")})
    for i in range(5):
        body = article(f"Story {i}", f"Story {i} words")
        fetch(first, f"http://news.example/story{i}", body)
        fetch(first, f"http://news.example/story{i}?sid=a{i}", body, check=False)
    first.loop.source.close()
    second, _ = components({"NEARDUP_STATE_DIR": str(tmp_path / "state")})
    rewritten = second.process_request(Request("http://news.example/story7?sid=q"), SPIDER)
    assert isinstance(rewritten, Request) and rewritten.url == "http://news.example/story7"
    second.loop.source.close()
