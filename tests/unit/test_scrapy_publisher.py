"""The Scrapy extension without a broker: its settings (Scrapy's, else the environment, checked), the event
it makes of a response, its importance rule, and delivery errors counted in Scrapy's stats when the broker
is a closed port. (A real crawl decided by workers: tests/integration/test_scrapy_crawl.py.)"""

from __future__ import annotations

import hashlib
import logging
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, TextResponse
from scrapy.settings import Settings as ScrapySettings
from scrapy.utils.test import get_crawler

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import fingerprint_event
from neardup_core.ingest.event import parse_event
from streams.dev import free_port
from streams.scrapy import NeardupPublisher, PagePublisher, page_event, read_settings
from streams.settings import SettingError, Settings

PAGE = ("<html><head><title>Caf\xe9</title></head><body><article>"
        + "".join(f"<p>The caf\xe9 on the corner of the square opened again this week after {w} months of "
                  "repairs, and the owners said they were glad to see their regular customers.</p>"
                  for w in ("three", "four", "five"))
        + "</article></body></html>").encode("iso-8859-1")


def depth_importance(response: Any) -> float:
    """An importance callable for `NEARDUP_IMPORTANCE` (by its import path): shallower pages rank higher."""
    return 1.0 / (1 + len(urlsplit(response.url).path.strip("/").split("/")))


def response(url: str = "https://cafe.example/news/reopened", *, status: int = 200, body: bytes = PAGE,
             meta: dict[str, Any] | None = None, cls: type = HtmlResponse) -> HtmlResponse:
    headers = {"Content-Type": "text/html; charset=iso-8859-1", "Set-Cookie": ["sid=secret", "b=2"],
               "X-Served-By": ["a", "b"]}
    return cls(url=url, status=status, body=body, headers=headers, request=Request(url, meta=meta or {}))


def test_settings_come_from_scrapy_then_the_environment_and_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUP_SASL_USERNAME", "crawler")
    monkeypatch.setenv("NEARDUP_TOPIC_PREFIX", "from-env.")
    settings, options = read_settings(ScrapySettings({
        "NEARDUP_BROKER": "k1:9092,k2:9093", "NEARDUP_TOPIC_PREFIX": "crawl1.", "NEARDUP_MAX_BODY_BYTES": "1000",
        "NEARDUP_SECURITY_PROTOCOL": "SASL_SSL", "NEARDUP_IMPORTANCE": "0.5", "NEARDUP_CRAWL_ID": "c-1",
        "NEARDUP_PRODUCER_CONFIG": '{"acks": "all"}'}))
    assert (settings.broker, settings.topic("pages.fetched"), settings.max_body_bytes) == \
        ("k1:9092,k2:9093", "crawl1.pages.fetched", 1000)
    conf = settings.confluent_config()
    assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.username"] == "crawler"  # passed through
    assert (options.importance, options.crawl_id, options.flush_timeout_s, dict(options.producer_config)) == \
        (0.5, "c-1", 60.0, {"acks": "all"})
    by_path = read_settings(ScrapySettings({"NEARDUP_IMPORTANCE": f"{__name__}.depth_importance"}))[1]
    assert by_path.importance is depth_importance
    assert read_settings(ScrapySettings())[0].topic("pages.fetched") == "from-env.pages.fetched"

    bad = {"NEARDUP_BROKER": "no-port", "NEARDUP_MAX_BODY_BYTES": "ten", "NEARDUP_SECURITY_PROTOCOL": "TLS",
           "NEARDUP_IMPORTANCE": "no_such_module.importance", "NEARDUP_FLUSH_TIMEOUT_S": "0",
           "NEARDUP_CRAWL_ID": 7, "NEARDUP_PRODUCER_CONFIG": "[1, 2]", "NEARDUP_TOPIC_PREFIX": "has space"}
    for name, value in bad.items():
        with pytest.raises(SettingError, match=f"^{name}="):
            read_settings(ScrapySettings({name: value}))


