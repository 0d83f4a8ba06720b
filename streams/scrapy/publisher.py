"""The Scrapy extension (`pip install 'neardup[scrapy]'`): every HTML response of a crawl to `pages.fetched`.

Three lines in the Scrapy project's `settings.py`::

    EXTENSIONS = {"streams.scrapy.NeardupPublisher": 500}
    NEARDUP_BROKER = "kafka1:9092,kafka2:9092"
    NEARDUP_TOPIC_PREFIX = "crawl1."  # when the workers run with one

An extension rather than an item pipeline: it sees every downloaded response (`response_received`),
whatever the spider yields, and needs nothing from the spider's code. Each `HtmlResponse` becomes one
event in the topic's schema (`neardup_core/messages.py`, README "Topics and messages"), keyed by its URL:
the body as received (`body_b64`; Scrapy has undone the Content-Encodings it knows, and `headers` name
any it left), `status`, `headers` (without `Set-Cookie`), `content_type`, `fetched_at` (when the response
arrived) and, when configured, `importance` and `crawl_id`. Error statuses go too (the workers decide
them `skipped`); other responses are counted in `neardup/not_html`. No `encoding` is sent: the workers
read the charset from the same header, `<meta>` and BOM that Scrapy reads, and a charset Scrapy only
guessed would override their own detection.

The producer is `neardup publish`'s (`streams.cli.publish.producer_config`: the broker and its
security settings, idempotent, lz4). Settings use Scrapy's conventions, with the names of the
environment variables they stand for (a setting missing from Scrapy's settings is read from the
environment, then its default) and the same rules, checked when the crawler starts (`SettingError`
naming the setting, its value and what is allowed). Stats: `neardup/produced`, `neardup/delivered`,
`neardup/delivery_errors` (each logged, the first 20 one by one and then every 100th; and at the end the
ones still undelivered after `NEARDUP_FLUSH_TIMEOUT_S`), `neardup/not_html`, `neardup/importance_errors`.
"""

from __future__ import annotations

import base64
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from neardup_core.timefmt import ms_to_rfc3339
from streams.cli.publish import producer_config
from streams.settings import SettingError, Settings

if TYPE_CHECKING:  # scrapy is an optional extra: imported where it is used
    from confluent_kafka import KafkaError, Message
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

__all__ = ["NeardupPublisher", "PagePublisher", "PublisherOptions", "page_event", "read_settings"]

log = logging.getLogger(__name__)

META_IMPORTANCE = "neardup_importance"
"""`request.meta` key: this page's importance, over `NEARDUP_IMPORTANCE`."""
SETTINGS_FIELDS = ("broker", "topic_prefix", "max_body_bytes", "security_protocol", "sasl_mechanism",
                   "sasl_username", "sasl_password", "ssl_cafile", "ssl_certfile", "ssl_keyfile")
"""The fields of `streams.settings.Settings` the extension reads from Scrapy's settings (under their
environment variable's name, `NEARDUP_BROKER` ...)."""
LOGGED_ONE_BY_ONE = 20
TOPIC_CHECK_S = 10.0

Importance = Callable[["Response"], float | None]


@dataclass(frozen=True)
class PublisherOptions:
    """The extension's own settings (Scrapy names in brackets)."""

    importance: float | Importance | None = None
    """[NEARDUP_IMPORTANCE] every page's importance: a number, or a callable (or its import path)
    `importance(response) -> float | None`; `request.meta["neardup_importance"]` wins over it."""
    crawl_id: str | None = None
    """[NEARDUP_CRAWL_ID] the events' `crawl_id`."""
    flush_timeout_s: float = 60.0
    """[NEARDUP_FLUSH_TIMEOUT_S] how long the spider's close waits for the last deliveries."""
    producer_config: Mapping[str, Any] = field(default_factory=dict)
    """[NEARDUP_PRODUCER_CONFIG] more librdkafka settings for the producer (e.g. `message.timeout.ms`)."""


