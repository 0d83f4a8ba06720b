"""The Scrapy side of the loop: a crawl that reads neardup's decisions and host signals back and fetches less.

Two components, configured in the Scrapy project's `settings.py` (docs/scrapy.md)::

    DOWNLOADER_MIDDLEWARES = {"streams.scrapy.NeardupFrontier": 590}
    SPIDER_MIDDLEWARES = {"streams.scrapy.NeardupItems": 590}
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
import time
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

from neardup_core import Decision, HostSignal
from neardup_core.hosts.url_rules import apply_rules
from neardup_core.hosts.urls import url_identity

if TYPE_CHECKING:  # scrapy is an optional extra: imported where it is used
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector
from streams.scrapy.options import CANONICAL_FIELD, META_DECISION, META_REQUEUED, META_REWRITTEN, read_loop_settings
from streams.scrapy.publisher import read_settings
from streams.scrapy.sources import EmbeddedSource, KafkaSource

log = logging.getLogger(__name__)

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
