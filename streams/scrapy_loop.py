"""The Scrapy side of the loop: a crawl that reads neardup's decisions and host signals back and fetches less.

Two components, configured in the Scrapy project's `settings.py` (docs/scrapy.md)::

    DOWNLOADER_MIDDLEWARES = {"streams.scrapy_loop.NeardupFrontier": 590}
    SPIDER_MIDDLEWARES = {"streams.scrapy_loop.NeardupItems": 590}
    NEARDUP_MODE = "embedded"          # or "kafka", beside EXTENSIONS = {"streams.scrapy.NeardupPublisher": 500}
    NEARDUP_STATE_DIR = "neardup-state"  # embedded: the index on disk (unset: in memory, for one crawl)

`NeardupFrontier` (a downloader middleware) applies each host's signal before a request is fetched:

1. the host's learned URL rules (`url_rules`: `ignore_query_param`, `strip_path_param`, ...) give the
   request's normal form; when that is a URL (no `{date}`-style placeholder) other than the request's,
   the request is rewritten to it and scheduled again;
2. a request whose normal form (by the host's rules now, so a rule learned later also covers the URLs
   fetched before it) was fetched or scheduled already is dropped, but for the normal form itself when only
   variants of it were (a session id fetched before the rule): the copy that ranks best is fetched;
3. the requests of a host penalised as a trap (`penalty >= NEARDUP_TRAP_PENALTY`) are scheduled again
   once, their priority lowered by `penalty * NEARDUP_PRIORITY_STEP`, and only a `budget_factor` share of
   them is fetched (a credit per host grows by `budget_factor` a request, and a request is fetched when a
   whole credit is there).

Each action is counted in the crawl's stats (`neardup/rewritten`, `neardup/dropped_seen`,
`neardup/deprioritised`, `neardup/dropped_budget`) and logged at DEBUG. In embedded mode it also decides
every HTML response as it arrives (`neardup/verdict/...`) and puts the decision in
`response.meta["neardup"]`: `verdict`, `duplicate_of`, `canonical`.

`NeardupItems` (a spider middleware) takes the items a spider yields from a response: from a duplicate
page they are dropped (`NEARDUP_DUPLICATE_ITEMS = "drop"`, `neardup/items_dropped`) or given a
`neardup_canonical` field (`"mark"`, `neardup/items_marked`). The items of a page decided unique wait
`NEARDUP_ITEM_HOLD_S` (2 s embedded, 3 s kafka): a better copy fetched meanwhile revises the page, and they are
dropped or marked instead (`neardup/items_revised_early`); an item that went out as unique and whose page is
revised later is counted in `neardup/items_revised`. The links of a duplicate page are dropped
(`neardup/links_dropped`: its canonical's are the ones followed) unless `NEARDUP_FOLLOW_DUPLICATES = True`.

Modes, with the same components: **embedded**, a `neardup_core.Deduplicator` in the crawl's process
(memory or `NEARDUP_STATE_DIR`), deciding each page as it arrives; **kafka**, the decisions and host
signals read back from `dedup.decisions` and `frontier.host-signals` by a consumer on its own thread
(the reactor only reads what it gathered), while `NeardupPublisher` publishes the pages. There an item
waits (asynchronously) for its page's decision, at most `NEARDUP_DECISION_WAIT_S`, and passes unmarked
when none came (`neardup/items_undecided`).
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Self
from urllib.parse import urlsplit

from neardup_core import Decision, Deduplicator, HostSignal, InvalidPage
from neardup_core.hosts.url_rules import apply_rules
from neardup_core.hosts.urls import url_identity
from streams.settings import SettingError, Settings

if TYPE_CHECKING:  # scrapy is an optional extra: imported where it is used
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

__all__ = ["LoopOptions", "NeardupFrontier", "NeardupItems", "read_loop_settings"]

log = logging.getLogger(__name__)

MODES = ("embedded", "kafka")
ITEM_ACTIONS = ("drop", "mark", "keep")
ITEM_HOLD_S = {"embedded": 2.0, "kafka": 3.0}
"""NEARDUP_ITEM_HOLD_S's default: kafka's longer, a better copy's decision comes back through the workers."""
META_DECISION = "neardup"
"""`response.meta` key: the page's decision (`verdict`, `duplicate_of`, `canonical`)."""
META_REQUEUED = "neardup_requeued"
"""`request.meta` key: the frontier scheduled this request again already (lowered priority)."""
META_REWRITTEN = "neardup_rewritten_from"
"""`request.meta` key: the URL the frontier rewrote this request from."""
CANONICAL_FIELD = "neardup_canonical"


