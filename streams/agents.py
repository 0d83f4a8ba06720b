"""The bodies of the worker's agents: what each does with one event, calling neardup_core.

    pages.fetched --fingerprint--> neardup.gather (by URL) --gather--> neardup.probes (by bucket)
    neardup.probes --index--> neardup.gather (answers for the page, revisions for worse pages)
    neardup.gather --gather--> dedup.decisions, neardup.hosts (by host) --hosts--> frontier.host-signals

`Agents` holds what the bodies share: the app's topics and tables, the core settings, and the
per-process bookkeeping (deadlines written, when a fetch reached the gather stage).
`streams.app` registers each method as an agent (concurrency 1), a timer or a signal receiver.

Every send goes out at once (`force=True`): with Faust's `stream_publish_on_commit` a send made
while an event is processed would wait until that event's offset commits, a commit interval per
hop. Table reads and writes touch only the partition of the event being processed
(`PartitionView`), which is what Faust's changelogs assume.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

from faust.streams import Stream
from faust.types import EventT, StreamT, TableT, TopicT
from mode.types.signals import BaseSignalT

from neardup_core.dedup.gather import Gather, Published, UrlState, UrlStates
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import Rejected, fingerprint_event
from neardup_core.hosts.tracker import HostTracker
from neardup_core.index.bucket import Answer, probe_bucket
from neardup_core.settings import CoreSettings
from streams import metrics, records
from streams.stores import PartitionView, scan_partition

FINGERPRINT_BATCH = 64  # events per batch of extraction jobs
FINGERPRINT_WITHIN_S = 0.1  # how long a batch waits to fill
NO_DEADLINE, LAST_DEADLINE = b"", b"\xff" * 8  # the bounds of every deadline key in `pending`


def now_ms() -> int:
    return int(time.time() * 1000)


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
    """The agents' tables: per URL state, pending deadlines, the index buckets, per host counts."""

    urls: TableT[bytes, bytes]
    pending: TableT[bytes, bytes]
    index: TableT[bytes, bytes]
    hosts: TableT[bytes, bytes]


@contextmanager
def extraction_pool(processes: int) -> Iterator[Executor | None]:
    """Processes for fingerprinting while the fingerprint agent runs; None (the event loop's
    default executor) when `processes` is 0."""
    if processes <= 0:
        yield None
        return
    pool = ProcessPoolExecutor(processes)
    try:
        yield pool
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


