"""`Deduplicator`: the library API a Python crawler uses, on memory or a state directory, without Kafka.

A few verbs over one index, as datasketch's `MinHashLSH` has them (`insert`, `query`, `remove`, a batch
session), here with pages rather than sketches::

    with Deduplicator("state/") as dd:           # None (the default): in memory, for one run
        d = dd.add("https://example.com/a", html)  # store the page; its URL's Decision
        if d.is_duplicate:
            print(d.url, "copies", dd.canonical(d.url))
        dd.query(url, html)                        # the Decision it would get, nothing stored
        dd.remove(url)                             # its index entries go; a later copy is unique
        dd.add_many([(url1, html1), (url2, html2)])

Every call decides by the same rule, in the same steps, as `neardup scan` and the stream workers
(`neardup_core/dedup/engine.py`), and a state directory written here is one `scan --state` continues.
Bad input raises `InvalidPage` with the reason. Each decision the index publishes (a page's own, and
the revisions of pages a better copy now outranks) and each host signal goes to the optional
`on_decision` / `on_host_signal` callbacks, as the topics would carry them.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, overload

import orjson
import pybase64

from neardup_core.dedup.gather import Published
from neardup_core.embedded import EventDeduplicator, Outcome
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import Rejected, fingerprint_event
from neardup_core.hosts.statistics import signal_for
from neardup_core.hosts.url_rules import rules_for
from neardup_core.hosts.urls import url_identity
from neardup_core.messages import Decision, HostSignal
from neardup_core.settings import DEFAULT_SETTINGS, CoreSettings
from neardup_core.timefmt import ms_to_rfc3339

__all__ = ["Deduplicator", "InvalidPage", "Page"]

Page = tuple[str, str | bytes] | Mapping[str, Any]
"""One page of `add_many`: `(url, html)`, or a dict of `add`'s arguments (`url`, `html`, `fetched_at`, ...)."""


class InvalidPage(ValueError):
    """A page neardup cannot take (not an absolute http(s) URL, a body over the cap, undecodable, ...):
    `reason` says why, `stage` which step refused it (`validate`, `decode`, `extract`, `fingerprint`)."""

    def __init__(self, url: object, reason: str, stage: str) -> None:
        super().__init__(f"{url!r}: {reason}")
        self.url = url
        self.reason = reason
        self.stage = stage