@dataclass(frozen=True)
class LoopOptions:
    """The loop's settings (Scrapy names in brackets)."""

    mode: str = "embedded"
    """[NEARDUP_MODE] `embedded` or `kafka`."""
    state_dir: str | None = None
    """[NEARDUP_STATE_DIR] embedded: the index's directory (RocksDB), None for memory."""
    apply_rules: bool = True
    """[NEARDUP_APPLY_RULES] rewrite by learned URL rules and drop normal forms seen before."""
    apply_budget: bool = True
    """[NEARDUP_APPLY_BUDGET] lower penalised hosts' priority and fetch only a `budget_factor` share."""
    priority_step: int = 10
    """[NEARDUP_PRIORITY_STEP] a request's priority is lowered by penalty times this."""
    trap_penalty: float = 0.5
    """[NEARDUP_TRAP_PENALTY] the penalty from which a host's priority and budget are cut (the workers flag a
    host at 0.5: below it, print versions and URL variants of a sound host, which the rules handle)."""
    duplicate_items: str = "drop"
    """[NEARDUP_DUPLICATE_ITEMS] `drop`, `mark` (a `neardup_canonical` field) or `keep`."""
    follow_duplicates: bool = False
    """[NEARDUP_FOLLOW_DUPLICATES] follow the links of duplicate pages (a mirror's, a copy's)."""
    decision_wait_s: float = 30.0
    """[NEARDUP_DECISION_WAIT_S] kafka: how long an item waits for its page's decision."""
    item_hold_s: float = ITEM_HOLD_S["embedded"]
    """[NEARDUP_ITEM_HOLD_S] how long a unique page's items wait for a better copy to revise it (the mode's
    `ITEM_HOLD_S` when unset)."""


def seconds_setting(settings: BaseSettings, name: str, default: float) -> float:
    """A Scrapy setting of seconds, from 0 to 3600."""
    try:
        value = settings.getfloat(name, default)
    except ValueError:
        raise SettingError(name, settings.get(name), "must be a number of seconds") from None
    if not (math.isfinite(value) and 0 <= value <= 3600):
        raise SettingError(name, value, "must be a number from 0 to 3600")
    return float(value)


def read_loop_settings(settings: BaseSettings) -> LoopOptions:
    """The loop's settings from Scrapy's; `SettingError` for the first that breaks its rule."""
    mode = settings.get("NEARDUP_MODE", "embedded")
    if mode not in MODES:
        raise SettingError("NEARDUP_MODE", mode, f"must be one of {', '.join(MODES)}")
    state_dir = settings.get("NEARDUP_STATE_DIR") or None
    if state_dir is not None and not isinstance(state_dir, str):
        raise SettingError("NEARDUP_STATE_DIR", state_dir, "must be a directory path")
    if state_dir is not None and mode == "kafka":
        raise SettingError("NEARDUP_STATE_DIR", state_dir, "is for NEARDUP_MODE=embedded (the workers keep the "
                           "state in kafka mode)")
    flags = {}
    for name, default in (("NEARDUP_APPLY_RULES", True), ("NEARDUP_APPLY_BUDGET", True),
                          ("NEARDUP_FOLLOW_DUPLICATES", False)):
        try:
            flags[name] = settings.getbool(name, default)
        except ValueError:
            raise SettingError(name, settings.get(name), "must be True or False") from None
    try:
        step = settings.getint("NEARDUP_PRIORITY_STEP", 10)
    except ValueError:
        raise SettingError("NEARDUP_PRIORITY_STEP", settings.get("NEARDUP_PRIORITY_STEP"),
                           "must be an integer") from None
    if not 0 <= step <= 1000:
        raise SettingError("NEARDUP_PRIORITY_STEP", step, "must be from 0 to 1000")
    try:
        trap_penalty = settings.getfloat("NEARDUP_TRAP_PENALTY", 0.5)
    except ValueError:
        raise SettingError("NEARDUP_TRAP_PENALTY", settings.get("NEARDUP_TRAP_PENALTY"), "must be a number") from None
    if not 0 <= trap_penalty <= 1:
        raise SettingError("NEARDUP_TRAP_PENALTY", trap_penalty, "must be from 0 to 1")
    items = settings.get("NEARDUP_DUPLICATE_ITEMS", "drop")
    if items not in ITEM_ACTIONS:
        raise SettingError("NEARDUP_DUPLICATE_ITEMS", items, f"must be one of {', '.join(ITEM_ACTIONS)}")
    wait_s = seconds_setting(settings, "NEARDUP_DECISION_WAIT_S", 30.0)
    hold_s = seconds_setting(settings, "NEARDUP_ITEM_HOLD_S", ITEM_HOLD_S[mode])
    return LoopOptions(mode, state_dir, flags["NEARDUP_APPLY_RULES"], flags["NEARDUP_APPLY_BUDGET"], step,
                       trap_penalty, items, flags["NEARDUP_FOLLOW_DUPLICATES"], wait_s, hold_s)


