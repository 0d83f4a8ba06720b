"""A Scrapy crawl with the neardup extension, run as its own process by tests/integration/test_scrapy_crawl.py:

    python -m tests.integration.scrapy_crawl --proxy http://127.0.0.1:PORT --hosts a.example,b.example \\
        --broker 127.0.0.1:9092 --topic-prefix p. --stats stats.json

It starts at each host's `/urls.txt` (one URL a line, served as text/plain), fetches every URL listed
through the demo-site server (Scrapy's HTTP proxy, so each request names its host), and publishes every
HTML response with `streams.scrapy.NeardupPublisher`, configured as a Scrapy project's settings.py would
(`EXTENSIONS`, `NEARDUP_BROKER`, `NEARDUP_TOPIC_PREFIX`, and `NEARDUP_IMPORTANCE`: a callable reading the
`X-Importance` header the site sends). Writes the crawl's Scrapy stats as JSON at the end.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response


def importance_header(response: Response) -> float | None:
    """`NEARDUP_IMPORTANCE`: the page's importance as the demo site states it, when it does."""
    value = response.headers.get(b"X-Importance")
    return float(value) if value else None


class DemoSite(scrapy.Spider):
    name = "demo-site"

    def __init__(self, hosts: list[str], proxy: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.proxy = proxy
        self.start_urls = [f"http://{host}/urls.txt" for host in hosts]

    async def start(self) -> Any:
        for url in self.start_urls:
            yield scrapy.Request(url, meta={"proxy": self.proxy}, callback=self.listing)

    def listing(self, response: Response) -> Iterator[scrapy.Request]:
        for line in response.text.splitlines():
            if line.strip():  # every URL once: no dupefilter (it would take ?a&b and ?b&a for one URL)
                yield scrapy.Request(line.strip(), meta={"proxy": self.proxy}, dont_filter=True,
                                     callback=self.page)

    def page(self, response: Response) -> None:
        return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--proxy", required=True)
    parser.add_argument("--hosts", required=True)
    parser.add_argument("--broker", required=True)
    parser.add_argument("--topic-prefix", default="")
    parser.add_argument("--stats", type=Path, required=True)
    args = parser.parse_args()
    process = CrawlerProcess({
        # the lines a Scrapy project adds to its settings.py (docs/scrapy.md)
        "EXTENSIONS": {"streams.scrapy.NeardupPublisher": 500},
        "NEARDUP_BROKER": args.broker,
        "NEARDUP_TOPIC_PREFIX": args.topic_prefix,
        "NEARDUP_IMPORTANCE": importance_header,
        # a quiet, local crawl
        "ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False, "REMOTE_CONTROL_ENABLED": False,
        "CONCURRENT_REQUESTS": 8, "LOG_LEVEL": "INFO",
    })
    crawler = process.create_crawler(DemoSite)
    process.crawl(crawler, hosts=args.hosts.split(","), proxy=args.proxy)
    process.start()
    assert crawler.stats is not None
    args.stats.write_text(json.dumps(crawler.stats.get_stats(), default=str, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
