"""The bodies of the worker's agents: what each does with one record, calling neardup_core.

    pages.fetched --fingerprint--> neardup.gather (by URL) --gather--> neardup.probes (by bucket)
    neardup.probes --index--> neardup.gather (answers for the pages, revisions for worse pages)
    neardup.gather --gather--> dedup.decisions, neardup.hosts (by host) --hosts--> frontier.host-signals

Records between the agents carry batches (`streams.records`): the fingerprint agent takes up to
`batch_max` events at a time, and every later step takes the records that arrive within
`hop_wait_s` together (the step before sent one per partition at once) and sends what they cause
for one partition in one record. So a page costs about the same number of Kafka records whatever
the number of tables, and a batch does not fan out into partitions x partitions records. Each
stateful agent applies a take's state changes with one write per partition (`Overlay` over a
`PartitionView`, committed as one changelog record by `streams.stores`). The index agent runs its
step in the index process (`streams.index_process`) and applies the writes that come back.

`Agents` holds what the bodies share: the app's topics and tables, the core settings, and the
per-process bookkeeping (when a fetch reached the gather stage). `streams.app` registers each
method as an agent (concurrency 1) or a timer.

Every send goes out at once (`force=True`): with Faust's `stream_publish_on_commit` a send made
while an event is processed would wait until that event's offset commits, a commit interval per
hop. Table reads and writes touch only the partition of the record being processed
(`PartitionView`), which is what Faust's changelogs assume.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import cast

from faust.streams import Stream
from faust.types import EventT, StreamT, TableT, TopicT

from neardup_core.dedup.gather import Gather, Published, UrlState, UrlStates
from neardup_core.dedup.retention import URL_CLOCK, advance_clock
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import Rejected, fingerprint_event
from neardup_core.hosts.tracker import HostTracker
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import Answer, Probe
from neardup_core.messages import HostSignal
from neardup_core.settings import CoreSettings
from neardup_core.store.overlay import Overlay
from streams import metrics, records, status
from streams.index_process import IndexOutcome, IndexProcess, index_step
from streams.pool import apply_each, chunks_for, extraction_pool
from streams.records import GatherMessage, HostChange, partition_of
from streams.stores import PartitionView, PrefixRocksStore

PENDING = b"\x01"  # urls table: PENDING | deadline (8 bytes) | URL for each page still waiting for answers


def now_ms() -> int:
    return int(time.time() * 1000)


def pending_key(deadline_ms: int, url: str) -> bytes:
    return PENDING + deadline_ms.to_bytes(8, "big") + url.encode()


def due_range(tick_ms: int) -> tuple[bytes, bytes]:
    """The pending keys whose deadline is at or before `tick_ms`."""
    return PENDING, PENDING + (tick_ms + 1).to_bytes(8, "big")


ALL_PENDING = (PENDING, PENDING + b"\xff" * 9)


@dataclass(frozen=True)
class Topics:
    """The topics the agents read and write (raw bytes keys and values)."""

    fetched: TopicT
    gather: TopicT
    probes: TopicT
    hosts: TopicT
    decisions: TopicT
    signals: TopicT
    rejected: TopicT


@dataclass(frozen=True)
class Tables:
    """The agents' tables: per URL state (and the deadlines of pages still waiting), the index
    buckets, per host counts."""

    urls: TableT[bytes, bytes]
    index: TableT[bytes, bytes]
    hosts: TableT[bytes, bytes]


class Agents:
    """One method per agent and timer of the worker."""

    def __init__(self, topics: Topics, tables: Tables, core: CoreSettings, *, partitions: int,
                 extract_processes: int, extract_nice: int = 0, batch_max: int = 256, batch_wait_s: float = 0.2,
                 hop_wait_s: float = 0.05, index_processes: int = 1, index_cache_bytes: int = 32 << 20) -> None:
        self.topics = topics
        self.tables = tables
        self.core = core
        self.partitions = partitions
        self.extract_processes = extract_processes
        self.extract_nice = extract_nice
        self.batch_max = batch_max
        self.batch_wait_s = batch_wait_s
        self.hop_wait_s = hop_wait_s
        self.rule = Gather(core)
        self.index_process = IndexProcess(core, partitions, index_cache_bytes, index_processes) \
            if index_processes > 0 else None
        # when a fetch reached the gather stage, for the latency metric
        self.received: dict[bytes, float] = {}

    def partition_of(self, key: bytes) -> int:
        return partition_of(key, self.partitions)

    # -- pages.fetched -----------------------------------------------------------------------------

    async def fingerprint(self, stream: StreamT[bytes]) -> None:
        """Stateless: validate and fingerprint in the process pool, a batch at a time (in chunks of a
        few pages per task); one gather record per partition for the batch's pages."""
        loop = asyncio.get_running_loop()
        batches = cast(Stream, stream).take_events(self.batch_max, within=self.batch_wait_s)  # StreamT lacks it
        pool = extraction_pool(self.extract_processes, self.core, self.extract_nice) \
            if self.extract_processes > 0 else None
        try:
            async for events in batches:
                jobs = [self._fingerprint_job(e) for e in events]
                parts = await asyncio.gather(*(loop.run_in_executor(pool, apply_each, fingerprint_job, chunk)
                                               for chunk in chunks_for(jobs, self.extract_processes)))
                fetches: dict[int, list[GatherMessage]] = defaultdict(list)
                for event, result in zip(events, (r for part in parts for r in part), strict=True):
                    metrics.PAGES.inc()
                    if isinstance(result, Fetch):
                        fetches[self.partition_of(url_identity(result.url).encode())].append(result)
                    else:
                        await self._reject(event, result)
                await self._send_gather(fetches)
        finally:
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)

    def _fingerprint_job(self, event: EventT) -> FingerprintJob:
        msg = event.message
        ts = int(msg.timestamp * 1000) if msg.timestamp else None
        return msg.value or b"", msg.key, ts, self.core

    async def _reject(self, event: EventT, rejected: Rejected) -> None:
        msg = event.message
        metrics.REJECTS.labels(rejected.stage).inc()
        status.RECORDER.rejected(rejected, key=msg.key, topic=msg.topic, partition=msg.partition, offset=msg.offset)
        rejection = rejected.message(msg.value or b"", msg.topic, msg.partition, msg.offset)
        await self.topics.rejected.send(force=True, key=msg.key, value=rejection.to_json())

    async def _send_gather(self, by_partition: dict[int, list[GatherMessage]]) -> None:
        await self._send_gather_packed({partition: [records.pack_gather_message(m) for m in messages]
                                        for partition, messages in by_partition.items()})

    async def _send_gather_packed(self, by_partition: dict[int, list[bytes]]) -> None:
        """One gather record per partition (more when they hold over `records.RECORD_BYTES`), of
        messages packed already (`records.pack_gather_message`: the index process packs its own)."""
        for partition, packed in sorted(by_partition.items()):
            for value in records.gather_records_packed(packed):
                await self.topics.gather.send(force=True, key=None, value=value, partition=partition)

    # -- neardup.gather ----------------------------------------------------------------------------

    async def gather(self, stream: StreamT[bytes]) -> None:
        """Per URL: start probe rounds, merge answers and revisions, decide overdue pages on ticks,
        publish decisions. The records that arrive within `hop_wait_s` are taken together: each
        partition's state changes are written at once, and what they cause goes out as one record
        per destination partition."""
        async for events in self._takes(stream):
            probes: list[Probe] = []
            published: list[Published] = []
            for partition, group in by_partition(events).items():
                messages = [m for event in group for m in records.decode_gather(event.message.value or b"")]
                with reading(stream, group):
                    new, decided = self._gather_partition(partition, messages)
                probes += new
                published += decided
            await self._send_probes(probes)
            await self._publish(published)

    def _gather_partition(self, partition: int, messages: list[GatherMessage]) -> tuple[list[Probe], list[Published]]:
        """1. Apply each message to its URL's state (loaded once), collecting the probes of new
        rounds and the decisions to publish; ticks decide the overdue pages.
        2. Save every state touched and move its pending key when its deadline changed, as one write."""
        view = Overlay(PartitionView(self.tables.urls, partition))
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
                metrics.PENDING.set(sum(1 for _ in view.scan(*ALL_PENDING)))
            elif isinstance(message, Fetch):
                self.received.setdefault(message.url.encode(), time.monotonic())
                new, decided = self.rule.on_fetch(state_of(message.url), message, now)
                probes += new
                published += decided
            elif isinstance(message, Answer):
                published += self.rule.on_answer(state_of(message.url), message, now)
            else:
                published += self.rule.on_revision(state_of(message.url), message, now)
        for url, state in touched.items():  # 2.
            states.save(url, state)
            before, after = deadline_before[url], self.rule.awaiting(state)
            if before != after:
                if before is not None:
                    view.delete(pending_key(before, url))
                if after is not None:
                    view.put(pending_key(after, url), b"")
        view.commit()
        return probes, published

    async def _send_probes(self, probes: list[Probe]) -> None:
        """One probes record per index partition (more when they hold over `records.RECORD_BYTES`)."""
        by_partition: dict[int, list[Probe]] = defaultdict(list)
        for probe in probes:
            by_partition[self.partition_of(probe.lo)].append(probe)
        for index_partition, batch in sorted(by_partition.items()):
            for value in records.probe_records(batch):
                await self.topics.probes.send(force=True, key=None, value=value, partition=index_partition)

    def _expire_urls(self, states: UrlStates, messages: list[GatherMessage]) -> None:
        """With a retention: move the partition's clock by the record's fetches and remove the URL
        states last fetched before the horizon, with their pending keys (a bounded step, in the
        record's one write, so the deletes reach the changelog and its replays)."""
        retention = self.core.retention
        if retention is None:
            return
        newest = max((m.fetched_at_ms for m in messages if isinstance(m, Fetch)), default=None)
        states.horizon_ms = retention.horizon(advance_clock(states.store, URL_CLOCK, newest, now_ms()))
        for identity, state in states.expire(retention.sweep_max):
            deadline = self.rule.awaiting(state)
            if deadline is not None:
                states.store.delete(pending_key(deadline, identity))
            metrics.EXPIRED.labels("url").inc()

    async def _publish(self, published: list[Published]) -> None:
        """The decisions, and their host changes in records of at most about `records.RECORD_BYTES`
        per host partition. A record read again re-publishes a URL's decision once per message about
        it (thousands after a crash): equal ones go out once."""
        changes: dict[int, list[HostChange]] = defaultdict(list)
        for d, before in dict.fromkeys(published):
            metrics.DECISIONS.labels(d.verdict).inc()
            if d.revision > 1:
                metrics.REVISIONS.inc()
            if not d.complete:
                metrics.PROVISIONAL.inc()
            key = d.url.encode()
            if d.complete and key in self.received:
                metrics.DECISION_SECONDS.observe(time.monotonic() - self.received.pop(key))
            await self.topics.decisions.send(force=True, key=url_identity(d.url).encode(), value=d.to_json())
            changes[self.partition_of(d.host.encode())].append((d, before))
        for partition, batch in sorted(changes.items()):
            for value in records.encode_host_changes_capped(batch):
                await self.topics.hosts.send(force=True, key=None, value=value, partition=partition)

    async def send_ticks(self) -> None:
        """Timer of the leader: a tick to every gather partition, processed there in order with the
        answers, and to every hosts partition (hosts with unsignalled changes send them)."""
        now = now_ms()
        tick, host_tick = records.encode_gather([now]), records.encode_host_tick(now)
        for partition in range(self.partitions):
            await self.topics.gather.send(force=True, key=None, value=tick, partition=partition)
        for partition in range(self.partitions):
            await self.topics.hosts.send(force=True, key=None, value=host_tick, partition=partition)

    # -- neardup.probes ----------------------------------------------------------------------------

    async def index(self, stream: StreamT[bytes]) -> None:
        """Per bucket: look up and insert the probes of the records taken together, with one write
        per partition; answer the pages and revise the worse pages found, one gather record per
        destination partition. The step runs in the index process (`streams.index_process`) unless
        it is off; every partition of the take is handed over at once, and each one's writes are
        applied as its outcome comes back."""
        try:
            if self.index_process is not None:
                await self.index_process.start()
            async for events in self._takes(stream):
                await self._index_take(stream, events)
        finally:
            if self.index_process is not None:
                self.index_process.close()

    async def _index_take(self, stream: StreamT[bytes], events: Sequence[EventT]) -> None:
        groups = by_partition(events)
        steps = [asyncio.ensure_future(self._index_step(stream, partition, group))
                 for partition, group in groups.items()]
        out: dict[int, list[bytes]] = defaultdict(list)
        try:
            for (partition, group), step in zip(groups.items(), steps, strict=True):
                outcome = await step
                with reading(stream, group):
                    PartitionView(self.tables.index, partition).write_encoded(outcome.write_sets)
                self._count_index(outcome)
                for destination, packed in outcome.gather.items():
                    out[destination] += packed
        finally:
            for step in steps:
                step.cancel()
        await self._send_gather_packed(out)

    async def _index_step(self, stream: StreamT[bytes], partition: int, group: Sequence[EventT]) -> IndexOutcome:
        raws = [event.message.value or b"" for event in group]
        if self.index_process is None:
            with reading(stream, group):
                return index_step(PartitionView(self.tables.index, partition), raws, self.core, self.partitions,
                                  now_ms())
        path = cast(PrefixRocksStore, self.tables.index.data).partition_db_path(partition)
        return await self.index_process.run(partition, path, raws, now_ms())

    def _count_index(self, outcome: IndexOutcome) -> None:
        for _ in range(outcome.probes):
            metrics.PROBE_SECONDS.observe(outcome.seconds / outcome.probes)
        metrics.PROBES.inc(outcome.probes)
        if self.core.retention is not None:
            metrics.EXPIRED.labels("version").inc(outcome.expired_versions)
            metrics.EXPIRED.labels("entry").inc(outcome.expired_entries)

    # -- neardup.hosts -----------------------------------------------------------------------------

    async def hosts(self, stream: StreamT[bytes]) -> None:
        """Per host: move pages between counts, emit a signal when a penalty crosses a threshold or a
        window closes, and on a tick for hosts with unsignalled changes; each partition's changes of
        the records taken together are written at once. A record's offset is its position for the
        tracker: a record seen again (after a crash) changes nothing and sends its hosts' last signals
        again (`HostTracker.apply`)."""
        async for events in self._takes(stream):
            signals: list[HostSignal] = []
            for partition, group in by_partition(events).items():
                view = Overlay(PartitionView(self.tables.hosts, partition))
                tracker = HostTracker(view, self.core.host_policy)
                with reading(stream, group):
                    for event in group:
                        msg = event.message
                        changes = [item for item in records.decode_hosts(msg.value or b"") if not isinstance(item, int)]
                        sent = tracker.apply(changes, msg.offset) if changes else tracker.settle(msg.offset)
                        status.RECORDER.hosts_updated(tracker, {d.host for d, _ in changes}, sent)  # reads the overlay
                        signals += sent
                    view.commit()
            for signal in signals:
                await self.topics.signals.send(force=True, key=signal.host.encode(), value=signal.to_json())

    def _takes(self, stream: StreamT[bytes]) -> AsyncIterator[Sequence[EventT]]:
        """The records of an internal topic that arrive within `hop_wait_s` (at most `batch_max`):
        a step sends one record per partition at once, so the next step takes them as one batch."""
        return cast(Stream, stream).take_events(self.batch_max, within=self.hop_wait_s)  # StreamT lacks it


