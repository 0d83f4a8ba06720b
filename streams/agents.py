"""The bodies of the worker's agents: what each does with one record, calling neardup_core.

    pages.fetched --fingerprint--> neardup.gather (by URL) --gather--> neardup.probes (by bucket)
    neardup.probes --index--> neardup.gather (answers for the pages, revisions for worse pages)
    neardup.gather --gather--> dedup.decisions, neardup.hosts (by host) --hosts--> frontier.host-signals

Records between the agents carry batches (`streams.records`): the fingerprint agent takes up to
`batch_max` events at a time, and every later step takes the records that arrive within
`hop_wait_s` together (the step before sent one per partition at once) and sends what they cause
for one partition in one record. So a page costs about the same number of Kafka records whatever
the number of tables, and a batch does not fan out into partitions x partitions records. Each take
is one `streams.commit.Take`: its state changes held per table partition, its sends, and the commit
steps that make them durable before the take's input is acknowledged (any failure there stops the
worker, `streams.commit.guarded`). The index agent runs its step in the index process
(`streams.index_process`) and puts the writes that come back in the take.

A record that cannot be processed (an internal record that does not decode, a step that raises on
it) does not stop the worker: its partition's records are processed again one by one, and the one
that fails alone becomes a dead letter in `pages.rejected` with the stage, topic, partition and
offset (`Agents._isolated`). A page whose extraction process dies is fingerprinted again alone, in a
new process, and is a dead letter if that one dies too.

`Agents` holds what the bodies share: the app's topics and tables, the core settings, and the
per-process bookkeeping (when a fetch reached the gather stage). `streams.app` registers each
method as an agent (concurrency 1) or a timer.

A take's records go out with its commit (`Take.commit`, in aiokafka batches per partition), not
through Faust's `stream_publish_on_commit` buffer, which would hold them until the input's offsets
commit, a commit interval per hop; the timer's ticks go out at once (`force=True`). Table reads
and writes touch only the partition of the record being processed, which is what Faust's changelogs
assume.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import Executor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TypeVar, cast

from faust.streams import Stream
from faust.types import AppT, EventT, StreamT, TableT, TopicT

from neardup_core.dedup.gather import Gather, Published, UrlState, UrlStates
from neardup_core.dedup.retention import URL_CLOCK, advance_clock
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import BodyJob, FingerprintBatch, RawRecord, Rejected, fingerprint_body
from neardup_core.hosts.tracker import HostTracker
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import Answer, Probe
from neardup_core.messages import HostSignal
from neardup_core.settings import CoreSettings
from neardup_core.store.base import Store
from neardup_core.store.overlay import Overlay
from streams import metrics, records, status
from streams.commit import Fail, Take, guarded, stop_worker
from streams.index_process import IndexOutcome, IndexProcess, index_step
from streams.pool import apply_each, chunks_for, extraction_pool
from streams.records import GatherMessage, HostChange, partition_of
from streams.stores import PrefixRocksStore

log = logging.getLogger(__name__)
R = TypeVar("R")

PENDING = b"\x01"  # urls table: PENDING | deadline (8 bytes) | URL for each page still waiting for answers


def now_ms() -> int:
    return int(time.time() * 1000)


def pending_key(deadline_ms: int, url: str) -> bytes:
    return PENDING + deadline_ms.to_bytes(8, "big") + url.encode()


def due_range(tick_ms: int) -> tuple[bytes, bytes]:
    """The pending keys whose deadline is at or before `tick_ms`."""
    return PENDING, PENDING + (tick_ms + 1).to_bytes(8, "big")


ALL_PENDING = (PENDING, PENDING + b"\xff" * 9)
PENDING_ROUNDS = 2.5
"""Tick intervals after which a gather partition's waiting pages leave `neardup_pending_pages`."""


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

    def __init__(self, app: AppT, topics: Topics, tables: Tables, core: CoreSettings, *, partitions: int,
                 extract_processes: int, extract_nice: int = 0, batch_max: int = 256, batch_wait_s: float = 0.2,
                 hop_wait_s: float = 0.05, index_processes: int = 1, index_cache_bytes: int = 32 << 20,
                 tick_interval_s: float = 5.0, fail: Fail = stop_worker) -> None:
        self.app = app
        self.topics = topics
        self.tables = tables
        self.core = core
        self.partitions = partitions
        self.extract_processes = extract_processes
        self.extract_nice = extract_nice
        self.batch_max = batch_max
        self.batch_wait_s = batch_wait_s
        self.hop_wait_s = hop_wait_s
        self.fail = fail
        """What a failure the worker cannot handle does: `stop_worker` (tests raise instead)."""
        self._pool: Executor | None = None
        """The extraction processes (`_shared_pool`): two batches of the fingerprint agent may be in them."""
        self.finishing: asyncio.Future[None] | None = None
        """The fingerprint agent's batch being committed in the background (`_fingerprint`, step 3)."""
        self.rule = Gather(core)
        self.index_process = IndexProcess(core, partitions, index_cache_bytes, index_processes) \
            if index_processes > 0 else None
        # when a fetch reached the gather stage, for the latency metric
        self.received: dict[bytes, float] = {}
        self.tick_interval_s = tick_interval_s
        self.pending: dict[int, tuple[float, int]] = {}
        """Per gather partition: when its last tick was processed here (monotonic) and the pages waiting then."""

    def partition_of(self, key: bytes) -> int:
        return partition_of(key, self.partitions)

    # -- pages.fetched -----------------------------------------------------------------------------

    async def fingerprint(self, stream: StreamT[bytes]) -> None:
        """Stateless: validate here, and fingerprint each distinct body the memo lacks in the process pool
        (`FingerprintBatch`), a batch at a time (in chunks of a few bodies per task); one gather record per
        partition for the batch's pages."""
        await guarded("the fingerprint agent", self._fingerprint(stream), self.fail)

    async def _fingerprint(self, stream: StreamT[bytes]) -> None:
        """1. Take a batch and hold its records' acknowledgement (`Message.incref`): `take_events`
           acknowledges a batch when the agent asks for the next, and this one is not committed yet.
        2. Parse it and hand its bodies to the extraction processes.
        3. Wait until the batch before is committed (takes commit in order), then finish this one in
           the background (`_finish_batch`) and ask for the next: its bodies reach the processes while
           this one's outputs are committed, so the processes do not wait for the event loop."""
        batches = cast(Stream, stream).take_events(self.batch_max, within=self.batch_wait_s)  # StreamT lacks it
        self._shared_pool()  # forked now, not when the first batch waits for it
        self.finishing = None
        try:
            async for events in batches:
                for event in events:  # 1.
                    event.message.incref()
                take = Take.begin(self.app)
                batch = FingerprintBatch(map(self._raw_record, events), self.core)  # 2.
                metrics.BODIES.labels("extracted").inc(len(batch.jobs))
                metrics.BODIES.labels("remembered").inc(batch.remembered)
                extraction = asyncio.ensure_future(self._fingerprint_jobs(batch.jobs))
                if self.finishing is not None:  # 3.
                    await self.finishing
                self.finishing = asyncio.ensure_future(
                    guarded("the fingerprint agent", self._finish_batch(take, events, batch, extraction), self.fail))
        finally:
            if self.finishing is not None and not self.finishing.done():
                self.finishing.cancel()  # its records were not acknowledged: they are read again
            pool, self._pool = self._pool, None
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)

    async def _finish_batch(self, take: Take, events: Sequence[EventT], batch: FingerprintBatch,
                            extraction: Awaitable[list[Fetch | Rejected]]) -> None:
        """A batch's gather records and dead letters, committed; then its records acknowledged."""
        results = batch.finish(await extraction)
        fetches: dict[int, list[GatherMessage]] = defaultdict(list)
        for event, result in zip(events, results, strict=True):
            metrics.PAGES.inc()
            if isinstance(result, Fetch):
                fetches[self.partition_of(url_identity(result.url).encode())].append(result)
            else:
                await self._reject(take, event, result)
        await self._send_gather(take, fetches)
        await take.commit()
        for event in events:
            event.ack()  # the hold of step 1 released: Faust may now commit their offsets

    def _extraction_pool(self) -> Executor | None:
        if self.extract_processes <= 0:
            return None
        return extraction_pool(self.extract_processes, self.core, self.extract_nice)

    def _shared_pool(self) -> Executor | None:
        """The extraction pool, started when first needed (again after one broke)."""
        if self._pool is None:
            self._pool = self._extraction_pool()
        return self._pool

    async def _fingerprint_jobs(self, jobs: list[BodyJob]) -> list[Fetch | Rejected]:
        """Each job's outcome. When an extraction process dies (killed, out of memory), the pool is
        replaced (by the first batch to see it broken: two batches may be in it) and this batch's jobs
        are fingerprinted again one at a time, each in a new pool, and a job whose process dies again
        is rejected (stage `extract`), with every record of the batch that carries its body."""
        loop = asyncio.get_running_loop()
        pool = self._shared_pool()
        try:
            parts = await asyncio.gather(*(loop.run_in_executor(pool, apply_each, fingerprint_body, chunk)
                                           for chunk in chunks_for(jobs, self.extract_processes)))
            return [r for part in parts for r in part]
        except BrokenProcessPool:
            log.warning("an extraction process died; fingerprinting the batch's %d bodies again one at a time",
                        len(jobs))
        if pool is not None and self._pool is pool:
            self._pool = None
            pool.shutdown(wait=False)
        out: list[Fetch | Rejected] = []
        for job in jobs:
            alone = self._extraction_pool()
            try:
                out.append(await loop.run_in_executor(alone, fingerprint_body, job))
            except BrokenProcessPool:
                out.append(Rejected("the extraction process died while fingerprinting this event, twice "
                                    "(killed, or out of memory)", "extract"))
            finally:
                if alone is not None:
                    alone.shutdown(wait=False, cancel_futures=True)
        return out

    @staticmethod
    def _raw_record(event: EventT) -> RawRecord:
        msg = event.message
        return msg.value or b"", msg.key, int(msg.timestamp * 1000) if msg.timestamp else None

    async def _reject(self, take: Take, event: EventT, rejected: Rejected) -> None:
        msg = event.message
        metrics.REJECTS.labels(rejected.stage).inc()
        status.RECORDER.rejected(rejected, key=msg.key, topic=msg.topic, partition=msg.partition, offset=msg.offset)
        letter = rejected.dead_letter(msg.value or b"", msg.topic, msg.partition, msg.offset, key=msg.key,
                                      settings=self.core)
        take.send(self.topics.rejected, key=letter.key, value=letter.value)

    async def _send_gather(self, take: Take, by_partition: dict[int, list[GatherMessage]]) -> None:
        await self._send_gather_packed(take, {partition: [records.pack_gather_message(m) for m in messages]
                                              for partition, messages in by_partition.items()})

    async def _send_gather_packed(self, take: Take, by_partition: dict[int, list[bytes]]) -> None:
        """One gather record per partition (more when they hold over `records.RECORD_BYTES`), of
        messages packed already (`records.pack_gather_message`: the index process packs its own)."""
        for partition, packed in sorted(by_partition.items()):
            for value in records.gather_records_packed(packed):
                take.send(self.topics.gather, key=None, value=value, partition=partition)

    async def _isolated(self, take: Take, table: TableT[bytes, bytes], partition: int, group: Sequence[EventT],
                        step: Callable[[Store, int, Sequence[EventT]], R], stage: str) -> list[R]:
        """`step` of one partition's events of a take, writing to the take's transaction of `table`; when it
        raises, the events one at a time, and an event that fails alone is a dead letter (its writes dropped)."""
        tx = take.writes(table, partition)
        attempt = Overlay(tx)
        try:
            result = step(attempt, partition, group)
        except Exception as exc:
            log.warning("a %s step failed on %d records of %s:%d (%s: %s); processing them one at a time",
                        stage, len(group), group[0].message.topic, partition, type(exc).__name__, exc)
        else:
            attempt.commit()
            return [result]
        out: list[R] = []
        for event in group:
            attempt = Overlay(tx)
            try:
                out.append(step(attempt, partition, [event]))
            except Exception as exc:
                await self._reject(take, event, Rejected(f"{stage} step failed: {type(exc).__name__}: {exc}", stage))
            else:
                attempt.commit()
        return out

    # -- neardup.gather ----------------------------------------------------------------------------

    async def gather(self, stream: StreamT[bytes]) -> None:
        """Per URL: start probe rounds, merge answers and revisions, decide overdue pages on ticks,
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
                published += self.rule.on_revision(state_of(message.url), message, now)
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

    # -- neardup.probes ----------------------------------------------------------------------------

    async def index(self, stream: StreamT[bytes]) -> None:
        """Per bucket: look up and insert the probes of the records taken together, with one write
        per partition; answer the pages and revise the worse pages found, one gather record per
        destination partition. The step runs in the index process (`streams.index_process`) unless
        it is off; every partition of the take is handed over at once, and each one's writes are
        put in the take as its outcome comes back."""
        await guarded("the index agent", self._index(stream), self.fail)

    async def _index(self, stream: StreamT[bytes]) -> None:
        try:
            if self.index_process is not None:
                await self.index_process.start()
            async for events in self._takes(stream):
                take = Take.begin(self.app)
                stepped = await self._index_take(take, events)
                await take.commit()
                self._applied(stepped)
        finally:
            if self.index_process is not None:
                self.index_process.close()

    async def _index_take(self, take: Take, events: Sequence[EventT]) -> list[int]:
        """The take's index steps, their writes in `take` and their messages sent; the partitions whose
        outcome came from the index process."""
        groups = by_partition(events)
        steps = await self._index_steps(take, groups)
        out: dict[int, list[bytes]] = defaultdict(list)
        stepped: list[int] = []
        for partition, group in groups.items():
            step = steps[partition]
            if isinstance(step, IndexOutcome):
                outcomes = [step]
                stepped.append(partition)
                take.writes(self.tables.index, partition).write_many(step.writes)
            else:
                log.warning("the index step failed on %d records of partition %d (%s: %s); processing them "
                            "one at a time in the event loop", len(group), partition, type(step).__name__, step)
                outcomes = await self._isolated(take, self.tables.index, partition, group, self._index_here, "index")
            for outcome in outcomes:
                self._count_index(outcome)
                for destination, packed in outcome.gather.items():
                    out[destination] += packed
        await self._send_gather_packed(take, out)
        return stepped if self.index_process is not None else []

    def _applied(self, partitions: list[int]) -> None:
        """After a take's commit: the index process's outcomes of `partitions` are in their primaries,
        at these sequence numbers (`IndexProcess.applied`)."""
        if self.index_process is None:
            return
        store = cast(PrefixRocksStore, self.tables.index.data)
        for partition in partitions:
            self.index_process.applied(partition, store.partition_sequence(partition))

    async def _index_steps(self, take: Take, groups: dict[int, list[EventT]]
                           ) -> dict[int, IndexOutcome | Exception]:
        """Each partition's index step: its outcome, or what it raised. In the index process, every
        partition of the take goes in one call (`IndexProcess.run_many`)."""
        if self.index_process is None:
            steps: dict[int, IndexOutcome | Exception] = {}
            for partition, group in groups.items():
                try:
                    steps[partition] = self._index_here(Overlay(take.writes(self.tables.index, partition)),
                                                        partition, group)
                except Exception as exc:
                    steps[partition] = exc
            return steps
        store = cast(PrefixRocksStore, self.tables.index.data)
        parts = {partition: (store.partition_db_path(partition), [event.message.value or b"" for event in group])
                 for partition, group in groups.items()}
        sequences = {partition: store.partition_sequence(partition) for partition in groups}
        try:
            return dict(await self.index_process.run_many(parts, now_ms(), sequences))
        except Exception as exc:  # the index process died twice: every partition's step failed
            return {partition: exc for partition in groups}

    def _index_here(self, view: Store, partition: int, group: Sequence[EventT]) -> IndexOutcome:
        """`index_step` in the event loop on `view` (the take's transaction, or an attempt over it); the
        outcome's `writes` are those `view` holds."""
        overlay = view if isinstance(view, Overlay) else Overlay(view)
        return index_step(overlay, [event.message.value or b"" for event in group], self.core, self.partitions,
                          now_ms())

    def _count_index(self, outcome: IndexOutcome) -> None:
        if outcome.probes:  # once per step: observing each of its ~30 probes per page cost 2% of the loop
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
        await guarded("the hosts agent", self._hosts(stream), self.fail)

    async def _hosts(self, stream: StreamT[bytes]) -> None:
        async for events in self._takes(stream):
            take = Take.begin(self.app)
            signals: list[HostSignal] = []
            for partition, group in by_partition(events).items():
                for sent in await self._isolated(take, self.tables.hosts, partition, group, self._hosts_partition,
                                                 "hosts"):
                    signals += sent
            for signal in signals:
                take.send(self.topics.signals, key=signal.host.encode(), value=signal.to_json())
            await take.commit()

    def _hosts_partition(self, view: Store, partition: int, events: Sequence[EventT]) -> list[HostSignal]:
        tracker = HostTracker(view, self.core.host_policy)
        signals: list[HostSignal] = []
        changed: set[str] = set()
        for event in events:
            msg = event.message
            changes = [item for item in records.decode_hosts(msg.value or b"") if not isinstance(item, int)]
            signals += tracker.apply(changes, msg.offset) if changes else tracker.settle(msg.offset)
            changed.update(d.host for d, _ in changes)
        status.RECORDER.hosts_updated(tracker, changed, signals)  # reads the view: once per take, not per record
        return signals

    def _takes(self, stream: StreamT[bytes]) -> AsyncIterator[Sequence[EventT]]:
        """The records of an internal topic that arrive within `hop_wait_s` (at most `batch_max`):
        a step sends one record per partition at once, so the next step takes them as one batch."""
        return cast(Stream, stream).take_events(self.batch_max, within=self.hop_wait_s)  # StreamT lacks it


def by_partition(events: Sequence[EventT]) -> dict[int, list[EventT]]:
    """Each partition's events, in the order they were read (offset order)."""
    grouped: dict[int, list[EventT]] = defaultdict(list)
    for event in events:
        grouped[event.message.partition].append(event)
    return grouped
