"""A real Scrapy crawl of the generated demo site, published by the neardup extension, decided by a worker
on the local broker, and checked against the oracle and `neardup scan` of the same events (G1-G3).

The demo site (`neardup_core/testing/synthetic.py`, one body per URL: a URL's first fetch, so recrawls are
left out) is served by one local HTTP server on a free port that Scrapy reaches as its HTTP proxy: every
request names its host and the server answers by that host and path, so the crawl asks for
`http://www.dailyledger.example/articles/...` and its responses carry those URLs (the demo's https URLs
are served as http: the server speaks no TLS). Each host lists its pages at `/urls.txt` (text/plain, so
not published); each page says its importance in an `X-Importance` header, which the crawl's
`NEARDUP_IMPORTANCE` callable reads. What scan decides is what the extension produced: the records read
back from `pages.fetched`."""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from neardup_core.testing.synthetic import generate_crawl
from streams.dev import Cluster, Record, all_complete, latest_by_url
from tests.integration.checks import check_g1_g3, scan_decisions

ROOT = Path(__file__).resolve().parents[2]


def demo_site(seed: int) -> dict[str, dict[str, Any]]:
    """URL (as http) -> the demo crawl's event of its first fetch."""
    site: dict[str, dict[str, Any]] = {}
    for event in generate_crawl(seed=seed):
        url = "http://" + event["url"].removeprefix("https://")
        site.setdefault(url, {**event, "url": url})
    return site


class SiteServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, site: dict[str, dict[str, Any]]) -> None:
        super().__init__(("127.0.0.1", 0), SiteHandler)
        self.site = site
        self.served: Counter[str] = Counter()
        self.unknown: list[str] = []
        self.lock = threading.Lock()
        self.hosts = sorted({urlsplit(u).hostname or "" for u in site})

    def listing(self, host: str) -> bytes:
        return "".join(f"{u}\n" for u in self.site if urlsplit(u).hostname == host).encode()


class SiteHandler(BaseHTTPRequestHandler):
    server: SiteServer

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = self.path if self.path.startswith("http://") else f"http://{self.headers['Host']}{self.path}"
        parts = urlsplit(url)
        event = self.server.site.get(url)
        if parts.path == "/urls.txt":
            self.answer(200, self.server.listing(parts.hostname or ""), {"Content-Type": "text/plain"})
        elif event is None:
            with self.server.lock:
                self.server.unknown.append(url)
            self.answer(404, b"<html><body>not here</body></html>", {"Content-Type": "text/html"})
        else:
            with self.server.lock:
                self.server.served[url] += 1
            headers = {"Content-Type": event["content_type"]}
            if event.get("importance") is not None:
                headers["X-Importance"] = str(event["importance"])
            self.answer(200, event["body"].encode(), headers)

    def answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        return None


def canonical(duplicate_of: dict[str, str | None], url: str) -> str:
    """Where following `duplicate_of` from `url` ends: the page its cluster keeps."""
    seen = {url}
    while (target := duplicate_of.get(url)) is not None:
        assert target not in seen, f"duplicate_of cycles through {url}"
        seen.add(target)
        url = target
    return url


@pytest.fixture
def site_server() -> Iterator[SiteServer]:
    server = SiteServer(demo_site(seed=16))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_a_scrapy_crawl_is_decided_as_scan_decides_its_pages(pipeline: Cluster, site_server: SiteServer,
                                                             tmp_path: Path) -> None:
    site = site_server.site
    pipeline.start_worker("a")
    pipeline.wait_balanced(["a"])
    stats_path = tmp_path / "scrapy-stats.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}  # the settings below only
    crawl = subprocess.run(
        [sys.executable, "-m", "tests.integration.scrapy_crawl", "--proxy",
         f"http://127.0.0.1:{site_server.server_address[1]}", "--hosts", ",".join(site_server.hosts),
         "--broker", pipeline.bootstrap, "--topic-prefix", pipeline.topic_prefix, "--stats", str(stats_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    (tmp_path / "scrapy.log").write_text(crawl.stderr)
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    stats = json.loads(stats_path.read_text())
    assert stats["finish_reason"] == "finished", stats
    assert site_server.unknown == [] and site_server.served == Counter(dict.fromkeys(site, 1)), \
        "Scrapy fetched every page of the site once, and nothing else"
    assert stats["neardup/produced"] == stats["neardup/delivered"] == len(site), stats
    assert "neardup/delivery_errors" not in stats and "neardup/importance_errors" not in stats, stats
    assert stats["neardup/not_html"] == len(site_server.hosts), "the /urls.txt listings are not published"

    records: list[Record] = []
    pipeline.follow("pages.fetched", records.append, lambda: len(records) >= len(site), settle_s=2)
    events = [orjson.loads(r.value) for r in records]
    assert [r.key for r in records] == [e["url"].encode() for e in events], "keyed by URL"
    assert sorted(e["url"] for e in events) == sorted(site), "one event per page, under the URL fetched"
    for event in events:
        page = site[event["url"]]
        assert event["status"] == 200 and event["content_type"] == event["headers"]["Content-Type"] \
            == page["content_type"]
        assert base64.b64decode(event["body_b64"]) == page["body"].encode()
        assert event.get("importance") == page.get("importance")

    decisions = pipeline.read_until("dedup.decisions", all_complete(set(site)))
    check_g1_g3(pipeline, events, decisions)  # G1, G2 against the oracle, G3: scan's verdicts

    # duplicate_of itself depends on the order pages arrive in (docs/concepts.md, "The decision rule"), and the worker
    # reads its partitions in another order than scan reads the file; where it leads does not, on this site
    latest = latest_by_url(decisions)
    (tmp_path / "scan").mkdir()
    scanned = scan_decisions(events, tmp_path / "scan")
    streamed = {u: d["duplicate_of"] for u, d in latest.items()}
    by_scan = {u: said[1] for u, said in scanned.items()}
    ends = {u: (canonical(streamed, u), canonical(by_scan, u)) for u in latest}
    differ = [(u, a, b) for u, (a, b) in ends.items() if a != b]
    same = sum(streamed[u] == by_scan[u] for u in latest)
    print(f"duplicate_of: {same} of {len(latest)} the same as scan's; canonical (the end of the chain): "
          f"{len(latest) - len(differ)} the same")
    assert not differ, f"G3: {len(differ)} URLs lead to another canonical than in scan: {differ[:5]}"
    verdicts = Counter(d["verdict"] for d in latest.values())
    assert verdicts["exact_duplicate"] > 20 and verdicts["near_duplicate"] > 5 and verdicts["unique"] > 50, verdicts


def test_a_topic_missing_on_the_broker_stops_the_publishing(pipeline: Cluster, unique_prefix: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """What the extension checks when the spider opens, on the real broker: the pipeline's topic is there,
    a topic under another prefix is not (and nothing is sent to a broker that would create it)."""
    from scrapy.utils.test import get_crawler

    from streams.scrapy import PagePublisher
    from streams.settings import Settings

    stats = get_crawler().stats
    assert stats is not None
    assert PagePublisher(Settings(broker=pipeline.bootstrap, topic_prefix=pipeline.topic_prefix), stats).check_topic()
    missing = PagePublisher(Settings(broker=pipeline.bootstrap, topic_prefix=f"{unique_prefix}-none."), stats)
    with caplog.at_level(logging.ERROR, logger="streams.scrapy"):
        assert not missing.check_topic()
    assert any(f"{unique_prefix}-none.pages.fetched does not exist" in r.getMessage() for r in caplog.records)