def read_settings(scrapy_settings: BaseSettings) -> tuple[Settings, PublisherOptions]:
    """The neardup settings of a crawl: each one from Scrapy's settings, else the environment, else its
    default; `SettingError` for the first one that breaks its rule."""
    from scrapy.utils.misc import load_object

    from streams.settings import env_name

    given: dict[str, Any] = {}
    for name in SETTINGS_FIELDS:
        value = scrapy_settings.get(env_name(name))
        if value is None or value == "":
            continue
        if name == "max_body_bytes" and isinstance(value, str):  # `scrapy crawl -s NAME=VALUE` gives strings
            try:
                value = int(value)
            except ValueError:
                raise SettingError(env_name(name), value, "must be an integer") from None
        given[name] = value
    settings = Settings(**given)

    importance = scrapy_settings.get("NEARDUP_IMPORTANCE")
    if isinstance(importance, str):
        try:
            importance = float(importance)
        except ValueError:
            try:
                importance = load_object(importance)
            except (ImportError, NameError, ValueError, AttributeError) as exc:
                raise SettingError("NEARDUP_IMPORTANCE", importance,
                                   f"must be a number or the import path of a callable ({exc})") from None
    if importance is not None and not callable(importance) and not _finite(importance):
        raise SettingError("NEARDUP_IMPORTANCE", importance, "must be a finite number or a callable(response)")
    crawl_id = scrapy_settings.get("NEARDUP_CRAWL_ID")
    if crawl_id is not None and not isinstance(crawl_id, str):
        raise SettingError("NEARDUP_CRAWL_ID", crawl_id, "must be a string")
    try:
        flush_timeout_s = scrapy_settings.getfloat("NEARDUP_FLUSH_TIMEOUT_S", 60.0)
    except ValueError:
        raise SettingError("NEARDUP_FLUSH_TIMEOUT_S", scrapy_settings.get("NEARDUP_FLUSH_TIMEOUT_S"),
                           "must be a number of seconds") from None
    if not 0 < flush_timeout_s <= 3600:
        raise SettingError("NEARDUP_FLUSH_TIMEOUT_S", flush_timeout_s, "must be a number > 0 and <= 3600")
    try:
        extra = scrapy_settings.getdict("NEARDUP_PRODUCER_CONFIG")
    except (ValueError, TypeError):
        raise SettingError("NEARDUP_PRODUCER_CONFIG", scrapy_settings.get("NEARDUP_PRODUCER_CONFIG"),
                           "must be a dict (or its JSON) of librdkafka settings") from None
    return settings, PublisherOptions(importance, crawl_id or None, flush_timeout_s, extra)


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def page_event(response: Response, *, fetched_at_ms: int, importance: float | None = None,
               crawl_id: str | None = None) -> dict[str, Any]:
    """The `pages.fetched` event of one response."""
    headers = {key.decode("latin-1"): ", ".join(v.decode("latin-1") for v in values)
               for key, values in response.headers.items() if key.lower() != b"set-cookie"}
    content_type = response.headers.get(b"Content-Type")
    event: dict[str, Any] = {
        "url": response.url, "body_b64": base64.b64encode(response.body).decode("ascii"),
        "status": response.status, "headers": headers,
        "content_type": content_type.decode("latin-1") if content_type else None,
        "fetched_at": ms_to_rfc3339(fetched_at_ms),
    }
    if importance is not None:
        event["importance"] = importance
    if crawl_id is not None:
        event["crawl_id"] = crawl_id
    return event