class Source(Protocol):
    """Where the loop reads decisions and host signals: a `Deduplicator` in the process, or the topics."""

    def decision(self, url: str) -> Decision | None: ...

    def canonical(self, url: str) -> str | None: ...

    def host_signal(self, host: str) -> HostSignal | None: ...

    def close(self) -> None: ...


class EmbeddedSource:
    """A `Deduplicator` in the crawl's process; `decide` runs when a response arrives."""

    def __init__(self, state_dir: str | None, on_decision: Any) -> None:
        self.dedup = Deduplicator(state_dir, on_decision=on_decision)

    def decide(self, response: Response) -> Decision | None:
        headers = {k.decode("latin-1"): ", ".join(v.decode("latin-1") for v in values)
                   for k, values in response.headers.items()}
        try:
            return self.dedup.add(response.url, response.body, headers=headers, status=response.status)
        except InvalidPage as exc:
            log.debug("neardup: %s not decided: %s", response.url, exc.reason)
            return None

    def decision(self, url: str) -> Decision | None:
        return self.dedup.decision(url)

    def canonical(self, url: str) -> str | None:
        return self.dedup.canonical(url)

    def host_signal(self, host: str) -> HostSignal | None:
        return self.dedup.host_signal(host)

    def close(self) -> None:
        self.dedup.close()


