"""The gather agent: per URL, probe rounds started, answers and notices merged, overdue pages decided
on ticks, decisions published; and the leader's timer that sends the ticks."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Sequence

from faust.types import EventT, StreamT

from neardup_core.dedup.gather import Gather, Published, UrlState, UrlStates
from neardup_core.dedup.retention import URL_CLOCK
from neardup_core.dedup.sweep import sweep
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import Answer, Probe
from neardup_core.store.base import Store
from streams.agents.base import Shared, Stage, by_partition, now_ms
from streams.kafka import records
from streams.kafka.records import GatherMessage, HostChange
from streams.state.commit import Take, guarded
from streams.web import metrics

log = logging.getLogger(__name__)

PENDING = b"\x01"  # urls table: PENDING | deadline (8 bytes) | URL for each page still waiting for answers


def pending_key(deadline_ms: int, url: str) -> bytes:
    return PENDING + deadline_ms.to_bytes(8, "big") + url.encode()


def due_range(tick_ms: int) -> tuple[bytes, bytes]:
    """The pending keys whose deadline is at or before `tick_ms`."""
    return PENDING, PENDING + (tick_ms + 1).to_bytes(8, "big")


ALL_PENDING = (PENDING, PENDING + b"\xff" * 9)
PENDING_ROUNDS = 2.5
"""Tick intervals after which a gather partition's waiting pages leave `neardup_pending_pages`."""




