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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response

from neardup_core.testing.crawl_site import HOSTS, START_URLS


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
        "DOWNLOADER_MIDDLEWARES": {"streams.scrapy_loop.NeardupFrontier": 590},
        "SPIDER_MIDDLEWARES": {"streams.scrapy_loop.NeardupItems": 590},
        "NEARDUP_MODE": mode,
    }
    if mode == "kafka":
        settings |= {"EXTENSIONS": {"streams.scrapy.NeardupPublisher": 500}, "NEARDUP_BROKER": broker,
                     "NEARDUP_TOPIC_PREFIX": topic_prefix}
    return settings


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