class Deduplicator:
    """Near-duplicate detection over one index: in memory (`state_dir` None) or in a RocksDB directory
    (created when missing, continued when present; `StateMismatch` when it was built with other state
    settings). Use it in a `with` block, or call `close()`, so RocksDB releases the directory.

    `settings` decide every page (`CoreSettings`; `neardup scan` reads the same from `NEARDUP_*`).
    `on_decision` gets every decision published, revisions of other URLs included, and `on_host_signal`
    every host signal, as `dedup.decisions` and `frontier.host-signals` would carry them. With
    `persist_hosts` False the host statistics stay in memory even with a state directory."""

    def __init__(self, state_dir: str | Path | None = None, settings: CoreSettings = DEFAULT_SETTINGS, *,
                 on_decision: Callable[[Decision], None] | None = None,
                 on_host_signal: Callable[[HostSignal], None] | None = None,
                 persist_hosts: bool = True) -> None:
        self.settings = settings
        self._core = EventDeduplicator(state_dir, settings, persist_hosts=persist_hosts)
        self._on_decision = on_decision
        self._on_host_signal = on_host_signal

    @overload
    def add(self, url: str, html: str | bytes, *, fetched_at: datetime | str | int | None = None,
            importance: float | None = None, headers: Mapping[str, str] | None = None,
            status: int = 200) -> Decision: ...

    @overload
    def add(self, url: Mapping[str, Any] | bytes) -> Outcome | Rejected: ...

    def add(self, url: str | Mapping[str, Any] | bytes, html: str | bytes | None = None, *,
            fetched_at: datetime | str | int | None = None, importance: float | None = None,
            headers: Mapping[str, str] | None = None, status: int = 200) -> Decision | Outcome | Rejected:
        """Store one fetched page and return its URL's `Decision` (`unique`: the copy to keep; a duplicate
        names a better-ranked copy in `duplicate_of`). `html` is the body as text, or as the bytes received
        (decoded by its `headers`' charset, `<meta>` or BOM). `fetched_at` (a datetime, RFC 3339 text or
        epoch ms; default now) and `importance` (higher ranks first) decide which copy is canonical.
        Raises `InvalidPage`.

        Deprecated: a `pages.fetched` event (a dict or its JSON bytes) as the only argument returns
        `Outcome | Rejected` as before."""
        if html is None and not isinstance(url, str):
            warnings.warn("Deduplicator.add(event) is deprecated: use add(url, html, ...) -> Decision (or "
                          "neardup_core.embedded.EventDeduplicator for events in the topic's schema)",
                          DeprecationWarning, stacklevel=2)
            outcome = self._core.add(url)
            if isinstance(outcome, Outcome):
                self._report(outcome.published, list(outcome.host_signals))
            return outcome
        if not isinstance(url, str) or html is None:
            raise TypeError("add(url, html): the URL as text and the page's body")
        return self._add(self._fetch(url, html, fetched_at=fetched_at, importance=importance, headers=headers,
                                     status=status))

    def query(self, url: str, html: str | bytes, *, fetched_at: datetime | str | int | None = None,
              importance: float | None = None, headers: Mapping[str, str] | None = None,
              status: int = 200) -> Decision:
        """The `Decision` `add` would return for this page, with nothing stored (no index entry, no URL
        state, no host statistics). Raises `InvalidPage`."""
        fetch = self._fetch(url, html, fetched_at=fetched_at, importance=importance, headers=headers,
                            status=status)
        _, decision = self._core.engine.preview(fetch)
        if decision is None:  # the engine decides every fetch before it returns
            raise RuntimeError(f"no decision for {url} in the preview")
        return decision

    def add_many(self, pages: Iterable[Page]) -> list[Decision]:
        """Add a batch; each page's URL's decision after the whole batch (a later page may revise an
        earlier one). Every page is checked first: an `InvalidPage` leaves the index as it was."""
        fetches = [self._fetch(*page) if isinstance(page, tuple) else self._fetch(**page) for page in pages]
        for fetch in fetches:
            self._add(fetch)
        out = []
        for fetch in fetches:
            decision = self.decision(fetch.url)
            assert decision is not None  # decided just above
            out.append(decision)
        return out

    def remove(self, url: str) -> bool:
        """Take the URL out of the index: a copy added later no longer matches it (and can be `unique`).
        Pages decided duplicates of it keep their decisions; host statistics keep counting it. False when
        the URL was never added."""
        return self._core.engine.forget(url)

    def decision(self, url: str) -> Decision | None:
        """The URL's latest decision (URLs compared by their normal form), None when it was never added."""
        return self._core.decision(url)

    def canonical(self, url: str) -> str | None:
        """The URL of the copy to keep for the page at `url`: the end of its `duplicate_of` chain (the URL
        itself when it is unique or skipped). None when the URL was never added. A chain that comes back
        to itself (recrawls can make one) ends at its smallest URL, as `dedup/clusters.py` decides."""
        decision = self.decision(url)
        if decision is None:
            return None
        path: list[Decision] = []
        seen: set[str] = set()
        while decision is not None and decision.is_duplicate and decision.duplicate_of is not None:
            key = url_identity(decision.url)
            if key in seen:
                cycle = path[[url_identity(d.url) for d in path].index(key):]
                return min(cycle, key=lambda d: url_identity(d.url)).url
            seen.add(key)
            path.append(decision)
            target = decision.duplicate_of
            decision = self.decision(target)
            if decision is None:  # decided elsewhere (an earlier scan without this URL's state)
                return target
        assert decision is not None
        return decision.url

    def host_signal(self, host: str) -> HostSignal | None:
        """The host's signal as of now (penalty, budget factor, learned URL rules, cumulative counts),
        what `frontier.host-signals` would carry next; None for a host never seen."""
        tracker = self._core.tracker
        state = tracker.host(host)
        if state is None:
            return None
        return signal_for(state, rules=rules_for(tracker.rules(host)), reason="now", policy=tracker.policy)

    def close(self) -> None:
        """Release the state directory."""
        self._core.close()

    def __enter__(self) -> Deduplicator:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _fetch(self, url: str, html: str | bytes, *, fetched_at: datetime | str | int | None = None,
               importance: float | None = None, headers: Mapping[str, str] | None = None,
               status: int = 200) -> Fetch:
        if not isinstance(html, str | bytes):
            raise TypeError(f"html is text or bytes, not {type(html).__name__}")
        try:
            when = _fetched_at(fetched_at)
        except ValueError as exc:
            raise InvalidPage(url, str(exc), "validate") from None
        event: dict[str, Any] = {"url": url, "status": status, "fetched_at": when}
        if isinstance(html, str):
            event["body"] = html
        else:
            event["body_b64"] = pybase64.b64encode_as_string(html)
        if headers:
            event["headers"] = dict(headers)
            content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
            if content_type is not None:
                event["content_type"] = content_type
        if importance is not None:
            event["importance"] = importance
        try:
            raw = orjson.dumps(event)
        except TypeError as exc:
            raise InvalidPage(url, f"not JSON-serialisable: {exc}", "validate") from None
        result = fingerprint_event(raw, settings=self.settings)
        if isinstance(result, Rejected):
            raise InvalidPage(url, result.reason, result.stage)
        return result

    def _add(self, fetch: Fetch) -> Decision:
        published: list[Published] = []
        signals: list[HostSignal] = []
        for item in self._core.engine.decide(fetch):
            published.append(item)
            signals += self._core.tracker.observe(item.decision, item.previous)
        self._report([p.decision for p in published], signals)
        decision = self.decision(fetch.url)
        if decision is None:  # the engine decides every fetch before it returns
            raise RuntimeError(f"no decision for {fetch.url} after it was decided")
        return decision

    def _report(self, decisions: Iterable[Decision], signals: list[HostSignal]) -> None:
        if self._on_decision is not None:
            for decision in decisions:
                self._on_decision(decision)
        if self._on_host_signal is not None:
            for signal in signals:
                self._on_host_signal(signal)


def _fetched_at(value: datetime | str | int | None) -> str | int:
    if value is None:
        return ms_to_rfc3339(int(time.time() * 1000))
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"fetched_at {value!r} has no time zone")
        return ms_to_rfc3339(int(value.timestamp() * 1000))
    return value
