"""The synthetic crawl: deterministic, well-formed, and its truth matches its content."""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from datetime import datetime, timedelta

import orjson
import pytest
from lxml import html

from neardup_core.fingerprint.features import shingle_features
from neardup_core.fingerprint.simhash import hamming, simhash64
from neardup_core.hosts.urls import host_of, query_params
from neardup_core.testing.synthetic import (
    AGGREGATOR,
    ARCHIVE,
    BLOG,
    CONTENT_TYPE,
    HERALD,
    NEWS,
    TRAP,
    generate_crawl,
    generate_crawl_with_truth,
    truth_decisions,
    write_jsonl,
)

EVENTS, TRUTHS = generate_crawl_with_truth(7)


def main_text(body: str) -> str:
    """The text of the page's <main> (its main content, without the template)."""
    tree = html.fromstring(body)
    main = tree.find(".//main")
    return " ".join((main if main is not None else tree.find(".//body")).text_content().split())


def article_text(body: str) -> str:
    """The paragraphs of the article, without heading, byline and comments."""
    tree = html.fromstring(body)
    return " ".join(p.text_content() for p in tree.xpath("//article/p[not(@class)]"))


def shingles(text: str, k: int = 3) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z]+", text.lower())
    return {tuple(words[i:i + k]) for i in range(len(words) - k + 1)}


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def test_same_seed_same_crawl_other_seed_other_crawl() -> None:
    assert generate_crawl(7) == EVENTS
    other = generate_crawl(8)
    assert other != EVENTS
    assert {e["url"] for e in other} != {e["url"] for e in EVENTS}


def test_events_follow_the_input_schema() -> None:
    assert 300 <= len(EVENTS) <= 1000
    previous = ""
    for event in EVENTS:
        assert set(event) <= {"url", "body", "fetched_at", "status", "content_type", "importance"}
        assert event["url"].startswith("https://") and host_of(event["url"])
        assert event["status"] == 200 and event["content_type"] == CONTENT_TYPE
        assert event["body"].startswith("<!DOCTYPE html>") and event["body"].endswith("</html>")
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["fetched_at"])
        assert datetime.fromisoformat(event["fetched_at"]).utcoffset() == timedelta(0)
        assert event["fetched_at"] >= previous
        previous = event["fetched_at"]
        assert isinstance(event.get("importance", 0.0), float)


def test_scale_grows_the_crawl() -> None:
    bigger = generate_crawl(7, scale=2)
    assert 1.8 * len(EVENTS) <= len(bigger) <= 2.2 * len(EVENTS)
    with pytest.raises(ValueError):
        generate_crawl(7, scale=0)


def test_hosts_and_kinds_are_all_there() -> None:
    hosts = Counter(host_of(t.url) for t in TRUTHS)
    assert set(hosts) == {NEWS, HERALD, BLOG, AGGREGATOR, ARCHIVE, TRAP}
    kinds = Counter(t.kind for t in TRUTHS)
    assert {"original", "variant", "syndicated", "page", "trap", "recrawl"} <= set(kinds)
    variants = {t.variant for t in TRUTHS if t.kind == "variant"}
    assert variants == {"updated", "counter", "ads", "print", "edited", "index", "comments"}


def test_articles_are_long_and_distinct() -> None:
    originals = [article_text(e["body"]) for e, t in zip(EVENTS, TRUTHS, strict=True) if t.kind == "original"]
    assert len(originals) >= 100
    for text in originals:
        assert 150 <= len(text.split()) <= 400
    sets = [shingles(text) for text in originals]
    assert max(len(a & b) / len(a | b) for a, b in itertools.combinations(sets, 2)) < 0.25
    fingerprints = []
    for text in originals:
        features = shingle_features(text)
        fingerprints.append(simhash64(features.hashes, features.weights))
    assert min(hamming(a, b) for a, b in itertools.combinations(fingerprints, 2)) >= 10


