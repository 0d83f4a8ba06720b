"""Decisions for `pages.fetched` events, without Kafka, over a state directory: what `neardup scan` runs.

The library API for a crawler is `neardup_core.Deduplicator` (`add(url, html)`); this module keeps the
event form of the wire schema beside it. `EventDeduplicator(state_dir, settings)`: `add(event)` takes one
`pages.fetched` event (a dict in the topic's schema, or its JSON bytes) and returns an `Outcome`, the
event URL's decision and every decision it changed (revisions of other URLs included) with the host
signals they cause, or a `Rejected` with the reason. It is what `neardup scan` runs for each event
(scan fingerprints in a process pool and hands each `Fetch` to `decide`), so the library and the
command decide alike, and a state directory written by one is continued by the other::

    with EventDeduplicator("state/", CoreSettings(k=3)) as dd:
        outcome = dd.add({"url": "https://example.com/a", "body": "<html>...</html>"})
        if isinstance(outcome, Rejected):
            print(outcome.reason)
        else:
            print(outcome.decision.verdict, outcome.decision.duplicate_of)
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from neardup_core.dedup.engine import Engine
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import Rejected, fingerprint_event
from neardup_core.hosts.tracker import HostTracker
from neardup_core.hosts.urls import url_identity
from neardup_core.messages import Decision, HostSignal
from neardup_core.settings import DEFAULT_SETTINGS, CoreSettings

__all__ = ["EventDeduplicator", "Outcome", "open_engine"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one page changed. `decision` is its URL's decision now, about the body of the URL's latest
    fetch (so an older fetch arriving late leaves it as it was). `published` is every decision the page
    made, in order, as `neardup scan` writes them and the stream publishes them: the URL's own (a new
    revision when it changed, the same one again for an event seen before) and the revisions of other
    URLs that the page now outranks. `host_signals` are the per-host trap signals those decisions caused."""

    decision: Decision
    published: tuple[Decision, ...]
    host_signals: tuple[HostSignal, ...]

    @property
    def revisions(self) -> list[Decision]:
        """The decisions of other URLs that this page changed."""
        own = url_identity(self.decision.url)
        return [d for d in self.published if url_identity(d.url) != own]


class EventDeduplicator:
    """Decisions for `pages.fetched` events: the index, the URL states and the host statistics over
    one state directory, as `neardup scan` keeps them.

    `state_dir` None keeps everything in memory, for one run. With `persist_hosts` False the host
    statistics are kept in memory even with a state directory (what `scan` does without `--hosts`).
    Raises `StateMismatch` when the directory was built with other state settings (k, the table
    design, the shingle size or the feature floor)."""

    def __init__(self, state_dir: str | Path | None, settings: CoreSettings = DEFAULT_SETTINGS, *,
                 persist_hosts: bool = True) -> None:
        self.settings = settings
        state = Path(state_dir) if state_dir is not None else None
        self.engine = Engine(settings, state)
        self.tracker = HostTracker.open(state / "hosts" if state is not None and persist_hosts else None,
                                        settings.host_policy)

    def add(self, event: Mapping[str, Any] | bytes, *, key: bytes | None = None,
            timestamp_ms: int | None = None) -> Outcome | Rejected:
        """Decide one `pages.fetched` event. A dict is read exactly as its JSON would be read from the
        topic. `key` is the record key it would carry (checked against the URL, as the stream does);
        an event without `fetched_at` is dated `timestamp_ms`, by default now (as `scan` dates it)."""
        if isinstance(event, bytes | bytearray | memoryview):
            raw = bytes(event)
        elif isinstance(event, Mapping):
            try:
                raw = orjson.dumps(dict(event))
            except TypeError as exc:  # orjson.JSONEncodeError: bytes, sets, objects
                return Rejected(f"event is not JSON-serialisable: {exc}", "validate")
        else:
            raise TypeError(f"an event is a dict in the pages.fetched schema or its JSON bytes, not "
                            f"{type(event).__name__}")
        stamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        result = fingerprint_event(raw, key=key, timestamp_ms=stamp, settings=self.settings)
        if isinstance(result, Rejected):
            return result
        return self.decide(result)

    def decide(self, fetch: Fetch, now_ms: int | None = None) -> Outcome:
        """Decide a page fingerprinted already (`fingerprint_event`), e.g. in another process."""
        published: list[Decision] = []
        signals: list[HostSignal] = []
        for decision, previous in self.engine.decide(fetch, now_ms):
            published.append(decision)
            signals += self.tracker.observe(decision, previous)
        current = self.decision(fetch.url)
        if current is None:  # the engine decides every fetch before it returns
            raise RuntimeError(f"no decision for {fetch.url} after it was decided")
        return Outcome(current, tuple(published), tuple(signals))

    def decision(self, url: str) -> Decision | None:
        """The URL's latest decision (by its identity), None when it was never fetched."""
        return self.engine.urls.load(url).last_decision()

    def flush_hosts(self) -> list[HostSignal]:
        """At the end of the input: close every open host window; one cumulative signal per host."""
        return self.tracker.flush()

    def close(self) -> None:
        """Release the state directory."""
        self.engine.close()
        self.tracker.close()

    def __enter__(self) -> EventDeduplicator:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def open_engine(state_dir: str | Path | None, settings: CoreSettings = DEFAULT_SETTINGS, *,
                persist_hosts: bool = True) -> EventDeduplicator:
    """Deprecated: `neardup_core.Deduplicator(state_dir, settings)` for pages, `EventDeduplicator` for
    events. An `EventDeduplicator` over `state_dir` (created when missing; None: in memory)."""
    warnings.warn("open_engine is deprecated: use neardup_core.Deduplicator(state_dir, settings) (add(url, html) "
                  "-> Decision), or neardup_core.embedded.EventDeduplicator for events in the topic's schema",
                  DeprecationWarning, stacklevel=2)
    return EventDeduplicator(state_dir, settings, persist_hosts=persist_hosts)
