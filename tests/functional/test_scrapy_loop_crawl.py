"""A real Scrapy crawl of the test site (`neardup_core/testing/crawl_site.py`), plain and with neardup's frontier
and items middlewares in embedded mode with the defaults: fewer fetches (on the trap host and on the whole site),
every distinct main text still reached, at most 1% of the items emitted duplicates (issue 23's bar). A third
crawl follows duplicates' links and holds no item (the defaults before 2026-12-05): fewer fetches too, and every
duplicate item it emits counted. The table of the crawls is printed (`pytest -s`); timings are measured, never
asserted on. The Kafka mode's crawl is tests/integration/test_scrapy_loop_kafka.py."""

from __future__ import annotations

import pytest

from tests.integration.site_crawl import CrawlResult, run_crawl, savings_table

FOLLOW_NO_HOLD = {"NEARDUP_FOLLOW_DUPLICATES": True, "NEARDUP_ITEM_HOLD_S": 0}
"""The defaults before 2026-12-05: a duplicate page's links followed, a unique page's items out at once."""


@pytest.fixture(scope="module")
def crawls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CrawlResult]:
    work = tmp_path_factory.mktemp("crawls")
    out = {"plain": run_crawl("plain", work, label="plain Scrapy"),
           "embedded": run_crawl("embedded", work, label="embedded, defaults"),
           "follow": run_crawl("embedded", work, settings=FOLLOW_NO_HOLD,
                               label="embedded, follow duplicates, no hold")}
    print("\n" + savings_table(list(out.values())))
    return out


def test_the_plain_crawl_meets_every_kind_of_waste(crawls: dict[str, CrawlResult]) -> None:
    plain = crawls["plain"]
    assert plain.stats["finish_reason"] == "finished"
    assert not plain.missed, "a plain crawl reaches the whole site"
    assert plain.trap_fetched >= plain.site.trap_days, "it walks the whole calendar"
    assert plain.duplicate_items > len(plain.items) / 2, "most of its items are copies"
    for kind in ("?sid=", "?sort=", "/print", "mirror.", "/syndicated/"):
        assert any(kind in url for url in plain.served), kind


@pytest.mark.parametrize("name", ["embedded", "follow"])
def test_embedded_fetches_less_and_reaches_every_text(crawls: dict[str, CrawlResult], name: str) -> None:
    plain, crawl = crawls["plain"], crawls[name]
    stats = crawl.stats
    assert stats["finish_reason"] == "finished"
    assert crawl.missed == set(), "every distinct main text of the site is still reached"
    assert crawl.trap_fetched <= 0.6 * plain.trap_fetched, (crawl.trap_fetched, plain.trap_fetched)
    assert crawl.fetched <= 0.8 * plain.fetched, (crawl.fetched, plain.fetched)
    # what did it: learned rules rewrote session ids and sort orders, normal forms seen were dropped, items of
    # duplicate pages dropped, each counted
    assert stats["neardup/rewritten"] > 0 and stats["neardup/dropped_seen"] > 0, stats
    assert stats["neardup/items_dropped"] > 0, stats
    sid = [sum(n for url, n in c.served.items() if "?sid=" in url) for c in (plain, crawl)]
    assert sid[1] < sid[0] / 2, f"session-id URLs fetched, plain and embedded: {sid}"


def test_the_defaults_emit_one_item_per_text(crawls: dict[str, CrawlResult]) -> None:
    crawl = crawls["embedded"]
    assert crawl.duplicate_items <= 0.01 * len(crawl.items), copies(crawl)
    assert crawl.stats["neardup/links_dropped"] > 0, "a duplicate's links are not followed"
    assert crawl.stats["neardup/verdict/unique"] == len(crawl.items) + crawl.stats.get(
        "neardup/items_revised_early", 0), "one item per unique page, but for those a better copy revised"


def test_without_a_hold_every_duplicate_item_emitted_is_counted(crawls: dict[str, CrawlResult]) -> None:
    """Items go out when their page is decided; a better copy fetched later makes some of them duplicates
    emitted: `neardup/items_revised` counts them (each page's items once)."""
    crawl = crawls["follow"]
    assert "neardup/links_dropped" not in crawl.stats
    assert crawl.duplicate_items <= crawl.stats.get("neardup/items_revised", 0), copies(crawl)


def copies(crawl: CrawlResult) -> dict[str, list[str]]:
    """The URLs of the items emitted per content, where there is more than one."""
    urls: dict[str, list[str]] = {}
    for item in crawl.items:
        urls.setdefault(item["content_id"], []).append(item["url"])
    return {content: found for content, found in urls.items() if len(found) > 1}