class GatherStage(Stage):
    """Per URL state in the urls table (`neardup_core.dedup.gather`), a partition of a take at a time."""

    def __init__(self, shared: Shared, *, tick_interval_s: float = 5.0) -> None:
        super().__init__(shared)
        self.rule = Gather(shared.core)
        # when a fetch reached the gather stage, for the latency metric
        self.received: dict[bytes, float] = {}
        self.tick_interval_s = tick_interval_s
        self.pending: dict[int, tuple[float, int]] = {}
        """Per gather partition: when its last tick was processed here (monotonic) and the pages waiting then."""

    async def gather(self, stream: StreamT[bytes]) -> None:
        """Per URL: start probe rounds, merge answers and notices, decide overdue pages on ticks,
        publish decisions. The records that arrive within `hop_wait_s` are taken together: each
        partition's state changes are written at once, and what they cause goes out as one record
        per destination partition."""
        await guarded("the gather agent", self._gather(stream), self.fail)

    async def _gather(self, stream: StreamT[bytes]) -> None:
        async for events in self._takes(stream):
            take = Take.begin(self.app)
            probes: list[Probe] = []
            published: list[Published] = []
            for partition, group in by_partition(events).items():
                for new, decided in await self._isolated(take, self.tables.urls, partition, group,
                                                         self._gather_partition, "gather"):
                    probes += new
                    published += decided
            await self._send_probes(take, probes)
            await self._publish(take, published)
            await take.commit()

    def _gather_partition(self, view: Store, partition: int, events: Sequence[EventT]
                          ) -> tuple[list[Probe], list[Published]]:
        """1. Apply each message to its URL's state (loaded once), collecting the probes of new
        rounds and the decisions to publish; ticks decide the overdue pages.
        2. Save every state touched and move its pending key when its deadline changed."""
        messages = [m for event in events for m in records.decode_gather(event.message.value or b"")]
        states = UrlStates(view, self.core.retention)
        self._expire_urls(states, messages)
        touched: dict[str, UrlState] = {}
        deadline_before: dict[str, int | None] = {}

        def state_of(url: str) -> UrlState:
            key = url_identity(url)  # one state per URL however spelt within the record
            if key not in touched:
                touched[key] = states.load(key)
                deadline_before[key] = self.rule.awaiting(touched[key])
            return touched[key]

        now = now_ms()
        probes: list[Probe] = []
        published: list[Published] = []
        for message in messages:  # 1.
            if isinstance(message, int):
                for key, _ in list(view.scan(*due_range(message))):
                    published += self.rule.on_tick(state_of(key[9:].decode()), message)
                self._note_pending(partition, sum(1 for _ in view.scan(*ALL_PENDING)))
            elif isinstance(message, Fetch):
                self.received.setdefault(message.url.encode(), time.monotonic())
                new, decided = self.rule.on_fetch(state_of(message.url), message, now)
                probes += new
                published += decided
            elif isinstance(message, Answer):
                published += self.rule.on_answer(state_of(message.url), message, now)
            else:
                published += self.rule.on_notice(state_of(message.url), message, now)
        for url, state in touched.items():  # 2.
            states.save(url, state)
            before, after = deadline_before[url], self.rule.awaiting(state)
            if before != after:
                if before is not None:
                    view.delete(pending_key(before, url))
                if after is not None:
                    view.put(pending_key(after, url), b"")
        return probes, published

    def _note_pending(self, partition: int, count: int) -> None:
        """`neardup_pending_pages`: the pages waiting in every gather partition of this worker, each as its
        last tick counted them. A partition without a tick for `PENDING_ROUNDS` tick intervals (moved to
        another worker) drops out."""
        now = time.monotonic()
        self.pending[partition] = (now, count)
        horizon = now - PENDING_ROUNDS * self.tick_interval_s
        for p in [p for p, (seen, _) in self.pending.items() if seen < horizon]:
            del self.pending[p]
        metrics.PENDING.set(sum(n for _, n in self.pending.values()))

    async def _send_probes(self, take: Take, probes: list[Probe]) -> None:
        """One probes record per index partition (more when they hold over `records.RECORD_BYTES`)."""
        by_partition: dict[int, list[Probe]] = defaultdict(list)
        for probe in probes:
            by_partition[self.partition_of(probe.lo)].append(probe)
        for index_partition, batch in sorted(by_partition.items()):
            for value in records.probe_records(batch):
                take.send(self.topics.probes, key=None, value=value, partition=index_partition)

    def _expire_urls(self, states: UrlStates, messages: list[GatherMessage]) -> None:
        """With a retention: move the partition's clock by the record's fetches and remove the URL
        states last fetched before the horizon, with their pending keys (a bounded step, in the
        take's writes, so the deletes reach the changelog and its replays)."""
        if self.core.retention is None:
            return
        newest = max((m.fetched_at_ms for m in messages if isinstance(m, Fetch)), default=None)
        for identity, state in sweep(self.core.retention, states.store, URL_CLOCK, newest, now_ms(), urls=states).urls:
            deadline = self.rule.awaiting(state)
            if deadline is not None:
                states.store.delete(pending_key(deadline, identity))
            metrics.EXPIRED.labels("url").inc()

    async def _publish(self, take: Take, published: list[Published]) -> None:
        """The decisions, and their host changes in records of at most about `records.RECORD_BYTES`
        per host partition. A record read again re-publishes a URL's decision once per message about
        it (thousands after a crash): equal ones go out once."""
        changes: dict[int, list[HostChange]] = defaultdict(list)
        for d, before in dict.fromkeys(published):
            metrics.DECISIONS.labels(d.verdict).inc()
            if d.revision > 1:
                metrics.REVISIONS.inc()
            if d.partial_of and (before is None or not before.partial_of):
                metrics.PARTIAL_COPIES.inc()
            if not d.complete:
                metrics.PROVISIONAL.inc()
            key = d.url.encode()
            if d.complete and key in self.received:
                metrics.DECISION_SECONDS.observe(time.monotonic() - self.received.pop(key))
            take.send(self.topics.decisions, key=url_identity(d.url).encode(), value=d.to_json())
            changes[self.partition_of(d.host.encode())].append((d, before))
        for partition, batch in sorted(changes.items()):
            for value in records.encode_host_changes_capped(batch):
                take.send(self.topics.hosts, key=None, value=value, partition=partition)

    async def send_ticks(self) -> None:
        """Timer of the leader: a tick to every gather partition, processed there in order with the
        answers, and to every hosts partition (hosts with unsignalled changes send them). A tick lost
        (the broker refused it) is made again by the next timer, so it is only logged."""
        now = now_ms()
        tick, host_tick = records.encode_gather([now]), records.encode_host_tick(now)
        for partition in range(self.partitions):
            await self.topics.gather.send(force=True, key=None, value=tick, partition=partition)
        for partition in range(self.partitions):
            await self.topics.hosts.send(force=True, key=None, value=host_tick, partition=partition)