def test_copies_carry_the_original_text_in_another_page() -> None:
    by_url = {e["url"]: e for e, t in zip(EVENTS, TRUTHS, strict=True) if t.kind == "original"}
    checked: Counter[str] = Counter()
    for event, truth in zip(EVENTS, TRUTHS, strict=True):
        if truth.kind not in ("variant", "syndicated"):
            continue
        original = by_url[truth.duplicate_of]
        assert event["body"] != original["body"]
        similarity = jaccard(article_text(event["body"]), article_text(original["body"]))
        if truth.kind == "syndicated" or truth.verdict == "exact_duplicate":
            assert article_text(event["body"]) == article_text(original["body"])
        else:
            assert similarity > 0.85
        if truth.kind == "syndicated":
            assert host_of(event["url"]) != host_of(original["url"])
        else:
            assert host_of(event["url"]) == NEWS
        checked[truth.kind] += 1
    assert checked["variant"] >= 21 and checked["syndicated"] >= 10


def test_pages_of_the_paginated_host_differ() -> None:
    pages = {e["url"]: main_text(e["body"]) for e in EVENTS if host_of(e["url"]) == ARCHIVE}
    numbered = {int(query_params(u)["page"][0]): text for u, text in pages.items() if "page=" in u}
    assert sorted(numbered) == list(range(1, 13))
    assert pages[f"https://{ARCHIVE}/list"] == numbered[1]
    for n in range(2, 13):
        assert jaccard(numbered[n], numbered[n - 1]) < 0.2


def test_trap_serves_a_few_pages_under_many_urls() -> None:
    texts: dict[str, set[str]] = defaultdict(set)
    urls: dict[str, set[str]] = defaultdict(set)
    for event, truth in zip(EVENTS, TRUTHS, strict=True):
        if truth.kind == "trap":
            # the calendar heading carries the date: the noise a fingerprint normalises away
            texts[truth.content].add(re.sub(r"\d{4}-\d\d-\d\d", "D", main_text(event["body"])).replace(
                "Calendar for D", "Townhall calendar"))
            urls[truth.content].add(event["url"])
    assert len(texts) == 4
    assert all(len(t) == 1 for t in texts.values())
    assert all(len(u) >= 40 for u in urls.values())
    all_urls = set().union(*urls.values())
    assert any("sid=" in u for u in all_urls) and any("sort=" in u for u in all_urls)
    assert any(re.search(r"/calendar/\d{4}-\d\d-\d\d/", u) for u in all_urls)
    assert any(";jsessionid=" in u for u in all_urls)


def test_truth_points_back_to_earlier_unique_copies() -> None:
    first_seen: dict[str, int] = {}
    verdict_of = {t.url: t.verdict for t in TRUTHS}
    for i, truth in enumerate(TRUTHS):
        first_seen.setdefault(truth.url, i)
        if truth.duplicate_of is None:
            assert truth.verdict == "unique"
        else:
            assert truth.verdict in ("exact_duplicate", "near_duplicate")
            assert first_seen[truth.duplicate_of] < i
            assert verdict_of[truth.duplicate_of] == "unique"
            assert truth.duplicate_of != truth.url


def test_recrawls_fetch_a_url_again_later() -> None:
    fetched: dict[str, list[str]] = defaultdict(list)
    for event in EVENTS:
        fetched[event["url"]].append(event["fetched_at"])
    again = {u: times for u, times in fetched.items() if len(times) > 1}
    assert len(again) == sum(t.kind == "recrawl" for t in TRUTHS)
    assert all(times[0] < times[1] for times in again.values())


def test_truth_decisions_number_revisions_per_url() -> None:
    decisions = truth_decisions(EVENTS, TRUTHS)
    assert [d.url for d in decisions] == [e["url"] for e in EVENTS]
    latest = {d.url: d.revision for d in decisions}
    recrawls = sum(t.kind == "recrawl" for t in TRUTHS)
    assert recrawls > 0
    assert sorted(Counter(latest.values()).items()) == [(1, len(latest) - recrawls), (2, recrawls)]


def test_write_jsonl_round_trips(tmp_path) -> None:
    path = tmp_path / "crawl.jsonl"
    assert write_jsonl(EVENTS, path) == len(EVENTS)
    assert [orjson.loads(line) for line in path.read_bytes().splitlines()] == EVENTS