class Agents:
    """One method per agent, timer or signal receiver of the worker."""

    def __init__(self, topics: Topics, tables: Tables, core: CoreSettings, *, partitions: int,
                 extract_processes: int) -> None:
        self.topics = topics
        self.tables = tables
        self.core = core
        self.partitions = partitions
        self.extract_processes = extract_processes
        self.rule = Gather(core)
        # when a fetch reached the gather stage, for the latency metric
        self.received: dict[bytes, float] = {}
        # deadlines this process wrote: a page's answers mostly leave its deadline as it was, and one
        # write (with its changelog record) per page is enough; after a restart every one is rewritten
        # once, in case the crash lost a changelog record the local store kept
        self.written_deadlines: dict[bytes, bytes] = {}

    # -- pages.fetched -----------------------------------------------------------------------------

    async def fingerprint(self, stream: StreamT[bytes]) -> None:
        """Stateless: validate and fingerprint in the process pool, a batch at a time."""
        loop = asyncio.get_running_loop()
        batches = cast(Stream, stream).take_events(FINGERPRINT_BATCH, within=FINGERPRINT_WITHIN_S)  # StreamT lacks it
        with extraction_pool(self.extract_processes) as pool:
            async for events in batches:
                results = await asyncio.gather(*(loop.run_in_executor(pool, self._fingerprint_job(e)) for e in events))
                for event, result in zip(events, results, strict=True):
                    metrics.PAGES.inc()
                    if isinstance(result, Fetch):
                        await self.topics.gather.send(force=True, key=result.url.encode(),
                                                      value=records.encode_gather(result))
                    else:
                        await self._reject(event, result)

    def _fingerprint_job(self, event: EventT) -> functools.partial[Fetch | Rejected]:
        msg = event.message
        ts = int(msg.timestamp * 1000) if msg.timestamp else None
        return functools.partial(fingerprint_event, msg.value or b"", key=msg.key, timestamp_ms=ts, settings=self.core)

    async def _reject(self, event: EventT, rejected: Rejected) -> None:
        msg = event.message
        metrics.REJECTS.labels(rejected.stage).inc()
        rejection = rejected.message(msg.value or b"", msg.topic, msg.partition, msg.offset)
        await self.topics.rejected.send(force=True, key=msg.key, value=rejection.to_json())

    # -- neardup.gather ----------------------------------------------------------------------------

    async def gather(self, stream: StreamT[bytes]) -> None:
        """Per URL: start probe rounds, merge answers and revisions, publish decisions."""
        async for event in stream.events():
            message = records.decode_gather(event.message.value)
            partition = event.message.partition
            if isinstance(message, int):
                await self._on_tick(partition, message)
                continue
            key = event.message.key
            states = UrlStates(PartitionView(self.tables.urls, partition))
            url = key.decode()
            state = states.load(url)
            now = now_ms()
            if isinstance(message, Fetch):
                self.received.setdefault(key, time.monotonic())
                probes, decisions = self.rule.on_fetch(state, message, now)
                for probe in probes:
                    await self.topics.probes.send(force=True, key=probe.lo, value=records.encode_probe(probe))
            elif isinstance(message, Answer):
                decisions = self.rule.on_answer(state, message, now)
            else:
                decisions = self.rule.on_revision(state, message, now)
            states.save(url, state)
            self._track_pending(key, state)
            await self._publish(decisions)

    async def _on_tick(self, partition: int, tick_ms: int) -> None:
        """Decide overdue pages of this partition provisionally (inside the stream, so tables are writable)."""
        pending = self.tables.pending
        due = [key for key, deadline in scan_partition(pending, partition, NO_DEADLINE, LAST_DEADLINE)
               if int.from_bytes(deadline, "big") <= tick_ms]
        metrics.PENDING.set(sum(1 for _ in scan_partition(pending, partition, NO_DEADLINE, LAST_DEADLINE)))
        states = UrlStates(PartitionView(self.tables.urls, partition))
        for key in due:
            state = states.load(key.decode())
            decisions = self.rule.on_tick(state, tick_ms)
            states.save(key.decode(), state)
            del pending[key]
            self.written_deadlines.pop(key, None)
            await self._publish(decisions)

    def _track_pending(self, key: bytes, state: UrlState) -> None:
        pending = self.tables.pending
        deadline = self.rule.awaiting(state)
        if deadline is not None:
            value = deadline.to_bytes(8, "big")
            if self.written_deadlines.get(key) != value:
                pending[key] = self.written_deadlines[key] = value
        else:
            self.written_deadlines.pop(key, None)
            if pending.get(key) is not None:
                del pending[key]

    async def _publish(self, published: list[Published]) -> None:
        for d, before in published:
            metrics.DECISIONS.labels(d.verdict).inc()
            if d.revision > 1:
                metrics.REVISIONS.inc()
            key = d.url.encode()
            if d.complete and key in self.received:
                metrics.DECISION_SECONDS.observe(time.monotonic() - self.received.pop(key))
            await self.topics.decisions.send(force=True, key=key, value=d.to_json())
            await self.topics.hosts.send(force=True, key=d.host.encode(), value=records.encode_host_change(d, before))

    async def send_ticks(self) -> None:
        """Timer of the leader: a tick to every gather partition, processed there in order with the answers."""
        tick = records.encode_gather(now_ms())
        for partition in range(self.partitions):
            await self.topics.gather.send(force=True, key=None, value=tick, partition=partition)

    async def forget_deadlines(self, sender: Any, /, *args: Any, signal: BaseSignalT[Any], **kwargs: Any) -> None:
        """On partitions revoked: another worker may change a partition's deadlines while it is away
        from this one."""
        self.written_deadlines.clear()

    # -- neardup.probes ----------------------------------------------------------------------------

    async def index(self, stream: StreamT[bytes]) -> None:
        """Per bucket: look up, insert, answer the page and revise the worse pages found."""
        async for event in stream.events():
            probe = records.decode_probe(event.message.value)
            started = time.perf_counter()
            view = PartitionView(self.tables.index, event.message.partition)
            answer, revisions = probe_bucket(view, probe, self.core.design, self.core.k)
            metrics.PROBE_SECONDS.observe(time.perf_counter() - started)
            metrics.PROBES.inc()
            await self.topics.gather.send(force=True, key=answer.url.encode(), value=records.encode_gather(answer))
            for revision in revisions:
                await self.topics.gather.send(force=True, key=revision.url.encode(),
                                              value=records.encode_gather(revision))

    # -- neardup.hosts -----------------------------------------------------------------------------

    async def hosts(self, stream: StreamT[bytes]) -> None:
        """Per host: move the page between counts, emit a signal when the penalty crosses a threshold."""
        async for event in stream.events():
            decision, before = records.decode_host_change(event.message.value)
            tracker = HostTracker(PartitionView(self.tables.hosts, event.message.partition), self.core.host_policy)
            for signal in tracker.observe(decision, before):
                await self.topics.signals.send(force=True, key=signal.host.encode(), value=signal.to_json())