def test_a_response_becomes_a_pages_fetched_event_the_workers_accept() -> None:
    event = page_event(response(), fetched_at_ms=1_796_000_000_000, importance=0.25, crawl_id="c-1")
    assert event["url"] == "https://cafe.example/news/reopened" and event["status"] == 200
    assert event["content_type"] == "text/html; charset=iso-8859-1"
    assert event["headers"]["X-Served-By"] == "a, b" and "Set-Cookie" not in event["headers"]
    assert (event["importance"], event["crawl_id"], event["fetched_at"]) == (0.25, "c-1", "2026-11-30T00:53:20.000Z")
    page = parse_event(orjson.dumps(event), key=event["url"].encode())
    assert page.body == PAGE and page.importance == 0.25 and page.fetched_at_ms == 1_796_000_000_000
    fetch = fingerprint_event(orjson.dumps(event))
    assert isinstance(fetch, Fetch) and fetch.skip_reason is None
    assert fetch.body_sha256 == hashlib.sha256(PAGE).hexdigest()
    error = fingerprint_event(orjson.dumps(page_event(response(status=404), fetched_at_ms=1_796_000_000_000)))
    assert isinstance(error, Fetch) and error.skip_reason == "HTTP status 404"  # sent, and decided skipped


def test_delivery_errors_are_counted_in_the_stats_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """A broker that is a closed port: every page times out in the producer and is counted as a delivery
    error; a page too large for the producer is refused at once and counted too."""
    crawler = get_crawler()
    assert crawler.stats is not None
    publisher = PagePublisher(Settings(broker=f"127.0.0.1:{free_port()}", max_body_bytes=1000), crawler.stats,
                              {"message.timeout.ms": 1500, "log_level": 0})
    urls = [f"https://cafe.example/{i}" for i in range(3)]
    with caplog.at_level(logging.ERROR, logger="streams.scrapy"):
        for url in urls:
            publisher.publish(page_event(response(url), fetched_at_ms=1_796_000_000_000))
        publisher.publish(page_event(response("https://cafe.example/huge", body=b"x" * 1_100_000),
                                     fetched_at_ms=1_796_000_000_000))
        assert crawler.stats.get_value("neardup/delivery_errors") == 1  # refused before any delivery
        assert publisher.flush(30) == 0  # every delivery report came back
    assert crawler.stats.get_value("neardup/produced") == 3
    assert crawler.stats.get_value("neardup/delivery_errors") == 4 and publisher.errors == 4
    assert crawler.stats.get_value("neardup/delivered") is None
    logged = [r.getMessage() for r in caplog.records if "not delivered" in r.getMessage()]
    assert len(logged) == 4 and all(any(u in m for m in logged) for u in [*urls, "https://cafe.example/huge"])
    assert any("timed out" in m for m in logged) and any("huge" in m and "too large" in m.lower() for m in logged)


def test_the_extension_s_importance_and_what_it_does_not_send() -> None:
    crawler = get_crawler(settings_dict={"NEARDUP_BROKER": f"127.0.0.1:{free_port()}",
                                         "NEARDUP_IMPORTANCE": depth_importance,
                                         "NEARDUP_PRODUCER_CONFIG": {"log_level": 0}})
    assert crawler.stats is not None
    ext = NeardupPublisher.from_crawler(crawler)
    page = response("https://cafe.example/a/b")
    assert ext.importance_of(page, page.request) == pytest.approx(1 / 3)
    meta = response(meta={"neardup_importance": 2})
    assert ext.importance_of(meta, meta.request) == 2.0  # request.meta wins
    for bad in (float("nan"), "high", True):
        page = response(meta={"neardup_importance": bad})
        assert ext.importance_of(page, page.request) is None
    assert crawler.stats.get_value("neardup/importance_errors") == 3

    text = response("https://cafe.example/robots.txt", cls=TextResponse)
    ext.response_received(text, text.request, crawler.spider)
    assert crawler.stats.get_value("neardup/not_html") == 1 and crawler.stats.get_value("neardup/produced") is None
    ext.sending = False  # what spider_opened sets when the broker answers without the topic
    page = response()
    ext.response_received(page, page.request, crawler.spider)
    assert crawler.stats.get_value("neardup/delivery_errors") == 1 and crawler.stats.get_value("neardup/produced") \
        is None