class KafkaSource:
    """The latest decision per URL and signal per host, read from the compacted topics from their start by
    a consumer on its own thread (never the reactor's); the reactor reads the dicts under a lock."""

    def __init__(self, settings: Settings, on_decision: Any) -> None:
        from confluent_kafka import Consumer

        self.decisions: dict[str, Decision] = {}
        self.signals: dict[str, HostSignal] = {}
        self.settings = settings
        self.topics = (settings.topic("dedup.decisions"), settings.topic("frontier.host-signals"))
        self.on_decision = on_decision
        self.refused: str | None = None
        """Set (and logged, once) when the broker refused the login: then no decision comes."""
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.consumer = Consumer({**settings.confluent_config(), "group.id": f"neardup-scrapy-{uuid.uuid4()}",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "error_cb": self._client_error},
                                 logger=logging.getLogger(f"{__name__}.librdkafka"))
        self.consumer.subscribe(list(self.topics))
        self.thread = threading.Thread(target=self._run, name="neardup-kafka-source", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            for msg in self.consumer.consume(500, 0.2):
                topic, value = msg.topic(), msg.value()
                if msg.error() is not None or topic is None or value is None:
                    continue
                try:
                    self._take(topic, value)
                except Exception:  # a value this version cannot read must not stop the loop
                    log.exception("neardup: unreadable record in %s", msg.topic())
        self.consumer.close()

    def _client_error(self, error: Any) -> None:
        """The consumer's `error_cb` (served by `consume`, on its thread): a refused login is said once, as
        `neardup tail` says it; other errors (a broker not up yet) pass, the consumer keeps trying."""
        from streams.admin import LoginRefused, login_refused

        reason = login_refused([error])
        if reason is not None and self.refused is None:
            self.refused = str(LoginRefused(self.settings, reason))
            log.error("neardup: %s; no decision is read", self.refused)

    def _take(self, topic: str, value: bytes) -> None:
        if topic == self.topics[0]:
            decision = Decision.from_json(value)
            key = url_identity(decision.url)
            with self.lock:
                kept = self.decisions.get(key)
                if kept is not None and decision.revision < kept.revision:
                    return
                self.decisions[key] = decision
            self.on_decision(decision)
        else:
            signal = HostSignal.from_json(value)
            with self.lock:
                kept_signal = self.signals.get(signal.host)
                if kept_signal is None or signal.revision >= kept_signal.revision:
                    self.signals[signal.host] = signal

    def decision(self, url: str) -> Decision | None:
        with self.lock:
            return self.decisions.get(url_identity(url))

    def canonical(self, url: str) -> str | None:
        with self.lock:
            decision = self.decisions.get(url_identity(url))
            seen: set[str] = set()
            while decision is not None and decision.is_duplicate and decision.duplicate_of is not None:
                if decision.url in seen:
                    return min(seen, key=url_identity)
                seen.add(decision.url)
                target = decision.duplicate_of
                decision = self.decisions.get(url_identity(target))
                if decision is None:
                    return target
            return decision.url if decision is not None else None

    def host_signal(self, host: str) -> HostSignal | None:
        with self.lock:
            return self.signals.get(host)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(10)


@dataclass
class HostFrontier:
    """What the frontier keeps per host: URLs fetched or scheduled (identities), their normal forms under
    the rules last seen, and the budget credit."""

    urls: set[str] = field(default_factory=set)
    normal: set[str] = field(default_factory=set)
    rules: tuple[tuple[str, str], ...] = ()
    credit: float = 1.0


class Loop:
    """One crawl's loop: the source and the frontier's memory, shared by both components."""

    _of: weakref.WeakKeyDictionary[Crawler, Loop] = weakref.WeakKeyDictionary()

    def __init__(self, crawler: Crawler) -> None:
        from scrapy import signals

        from streams.scrapy import read_settings

        self.options = read_loop_settings(crawler.settings)
        assert crawler.stats is not None
        self.stats: StatsCollector = crawler.stats
        self.hosts: dict[str, HostFrontier] = {}
        self.emitted: set[str] = set()
        """URL identities whose items went out as unique (a later revision makes them duplicates emitted)."""
        self.revised: set[str] = set()
        self.source: EmbeddedSource | KafkaSource
        if self.options.mode == "embedded":
            self.source = EmbeddedSource(self.options.state_dir, self.on_decision)
        else:
            settings, _ = read_settings(crawler.settings)
            self.source = KafkaSource(settings, self.on_decision)
            if "streams.scrapy.NeardupPublisher" not in crawler.settings.getdict("EXTENSIONS"):
                log.warning("neardup: NEARDUP_MODE=kafka reads decisions of pages that NeardupPublisher publishes; "
                            "EXTENSIONS does not enable it")
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        log.info("neardup: %s mode%s", self.options.mode,
                 f", state in {self.options.state_dir}" if self.options.state_dir else "")

    @classmethod
    def of(cls, crawler: Crawler) -> Loop:
        loop = cls._of.get(crawler)
        if loop is None:
            loop = cls._of[crawler] = cls(crawler)
        return loop

    def on_decision(self, decision: Decision) -> None:
        """Every decision published (revisions included): count items emitted that are duplicates now.
        In kafka mode this runs on the consumer's thread: it only touches sets and the stats' dict."""
        key = url_identity(decision.url)
        if decision.is_duplicate and key in self.emitted and key not in self.revised:
            self.revised.add(key)
            self.stats.inc_value("neardup/items_revised")
            log.debug("neardup: item of %s was emitted as unique; now a duplicate of %s", decision.url,
                      decision.duplicate_of)

    def spider_closed(self, spider: Spider) -> None:
        for host in sorted(self.hosts):
            signal = self.source.host_signal(host)
            if signal is not None and (signal.penalty > 0 or signal.url_rules):
                log.info("neardup: host %s: penalty %.2f, budget factor %.2f, rules %s", host, signal.penalty,
                         signal.budget_factor, [f"{r['kind']} {r.get('param') or ''}".strip()
                                                for r in signal.url_rules])
        self.source.close()

    def frontier(self, host: str, signal: HostSignal | None) -> HostFrontier:
        """The host's frontier memory, its normal forms recomputed when its rules changed."""
        state = self.hosts.setdefault(host, HostFrontier())
        rules = tuple(sorted((r["kind"], r.get("param") or "") for r in signal.url_rules)) if signal else ()
        if rules != state.rules:
            state.rules = rules
            state.normal = {url_identity(apply_rules(u, signal.url_rules if signal else [])) for u in state.urls}
        return state


class Component:
    """What both middlewares share: the crawl's `Loop`."""

    def __init__(self, crawler: Crawler) -> None:
        self.loop = Loop.of(crawler)
        self.stats = self.loop.stats
        self.options = self.loop.options

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)