FingerprintJob = tuple[bytes, bytes | None, int | None, CoreSettings]
"""A record's value, key and timestamp (ms), and the settings: what `fingerprint_event` takes."""


def fingerprint_job(job: FingerprintJob) -> Fetch | Rejected:
    """`fingerprint_event` of one record, in the extraction pool."""
    raw, key, timestamp_ms, settings = job
    return fingerprint_event(raw, key=key, timestamp_ms=timestamp_ms, settings=settings)


def by_partition(events: Sequence[EventT]) -> dict[int, list[EventT]]:
    """Each partition's events, in the order they were read (offset order)."""
    grouped: dict[int, list[EventT]] = defaultdict(list)
    for event in events:
        grouped[event.message.partition].append(event)
    return grouped


@contextmanager
def reading(stream: StreamT[bytes], group: Sequence[EventT]) -> Iterator[None]:
    """Table reads and writes inside go to the partition of `group` (one partition's events of a
    take): Faust's tables find the partition through the stream's current event, which a take does
    not set while its events are handled. The event before is put back after: while the agent
    awaits, the take reads the next record in the background, which sets the current event and
    then waits for this take to end, and it needs that event afterwards."""
    stream_ = cast(Stream, stream)
    before = stream_.current_event
    stream_._set_current_event(group[-1])
    try:
        yield
    finally:
        stream_._set_current_event(before)
