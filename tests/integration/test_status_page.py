"""The worker's status page against a real worker: `/status.json` agrees with `/metrics` and with what
the worker published (decisions, dead letters), and `/` rendered in headless Chromium shows the same.

With NEARDUP_SCREENSHOT_DIR set, the test also saves the page's screenshot there as `status.png`
(how docs/status.png is made: `NEARDUP_SCREENSHOT_DIR=docs pytest tests/integration/test_status_page.py`).
"""

from __future__ import annotations

import os
import shutil
import struct
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import lxml.html
import orjson

from neardup_core.testing.synthetic import TRAP, generate_crawl
from streams.dev import Cluster, all_complete
from streams.web.status import RECENT_REJECTIONS, histogram_quantile, reason_kind
from tests.browser import render, screenshot
from tests.integration.test_pipeline import bad_events

HOSTILE_KEY = b"https://bad.example/<img src=x onerror=alert(1)>"
"""The key of an event that is not JSON: the page must show it as text, not as markup."""


def get(pipeline: Cluster, name: str, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{pipeline.ports[name]}{path}", timeout=30) as resp:
        body: bytes = resp.read()
        return body


def status_of(pipeline: Cluster, name: str) -> dict[str, Any]:
    status: dict[str, Any] = orjson.loads(get(pipeline, name, "/status.json"))
    return status


def by_label(samples: dict[str, float], metric: str, label: str) -> dict[str, float]:
    """`{label value: sample}` of one metric from `Cluster.metrics`' `name{k=v,...}` keys."""
    out = {}
    for key, value in samples.items():
        name, _, labels = key.partition("{")
        if name == metric:
            out[dict(kv.split("=", 1) for kv in labels.rstrip("}").split(","))[label]] = value
    return out


def wait_for(pipeline: Cluster, condition: Any, what: str, timeout_s: float = 240.0) -> dict[str, Any]:
    """Polls /status.json until `condition(status)` holds (the hosts agent works after the decisions)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = status_of(pipeline, "a")
        if condition(status):
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"status never showed {what}: {status}")
        pipeline.check_alive()
        time.sleep(1)


def figures(dom: str) -> dict[str, str]:
    """The page's figures by their `/status.json` path (`data-k`), as shown (first of each path)."""
    doc = lxml.html.fromstring(dom)
    out: dict[str, str] = {}
    for el in doc.xpath("//*[@data-k]"):
        out.setdefault(el.get("data-k"), el.text_content().strip())
    return out


def number(shown: str) -> int:
    return int(shown.replace(",", ""))


def test_status_page_agrees_with_the_metrics_and_the_topics(pipeline: Cluster, tmp_path: Path) -> None:
    events = generate_crawl(seed=21)
    bad = [(k, v) for k, v, _ in bad_events()] + [(HOSTILE_KEY, b"<not json>")]
    mixed: list[tuple[bytes | None, bytes]] = [(e["url"].encode(), orjson.dumps(e)) for e in events]
    for i, (key, value) in enumerate(bad):
        mixed.insert((i * 37) % len(mixed), (key, value))
    pipeline.start_worker("a")
    pipeline.wait_balanced(["a"])
    pipeline.publish([v for _, v in mixed], keys=[k for k, _ in mixed])
    urls = {e["url"] for e in events}
    decisions = pipeline.read_until("dedup.decisions", all_complete(urls))
    rejected = pipeline.read_until("pages.rejected", lambda msgs: len(msgs) >= len(bad), settle_s=2)
    assert len(rejected) == len(bad)

    def trap_of(status: dict[str, Any]) -> dict[str, Any] | None:
        return next((h for h in status["hosts"] if h["host"] == TRAP), None)

    seen: list[dict[str, Any]] = []

    def settled(status: dict[str, Any]) -> bool:
        """At least the decisions read, the trap flagged, no page pending, and the counts and hosts as
        they were a second ago."""
        seen.append(status)
        trap = trap_of(status)
        return (status["totals"]["decisions"] >= len(decisions) and trap is not None and trap["penalty"] >= 0.5
                and status["pending_pages"] == 0 and len(seen) > 1 and seen[-2]["hosts"] == status["hosts"]
                and seen[-2]["totals"] == status["totals"])

    status = wait_for(pipeline, settled, "every decision, the trap host flagged and the hosts settled")
    samples = pipeline.metrics("a")
    if status["totals"]["decisions"] > len(decisions):  # revisions that came after the read settled
        decisions = pipeline.read_until("dedup.decisions", lambda msgs: len(msgs) >= status["totals"]["decisions"])

    # totals and verdicts: the page's, the registry's, and what reached the decisions topic
    totals = status["totals"]
    assert totals["pages"] == samples["neardup_pages_total"] == len(events) + len(bad)
    assert totals["decisions"] == len(decisions)
    published = Counter(d["verdict"] for d in decisions)
    assert status["verdicts"] == dict(published) == {
        v: int(n) for v, n in by_label(samples, "neardup_decisions_total", "verdict").items() if n}
    assert {"unique", "exact_duplicate", "near_duplicate"} <= set(status["verdicts"])
    assert totals["revisions"] == samples["neardup_revisions_total"] == sum(1 for d in decisions if d["revision"] > 1)
    assert totals["urls_decided"] == sum(1 for d in decisions if d["revision"] == 1) >= len(urls)
    assert totals["provisional"] == samples["neardup_provisional_decisions_total"] == 0  # timeout 120 s
    assert status["pending_pages"] == samples["neardup_pending_pages"] == 0

    # latency: the quantiles of the registry's histogram
    buckets = tuple(sorted((float(le), n) for le, n in by_label(
        samples, "neardup_decision_seconds_bucket", "le").items()))
    since = status["latency"]["since_start"]
    assert since["count"] == samples["neardup_decision_seconds_count"] > 0
    assert since["p50_s"] == round(histogram_quantile(0.5, buckets) or -1, 4)
    assert since["p99_s"] == round(histogram_quantile(0.99, buckets) or -1, 4)
    assert 0 < since["p50_s"] <= since["p99_s"]

    # rejections: by stage as the registry counts them, by reason as the dead letters say
    stages = {s: int(n) for s, n in by_label(samples, "neardup_rejects_total", "stage").items()}
    assert status["rejections"]["by_stage"] == stages == dict(Counter(r["stage"] for r in rejected))
    assert totals["rejected"] == len(bad)
    reasons = Counter((r["stage"], reason_kind(r["error"])) for r in rejected)
    assert {(x["stage"], x["reason"]): x["count"] for x in status["rejections"]["by_reason"]} == reasons
    recent = status["rejections"]["recent"]
    assert len(recent) == min(len(bad), RECENT_REJECTIONS)
    assert {x["reason"] for x in recent} <= {r["error"][:300] for r in rejected}
    assert any(x["key"] == HOSTILE_KEY.decode() for x in recent)

    # partitions: what /health says is assigned; pages.fetched read to its end
    health = orjson.loads(get(pipeline, "a", "/health"))
    shown = {f"{p['topic']}:{p['partition']}" for p in status["partitions"]}
    assert shown == set(health["assigned"])
    sources = [p for p in status["partitions"] if p["role"] == "source"]
    assert status["assigned_partitions"] == len(sources) == samples["neardup_assigned_partitions"]
    fetched = [p for p in sources if p["topic"] == pipeline.topic("pages.fetched")]
    assert len(fetched) == pipeline.partitions
    assert sum(p["highwater"] for p in fetched) == len(mixed)
    assert all(p["lag"] == 0 and p["position"] == p["highwater"] for p in fetched)
    lag = by_label({k: v for k, v in samples.items() if pipeline.topic("pages.fetched") in k},
                   "neardup_consumer_lag", "partition")
    assert lag == {str(p["partition"]): 0 for p in fetched}

    # hosts: the trap flagged with its session-id rule; the honest hosts low
    trap = trap_of(status)
    assert trap is not None
    assert any(r["kind"] == "ignore_query_param" and r["param"] == "sid" for r in trap["url_rules"]), trap
    penalties = [h["penalty"] for h in status["hosts"]]
    assert penalties == sorted(penalties, reverse=True)
    assert all(h["penalty"] <= 0.1 for h in status["hosts"] if h["host"] == "herald.example")

    # the page in Chromium shows the same figures as /metrics right after it
    dom = render(f"http://127.0.0.1:{pipeline.ports['a']}/")
    samples = pipeline.metrics("a")
    shown_figures = figures(dom)
    assert number(shown_figures["totals.pages"]) == samples["neardup_pages_total"]
    assert number(shown_figures["totals.urls_decided"]) == (
        sum(by_label(samples, "neardup_decisions_total", "verdict").values()) - samples["neardup_revisions_total"])
    for verdict, n in by_label(samples, "neardup_decisions_total", "verdict").items():
        if n:
            assert number(shown_figures[f"verdicts.{verdict}"]) == n, verdict
    for stage, n in stages.items():
        assert number(shown_figures[f"rejections.by_stage.{stage}"]) == n
    assert number(shown_figures["totals.rejected"]) == sum(stages.values())
    assert number(shown_figures["pending_pages"]) == samples["neardup_pending_pages"]
    assert number(shown_figures["assigned_partitions"]) == samples["neardup_assigned_partitions"]
    assert number(shown_figures["latency.since_start.count"]) == samples["neardup_decision_seconds_count"]
    doc = lxml.html.fromstring(dom)
    hosts = [row.get("data-host") for row in doc.xpath("//tr[@data-host]")]
    assert hosts == [h["host"] for h in status["hosts"]]
    assert "ignore_query_param: sid" in doc.xpath(f"//tr[@data-host='{TRAP}']")[0].text_content()
    rows = [[td.text_content() for td in row.xpath("td")] for row in doc.xpath("//tr[@data-reason]")]
    assert [(s, r, int(n.replace(",", ""))) for s, r, n in rows] == [
        (x["stage"], x["reason"], x["count"]) for x in status["rejections"]["by_reason"]]
    assert not doc.xpath("//img") and HOSTILE_KEY.decode() in doc.text_content()  # escaped, shown as text

    png = screenshot(f"http://127.0.0.1:{pipeline.ports['a']}/", tmp_path / "status.png", 1280, 1500)
    with png.open("rb") as fh:
        head = fh.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1280, 1500)
    out = os.environ.get("NEARDUP_SCREENSHOT_DIR")
    if out:
        shutil.copy(png, Path(out) / "status.png")