class NeardupFrontier(Component):
    """The downloader middleware: host signals applied before a request is fetched (the module's steps)."""

    def process_request(self, request: Request, spider: Spider) -> Request | None:
        from scrapy.exceptions import IgnoreRequest

        url = request.url
        host = (urlsplit(url).hostname or "").lower()
        signal = self.loop.source.host_signal(host)
        state = self.loop.frontier(host, signal)
        rules = signal.url_rules if signal is not None else []
        normal = apply_rules(url, rules) if rules and self.options.apply_rules else url
        key = url_identity(normal)
        if self.options.apply_rules and rules:
            if "{" not in normal and key != url_identity(url) and not request.meta.get(META_REWRITTEN):  # 1.
                self.stats.inc_value("neardup/rewritten")
                log.debug("neardup: %s rewritten to %s by the rules of %s", url, normal, host)
                # a new URL: Scrapy's dupefilter applies to it (a requeued request had it off)
                return request.replace(url=normal, dont_filter=False, meta={**request.meta, META_REWRITTEN: url})
            # a request asked for again on purpose (a retry, dont_filter) is not a copy
            on_purpose = request.dont_filter and not request.meta.get(META_REQUEUED)
            # the normal form itself, reached so far only as a variant, is fetched: it ranks better (step 2)
            variant_only = key == url_identity(url) and key not in state.urls
            if key in state.normal and not on_purpose and not variant_only:  # 2.
                self.stats.inc_value("neardup/dropped_seen")
                log.debug("neardup: %s dropped: its normal form %s was fetched or scheduled", url, normal)
                raise IgnoreRequest(f"neardup: normal form {normal} seen")
        elif key in state.normal and self.options.apply_rules and not request.dont_filter:
            # fetched already under this very URL: a start URL (Scrapy's dupefilter does not record those)
            self.stats.inc_value("neardup/dropped_seen")
            log.debug("neardup: %s dropped: fetched or scheduled before", url)
            raise IgnoreRequest(f"neardup: {url} seen")
        trap = signal is not None and signal.penalty > 0 and signal.penalty >= self.options.trap_penalty
        if signal is not None and self.options.apply_budget and trap:
            lower = int(signal.penalty * self.options.priority_step)
            if lower and not request.meta.get(META_REQUEUED):  # 3.
                self.stats.inc_value("neardup/deprioritised")
                log.debug("neardup: %s scheduled again with priority %d (host %s penalty %.2f)", url,
                          request.priority - lower, host, signal.penalty)
                return request.replace(priority=request.priority - lower, dont_filter=True,
                                       meta={**request.meta, META_REQUEUED: True})
            if signal.budget_factor < 1:
                state.credit = min(state.credit + signal.budget_factor, 1.0 + signal.budget_factor)
                if state.credit < 1:
                    self.stats.inc_value("neardup/dropped_budget")
                    log.debug("neardup: %s dropped: host %s over its budget (budget factor %.2f)", url, host,
                              signal.budget_factor)
                    raise IgnoreRequest(f"neardup: {host} over its budget")
                state.credit -= 1
        state.urls.add(url_identity(url))
        state.normal.add(key)
        return None

    def process_response(self, request: Request, response: Response, spider: Spider) -> Response:
        from scrapy.http import HtmlResponse

        source = self.loop.source
        if isinstance(source, EmbeddedSource) and isinstance(response, HtmlResponse):
            decision = source.decide(response)
            if decision is not None:
                self.stats.inc_value(f"neardup/verdict/{decision.verdict}")
                request.meta[META_DECISION] = page_meta(decision, source.canonical(decision.url))
        return response