class PagePublisher:
    """A producer of `pages.fetched` events whose deliveries are counted in Scrapy's stats and logged."""

    def __init__(self, settings: Settings, stats: StatsCollector, extra_config: Mapping[str, Any] | None = None
                 ) -> None:
        from confluent_kafka import Producer

        self.settings = settings
        self.topic = settings.topic("pages.fetched")
        self.broker = settings.broker
        self.stats = stats
        self.client_errors: deque[KafkaError] = deque(maxlen=64)
        """The client's latest errors (its `error_cb`): where `check_topic` finds a refused login."""
        self.producer = Producer({**producer_config(settings), **(extra_config or {}),
                                  "error_cb": self.client_errors.append},
                                 logger=logging.getLogger(f"{__name__}.librdkafka"))  # into the crawl's log
        self.errors = 0
        self.not_sent: str | None = None
        """Why no page is sent, once `check_topic` found a reason (the topic is missing, the login refused)."""

    def check_topic(self, timeout_s: float = TOPIC_CHECK_S) -> bool:
        """False (and an error logged) when the broker answers without the topic: then nothing is sent,
        since a broker that creates topics on first use would create it with the wrong partitions and
        configs; and when it refused the login, named as such (as `neardup publish` names it). A broker
        that does not answer yet is only warned about: the producer keeps trying."""
        from confluent_kafka import KafkaException

        from streams.kafka.admin import LoginRefused, broker_topics

        try:
            topics = broker_topics(self.producer, self.client_errors, self.settings, timeout_s)
        except LoginRefused as exc:
            log.error("neardup: %s; no page of this crawl is sent", exc)
            self.not_sent = "the broker refused the login"
            return False
        except KafkaException as exc:
            log.warning("neardup: Kafka at %s (NEARDUP_BROKER) does not answer yet (%s); pages wait in the "
                        "producer until it does or their message.timeout.ms runs out", self.broker, exc.args[0])
            return True
        if self.topic not in topics:
            log.error("neardup: topic %s does not exist on %s: run `neardup topics create` (with the workers' "
                      "NEARDUP_TOPIC_PREFIX); no page of this crawl is sent", self.topic, self.broker)
            self.not_sent = f"topic {self.topic} does not exist"
            return False
        return True

    def publish(self, event: dict[str, Any]) -> None:
        """Hand one event to the producer (waiting while its queue is full); its delivery is counted later."""
        from confluent_kafka import KafkaException

        value, key = orjson.dumps(event), event["url"].encode()
        while True:
            try:
                self.producer.produce(self.topic, value=value, key=key, on_delivery=self._delivered)
                break
            except BufferError:  # the local queue is full: serve deliveries, then try again
                self.producer.poll(0.5)
            except KafkaException as exc:  # refused before sending, e.g. larger than message.max.bytes
                self._failed(event["url"], str(exc.args[0]))
                return
        self.stats.inc_value("neardup/produced")
        self.producer.poll(0)

    def refuse(self, url: str, reason: str) -> None:
        """Count a page that is not sent as a delivery error."""
        self._failed(url, reason)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            self.stats.inc_value("neardup/delivered")
        else:
            key = msg.key()
            self._failed(key.decode("utf-8", "replace") if key else "?", str(err))

    def _failed(self, url: str, reason: str) -> None:
        self.errors += 1
        self.stats.inc_value("neardup/delivery_errors")
        if self.errors <= LOGGED_ONE_BY_ONE or self.errors % 100 == 0:
            log.error("neardup: %s not delivered to %s: %s (%d delivery errors so far)", url, self.topic, reason,
                      self.errors)

    def flush(self, timeout_s: float) -> int:
        """Wait for every delivery; the number still undelivered after `timeout_s`, counted as errors."""
        left = self.producer.flush(timeout_s)
        if left:
            self.errors += left
            self.stats.inc_value("neardup/delivery_errors", left)
            log.error("neardup: %d pages still undelivered to %s after %.0f s (NEARDUP_FLUSH_TIMEOUT_S)", left,
                      self.topic, timeout_s)
        return left


class NeardupPublisher:
    """The extension: `response_received` -> `pages.fetched`; flushed when the spider closes."""

    def __init__(self, crawler: Crawler) -> None:
        from scrapy import signals

        settings, self.options = read_settings(crawler.settings)
        assert crawler.stats is not None
        self.stats = crawler.stats
        self.publisher = PagePublisher(settings, crawler.stats, self.options.producer_config)
        self.sending = True
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.response_received, signal=signals.response_received)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NeardupPublisher:
        return cls(crawler)

    def spider_opened(self, spider: Spider) -> None:
        self.sending = self.publisher.check_topic()
        log.info("neardup: publishing HTML responses to %s on %s", self.publisher.topic, self.publisher.broker)

    def response_received(self, response: Response, request: Request, spider: Spider) -> None:
        from scrapy.http import HtmlResponse

        if not isinstance(response, HtmlResponse):
            self.stats.inc_value("neardup/not_html")
            return
        if not self.sending:
            self.publisher.refuse(response.url, self.publisher.not_sent or "not sent")
            return
        event = page_event(response, fetched_at_ms=int(time.time() * 1000),
                           importance=self.importance_of(response, request), crawl_id=self.options.crawl_id)
        self.publisher.publish(event)

    def importance_of(self, response: Response, request: Request) -> float | None:
        """`request.meta["neardup_importance"]`, else `NEARDUP_IMPORTANCE` (a number, or a callable of the
        response); a value that is not a finite number is logged, counted, and the page sent without one."""
        given = self.options.importance
        try:
            value = request.meta.get(META_IMPORTANCE) if META_IMPORTANCE in request.meta \
                else given(response) if callable(given) else given
        except Exception:
            log.exception("neardup: NEARDUP_IMPORTANCE failed on %s; sent without an importance", response.url)
            self.stats.inc_value("neardup/importance_errors")
            return None
        if value is not None and not _finite(value):
            log.error("neardup: importance %r of %s is not a finite number; sent without one", value, response.url)
            self.stats.inc_value("neardup/importance_errors")
            return None
        return float(value) if value is not None else None

    def spider_closed(self, spider: Spider, reason: str) -> None:
        self.publisher.flush(self.options.flush_timeout_s)
        log.info("neardup: %d pages delivered to %s, %d delivery errors", self.stats.get_value("neardup/delivered", 0),
                 self.publisher.topic, self.publisher.errors)
