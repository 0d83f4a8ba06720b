"""A Scrapy crawl of the test site (`neardup_core/testing/crawl_site.py`), run as its own process, three ways:

    python -m tests.integration.site_crawl --proxy http://127.0.0.1:PORT --mode plain|embedded|kafka \\
        [--broker 127.0.0.1:9092 --topic-prefix p.] --stats stats.json --items items.jsonl

A breadth-first crawl from the news and herald home pages that follows every link within the site's hosts
and yields one item per HTML page (its URL, title and the content id the site states); the site is reached
through `--proxy` (Scrapy's HttpProxyMiddleware, from `http_proxy`). `plain` is Scrapy alone (its
dupefilter, nothing else); `embedded` adds neardup's frontier and items middlewares on an in-process
deduplicator; `kafka` the same middlewares reading the topics back, beside the publisher extension.
Writes the crawl's stats as JSON and its items as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response

from neardup_core.testing.crawl_site import HOSTS, START_URLS, TRAP, CrawlSite, SiteServer

ROOT = Path(__file__).resolve().parents[2]


class SiteSpider(scrapy.Spider):
    name = "test-site"
    allowed_domains = list(HOSTS)
    start_urls = list(START_URLS)

    def parse(self, response: Response) -> Iterator[Any]:
        if not hasattr(response, "css"):
            return
        yield {"url": response.url, "title": response.css("title::text").get(),
               "content_id": response.css('meta[name="content-id"]::attr(content)').get()}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse)


def crawl_settings(mode: str, items: Path, broker: str | None = None, topic_prefix: str = "") -> dict[str, Any]:
    """The crawl's settings: what a Scrapy project's settings.py holds (docs/scrapy.md)."""
    settings: dict[str, Any] = {
        "ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "INFO",
        "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        # breadth-first, as broad crawls run: by depth first, whatever host is idle
        "DEPTH_PRIORITY": 1, "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "FEEDS": {str(items): {"format": "jsonlines", "overwrite": True}},
    }
    if mode == "plain":
        return settings
    settings |= {
        "DOWNLOADER_MIDDLEWARES": {"streams.scrapy.NeardupFrontier": 590},
        "SPIDER_MIDDLEWARES": {"streams.scrapy.NeardupItems": 590},
        "NEARDUP_MODE": mode,
    }
    if mode == "kafka":
        settings |= {"EXTENSIONS": {"streams.scrapy.NeardupPublisher": 500}, "NEARDUP_BROKER": broker,
                     "NEARDUP_TOPIC_PREFIX": topic_prefix}
    return settings


@dataclass(frozen=True)
class CrawlResult:
    """One crawl of the site, measured: by the site's server (what was fetched) and by the items."""

    label: str
    site: CrawlSite
    stats: dict[str, Any]
    items: list[dict[str, Any]]
    served: Counter[str]
    contents: Counter[str]
    wall_s: float

    @property
    def fetched(self) -> int:
        return sum(self.served.values())

    @property
    def trap_fetched(self) -> int:
        return sum(n for url, n in self.served.items() if urlsplit(url).hostname == TRAP)

    @property
    def missed(self) -> set[str]:
        """The site's distinct main texts that no fetch reached."""
        return self.site.content_ids() - set(self.contents)

    @property
    def duplicate_items(self) -> int:
        """Items emitted beyond the first of their content."""
        return len(self.items) - len({item["content_id"] for item in self.items})


def run_crawl(mode: str, workdir: Path, *, label: str | None = None, site: CrawlSite | None = None,
              broker: str | None = None, topic_prefix: str = "", settings: Mapping[str, object] | None = None,
              env: Mapping[str, str] | None = None, timeout_s: float = 600) -> CrawlResult:
    """Serve the site on a fresh server and crawl it in a Scrapy process; what it fetched and emitted."""
    site = site or CrawlSite()
    label = label or mode
    workdir.mkdir(parents=True, exist_ok=True)
    stats_path, items_path = workdir / f"{label}-stats.json", workdir / f"{label}-items.jsonl"
    server = SiteServer(site)
    thread = server.start()
    args = [sys.executable, "-m", "tests.integration.site_crawl", "--proxy", server.proxy, "--mode", mode,
            "--stats", str(stats_path), "--items", str(items_path)]
    if broker is not None:
        args += ["--broker", broker, "--topic-prefix", topic_prefix]
    for name, value in (settings or {}).items():
        args += ["--set", f"{name}={value}"]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_") and k.lower() != "http_proxy"}
    try:
        started = time.monotonic()
        done = subprocess.run(args, cwd=ROOT, env={**clean, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout_s)
        wall_s = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    (workdir / f"{label}-scrapy.log").write_text(done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"the {label} crawl failed ({done.returncode}): {done.stderr[-3000:]}")
    items = [json.loads(line) for line in items_path.read_text().splitlines() if line.strip()]
    return CrawlResult(label, site, json.loads(stats_path.read_text()), items, server.served, server.contents,
                       wall_s)


def savings_table(results: Sequence[CrawlResult]) -> str:
    """The crawls side by side (markdown), each against the first (the plain crawl)."""
    base = results[0]
    total = len(base.site.content_ids())
    lines = ["| crawl | requests fetched | fewer than plain | trap-host fetches | fewer than plain | distinct "
             "texts reached | items emitted | duplicate items | wall time |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(
            f"| {r.label} | {r.fetched} | {1 - r.fetched / base.fetched:.0%} | {r.trap_fetched} | "
            f"{1 - r.trap_fetched / base.trap_fetched:.0%} | {total - len(r.missed)} of {total} | {len(r.items)} | "
            f"{r.duplicate_items} ({r.duplicate_items / max(1, len(r.items)):.1%}) | {r.wall_s:.1f} s |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--proxy", required=True)
    parser.add_argument("--mode", choices=("plain", "embedded", "kafka"), required=True)
    parser.add_argument("--broker")
    parser.add_argument("--topic-prefix", default="")
    parser.add_argument("--stats", type=Path, required=True)
    parser.add_argument("--items", type=Path, required=True)
    parser.add_argument("--set", action="append", default=[], help="NAME=VALUE, a Scrapy setting")
    args = parser.parse_args()
    os.environ["http_proxy"] = args.proxy
    settings = crawl_settings(args.mode, args.items, args.broker, args.topic_prefix)
    for pair in args.set:
        name, _, value = pair.partition("=")
        settings[name] = value
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler)
    process.start()
    assert crawler.stats is not None
    args.stats.write_text(json.dumps(crawler.stats.get_stats(), default=str, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