def page_meta(decision: Decision, canonical: str | None) -> dict[str, Any]:
    """What `response.meta["neardup"]` holds (plain values: it travels with the request)."""
    return {"verdict": decision.verdict, "duplicate_of": decision.duplicate_of, "canonical": canonical or decision.url}


class NeardupItems(Component):
    """The spider middleware: items of duplicate pages dropped or marked with the canonical URL."""

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any],
                                    spider: Spider) -> AsyncIterator[Any]:
        from scrapy import Request

        items: list[Any] = []
        links: list[Request] = []  # held only when a duplicate's links are not followed
        async for out in result:
            if not isinstance(out, Request):
                items.append(out)
            elif self.options.follow_duplicates:
                yield out
            else:
                links.append(out)
        if not items and not links:
            return
        page = await self.decision_of(response)
        for link in links:
            if page is not None and is_duplicate(page):
                self.stats.inc_value("neardup/links_dropped")
            else:
                yield link
        if items and page is not None and not is_duplicate(page) and self.options.item_hold_s > 0:
            await sleep(self.options.item_hold_s)
            decision = self.loop.source.decision(response.url)
            if decision is not None and decision.is_duplicate:
                page = page_meta(decision, self.loop.source.canonical(decision.url))
        first = response.meta.get(META_DECISION)  # the page's decision when it was first known
        if items and isinstance(first, dict) and not is_duplicate(first) and page is not None and is_duplicate(page):
            self.stats.inc_value("neardup/items_revised_early", len(items))
        for item in items:
            if page is None or not is_duplicate(page):
                if page is not None:
                    self.loop.emitted.add(url_identity(response.url))
                yield item
            elif self.options.duplicate_items == "drop":
                self.stats.inc_value("neardup/items_dropped")
                log.debug("neardup: item of %s dropped: a duplicate of %s", response.url, page["canonical"])
            elif self.options.duplicate_items == "mark":
                self.stats.inc_value("neardup/items_marked")
                yield mark(item, page["canonical"])
            else:
                yield item

    async def decision_of(self, response: Response) -> dict[str, Any] | None:
        """The page's decision now (a better copy decided since the response arrived may have revised it);
        in kafka mode waiting for it up to `NEARDUP_DECISION_WAIT_S`; None (counted) when none came."""
        if self.options.mode == "embedded":
            if response.meta.get(META_DECISION) is None:  # not decided: not HTML, or refused (logged)
                return None
            decision = self.loop.source.decision(response.url)
            return page_meta(decision, self.loop.source.canonical(decision.url)) if decision is not None else None
        deadline = time.monotonic() + self.options.decision_wait_s
        source = self.loop.source
        while True:
            decision = source.decision(response.url)
            if decision is not None:
                found = page_meta(decision, source.canonical(decision.url))
                response.meta[META_DECISION] = found
                return found
            if time.monotonic() >= deadline:
                self.stats.inc_value("neardup/items_undecided")
                log.debug("neardup: no decision for %s within %.0f s", response.url, self.options.decision_wait_s)
                return None
            await sleep(0.05)


def is_duplicate(page: dict[str, Any]) -> bool:
    return page["verdict"] in ("exact_duplicate", "near_duplicate")


async def sleep(seconds: float) -> None:
    """Wait without blocking the reactor (any reactor Scrapy runs on)."""
    from scrapy.utils.defer import maybe_deferred_to_future
    from twisted.internet import reactor
    from twisted.internet.task import deferLater

    await maybe_deferred_to_future(deferLater(reactor, seconds, lambda: None))


def mark(item: Any, canonical: str) -> Any:
    """The item with a `neardup_canonical` field (a dict, or an Item that declares the field)."""
    from itemadapter import ItemAdapter

    adapter = ItemAdapter(item)
    adapter[CANONICAL_FIELD] = canonical
    return item
