"""Fetching again what Faust fetched and dropped.

faust-streaming 0.15 can drop records it has fetched, silently: `Consumer.getmany` hands on only the
records of partitions that are still active, under the same generation, while the flow is on, *when it
gets to them*, but aiokafka has already moved each partition's position past everything it returned.
A fetch in flight across a rebalance or a recovery (a restarted worker's fetcher runs while it reads
its changelogs; Faust then seeks the stream partitions and resumes them) can come back in between. Its
records are neither queued, acked nor committed, and the partition is read on from after them: only a
later seek to the committed offsets brings them back, and aiokafka's `seek_to_committed` skips a
partition with nothing committed. A later record handed on leaves a gap that Faust then commits over.
Seen here as the SIGKILL test stalling in about a third of its runs: the restarted worker held
`pages.fetched` partitions fetched to their end with nothing read, or pages whose probe answers never
came (faust-streaming issue #629 reports the symptom).

`RedeliveringConsumer`, the worker's consumer, is Faust's with its `getmany` changed at that one
point: a partition whose records it does not hand on is sought back (Faust's `Consumer.seek`) to the
first of them, so they are fetched again once the partition is resumed (and not at all if it was
revoked meanwhile). Records fetched twice are processed twice, which the idempotent state makes
harmless. `/debug/tasks` (`streams.web.views`) shows, per partition, what the consumer has handed on.

It also refuses gaps. Faust's fetch loop takes a record more than one past the partition's read
offset as a gap (compaction or transaction markers) and counts the offsets between as processed, so
the next commit passes over them. The soak test saw a restarted worker hand on `pages.fetched` records
72 and 75 of a partition after its recovery's seek, 73 and 74 never, and commit 76: two pages without a
decision. So a record that would open a gap in a partition whose records are acked is not handed on:
the partition is sought back to the read offset itself, one before the first missing one: Faust sets
the read offset to the next record's on a seek (its `seek`, `perform_seek`) but to the last record
handed on while it reads, so the record at the read offset may not have been handed on (a seek, then
a record of an older fetch). When the same record opens a gap again,
the gap is real (markers of a transactional producer, compaction) and it is handed on as Faust does.

And it fetches again what a flow resume drops from the queues. Every `FlowControlEvent.resume` clears
the queues between the consumer and the streams (`clear_on_resume`), on the assumption that the
consumer was just sought to the committed offsets. But a worker that recovers its tables resumes the
flow to read the changelogs, then resumes the stream partitions and awaits `perform_seek` while the
fetcher runs, and only then resumes the flow again (`Recovery._resume_streams`): a fetch of the stream
partitions that lands in between is queued, then cleared, and the partition is read on from its end.
Seen as a worker started over a backlog of `pages.fetched` that decided one full take (what its
agent had already taken from the queue) and never read that topic again. `RedeliveringQueue`, the
app's queue (`NeardupApp.FlowControlQueue`), tells the consumer the first offset it drops of each
partition, and the consumer seeks the partition back to it (unless it is below the committed offset);
what is left of the fetch being handed on at that moment is not handed on for that partition (it comes
again: handed on, it would move Faust's read offset past the records fetched again, and Faust's fetch
loop drops a record below its read offset).
(In the stalled runs, a partition with nothing committed was not sought at all, and one whose read offset
the seek set back to the committed offset was fetched again by the gap rule above only once a new record
came: at the end of a backlog, none does.)

And it does not let a commit pass a record it fetched that no agent acknowledged. Faust's commit
(`Consumer._new_offset`) takes the run of acknowledged offsets that follows the committed offset, and lets
the record *at* the committed offset be missing from it (`min(acked) - committed > 1`: the record there may
be a transaction marker, which no fetch returns, and Faust's read offset after a seek is that offset), and
with nothing committed yet (or 0) it takes any run. So a record dropped anywhere before its agent
acknowledged it, the first one after a seek or the first of a new group's partition, was committed over
when the records after it were acknowledged: a page without a decision, and the group's offset at the end
of the partition, where no look finds anything to read again (shown with `NEARDUP_FAULT_DROP_FETCHED` in
`tests/reliability/test_dropped_record.py`; once in CI as a replacement worker that never decided one
page). The consumer keeps the offsets of the acked topics' records its fetches returned (`_fetched`, from
the committed offset on, forgotten for a revoked partition as Faust forgets its acknowledgements) and holds
a partition's commit while the record at its head (`unacked_head`) is one of them and not acknowledged; the
stall check then reads it again, as any record fetched and dropped.

Apart from redelivery, its consumer thread (`CommittingThread`) commits at a cost that grows with the
partitions, not with their square, and runs every seek on its own loop: Faust seeks from the app's thread,
and aiokafka's fetcher, which is not thread-safe, can then lose a partition's records under its own
`fetched_records` and stop the worker.

Last, a net under all of these, for any way of dropping records not named above: every
`NEARDUP_STALL_CHECK_S` seconds (`check_stalls`, a timer of every worker) the consumer looks at each
stream partition it reads. One that holds records the group has not committed (its highwater is past
its committed offset) while none of its records is queued or being processed and none processed from
the committed offset on waits for a commit (`committing`: the broker away), unchanged since the last
look, was fetched and dropped somewhere: it is sought back to its committed offset (`stalled`) and read
again, at most `STALL_SEEKS` times for one such state (a tail of transaction markers looks the same and
is left alone after that). Seen once in CI: a worker on an empty disk, replacing one SIGKILLed five
times, never read the last 16 records of one `pages.fetched` partition, for 300 s, while everything
else ran.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from time import monotonic
from typing import Any

from aiokafka.errors import CommitFailedError, IllegalStateError
from aiokafka.structs import OffsetAndMetadata
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Consumer, ensure_aiokafka_TP
from faust.types import TP, Message
from mode.utils.queues import ThrowableQueue

from streams.web.metrics import RESEEKS, STALLS

log = logging.getLogger(__name__)


def missing_before(read_offset: int | None, offset: int) -> int | None:
    """The first offset Faust's fetch loop would count as processed without reading it, when the
    partition's read offset is `read_offset` and the next record is `offset`: it takes a record more
    than one past the read offset as a gap (`Consumer._drain_messages`)."""
    if read_offset and offset - read_offset > 1:
        return read_offset + 1
    return None


def first_offsets(items: Iterable[Any]) -> dict[TP, int]:
    """The first offset of each partition among queued events (items without a message are skipped)."""
    out: dict[TP, int] = {}
    for item in items:
        message = getattr(item, "message", None)
        if isinstance(message, Message):
            tp, offset = message.tp, message.offset
            if tp not in out or offset < out[tp]:
                out[tp] = offset
    return out


def parse_drops(spec: str) -> set[tuple[str, int, int]]:
    """`NEARDUP_FAULT_DROP_FETCHED`'s `topic:partition:offset,...` as (topic, partition, offset)."""
    out = set()
    for item in filter(None, spec.split(",")):
        topic, partition, offset = item.rsplit(":", 2)
        out.add((topic, int(partition), int(offset)))
    return out


@dataclass(frozen=True)
class Progress:
    """What the consumer knows of one stream partition at one look (`check_stalls`)."""

    committed: int | None
    """The group's committed offset as Faust knows it: the next record to process."""
    read: int | None
    """Faust's read offset."""
    highwater: int | None
    """The partition's end as the last fetch saw it; None before any."""
    busy: bool
    """Records of the partition are queued for the agent or taken and not acknowledged."""
    committing: bool = False
    """Records acknowledged from the committed offset on wait for a commit (the next commit interval, or the
    broker back): processed, not stalled. Acknowledged records after a hole are not."""


STALL_SEEKS = 3
"""How many times one stalled state of a partition is sought back before it is left alone."""


def stalled(before: Progress | None, now: Progress) -> int | None:
    """The offset to read a stream partition again from when it holds records the group has not committed
    and nothing of it is queued or processed, as it was at the last look (`before`); None when it is not
    stalled. Nothing committed yet: from its start."""
    if before is None or before != now or now.busy or now.committing or now.highwater is None:
        return None
    start = now.committed or 0
    return start if now.highwater > start else None


def committing(acked: list[int] | None, committed: int | None) -> bool:
    """Whether a partition's acknowledged offsets (Faust's `_acked`) run from its committed offset, so that
    Faust's next commit moves it (`Consumer._new_offset`); not when the first of them is past a hole."""
    if not acked:
        return False
    return committed is None or min(acked) <= committed


def unacked_head(fetched: set[int], acked: set[int], committed: int | None) -> int | None:
    """The offset a commit of a partition would pass without its record acknowledged, though a fetch
    returned that record: the committed offset (the next record to process), or with nothing committed the
    first offset fetched; None when that record is acknowledged or no fetch returned one there (a
    transaction marker, a compacted or deleted record: Faust's own rule lets those pass)."""
    if not fetched:
        return None
    head = committed if committed is not None else min(fetched)
    return head if head in fetched and head not in acked else None


def fetch_again(offset: int, committed: int | None) -> bool:
    """Whether a record at `offset` that a cleared queue dropped is to be fetched again: unless it is below
    the partition's committed offset (a record from before the partition was revoked and assigned again,
    which the group has done). Seeking there never skips a record not yet handed on: the records between
    the fetch position and it (when a seek to the committed offset came after it was fetched) were handed
    on before it, and are done or in a take."""
    return committed is None or offset >= committed


class RedeliveringQueue(ThrowableQueue):
    """Faust's flow-control queue that, when cleared, passes the first offset it drops of each partition
    to `on_drop` (the consumer's `redeliver`)."""

    def __init__(self, *args: Any, on_drop: Callable[[Mapping[TP, int]], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_drop = on_drop

    def partitions(self) -> set[TP]:
        """The partitions of the events queued now."""
        return set(first_offsets(self._queue))  # type: ignore[attr-defined]  # asyncio.Queue's deque

    def clear(self) -> None:
        dropped = first_offsets(self._queue)  # type: ignore[attr-defined]  # asyncio.Queue's deque
        super().clear()
        if dropped:
            self._on_drop(dropped)


@dataclass(frozen=True)
class FetchLimits:
    """Kafka's `fetch.min.bytes` and `fetch.max.wait.ms` for the worker's consumer (`NEARDUP_FETCH_*`), which
    Faust's settings do not reach: it passes aiokafka a fixed 1500 ms wait and aiokafka's 1 byte minimum."""

    min_bytes: int = 1
    max_wait_ms: int = 1500


class CommittingThread(AIOKafkaConsumerThread):
    """Faust's aiokafka consumer thread whose `_commit` builds the set of assigned partitions once per
    commit. Faust's (an edited copy) tests `tp in self.assignment()` for each offset committed, and
    `assignment()` builds the set of every assigned partition (changelogs included) anew each time: a
    commit cost the square of the partitions, 3% of the worker's GIL time at 32 partitions.

    Its consumer fetches with the app's `FetchLimits`: aiokafka reads them from the consumer when it starts
    and makes its fetcher (`AIOKafkaConsumer.start`), so they are set on the consumer Faust made, before."""

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        limits = getattr(self.app, "fetch_limits", FetchLimits())
        consumer._fetch_min_bytes = limits.min_bytes
        consumer._fetch_max_wait_ms = limits.max_wait_ms
        return consumer

    def seek(self, partition: TP, offset: int) -> None:
        """aiokafka's seek, run on this thread's loop: called from another thread (the app's, as Faust's
        `Consumer.seek` and `RedeliveringConsumer.redeliver` call it), it is scheduled there, in call order.
        aiokafka's fetcher is not thread-safe: its `seek_to` deletes the partition's fetched records, which its
        `fetched_records`, on this thread, may be draining at that moment; it then raises KeyError and the
        worker stops (seen once in CI: a replacement worker crashed as it resumed after its recovery)."""
        loop = self.thread_loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._seek_here(partition, offset)
            return
        try:
            loop.call_soon_threadsafe(self._seek_here, partition, offset)
        except RuntimeError:  # the loop is closed: the consumer stopped, and its positions with it
            log.info("%s:%d not sought to %d: the consumer thread has stopped", partition.topic, partition.partition,
                     offset)

    def _seek_here(self, partition: TP, offset: int) -> None:
        """aiokafka's seek, on this thread; a partition no longer assigned (a rebalance since the call) has no
        position to move."""
        try:
            super().seek(partition, offset)
        except IllegalStateError:
            log.info("%s:%d not sought to %d: no longer assigned", partition.topic, partition.partition, offset)

    async def _commit(self, offsets: Mapping[TP, int]) -> bool:
        consumer = self._ensure_consumer()
        now = monotonic()
        assigned = self.assignment()
        commitable_offsets = {tp: offset for tp, offset in offsets.items() if tp in assigned}
        try:
            aiokafka_offsets = {ensure_aiokafka_TP(tp): OffsetAndMetadata(offset, "")
                                for tp, offset in commitable_offsets.items()}
            self.tp_last_committed_at.update({tp: now for tp in commitable_offsets})
            await consumer.commit(aiokafka_offsets)
        except CommitFailedError as exc:
            if "already rebalanced" in str(exc):
                return False
            self.log.exception("Committing raised exception: %r", exc)
            await self.crash(exc)
            return False
        except IllegalStateError as exc:
            self.log.exception("Got exception: %r\nCurrent assignment: %r", exc, self.assignment())
            await self.crash(exc)
            return False
        except Exception as exc:
            self.log.exception("Got exception: %r\nCurrent assignment: %r", exc, self.assignment())
            await self.crash(exc)
            return False
        return True


class RedeliveringConsumer(Consumer):
    """Faust's aiokafka consumer whose `getmany` seeks back what it does not hand on, and what it
    would skip as a gap (the module's docstring says why)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gap_records: dict[TP, int] = {}  # partition -> the last record not handed on for a gap
        self._redeliveries = 0  # how many times `redeliver` sought partitions back
        self._redelivered: dict[TP, int] = {}  # partition -> the value of that count when it was last sought back
        self.drops: set[tuple[str, int, int]] = set()  # NEARDUP_FAULT_DROP_FETCHED (tests only)
        self._progress: dict[TP, Progress] = {}  # each stream partition at the last look
        # partition -> the (committed, highwater) it was last sought back at for a stall, and how often
        self._stall_seeks: dict[TP, tuple[tuple[int | None, int | None], int]] = {}
        # partition of an acked topic -> offsets its fetches returned, from the committed offset on
        self._fetched: dict[TP, set[int]] = {}
        self._acking: dict[TP, bool] = {}  # partition -> whether its topic is acked (Faust commits it)

    def _new_consumer_thread(self) -> AIOKafkaConsumerThread:
        return CommittingThread(self, loop=self.loop, beacon=self.beacon)

    def _fault_drop(self, tp: TP, offset: int) -> bool:
        """Whether NEARDUP_FAULT_DROP_FETCHED names this record (its topic without the prefix): it is then
        dropped as Faust can drop a record, once."""
        spec = next((d for d in self.drops if tp.topic.endswith(d[0]) and (d[1], d[2]) == (tp.partition, offset)),
                    None)
        if spec is None:
            return False
        self.drops.discard(spec)
        log.warning("NEARDUP_FAULT_DROP_FETCHED: %s:%d@%d fetched and dropped", tp.topic, tp.partition, offset)
        return True

    def _highwater(self, tp: TP) -> int | None:
        """The partition's last known highwater; None when aiokafka no longer holds it (it asserts that the
        partition is assigned, and its assignment can move ahead of Faust's)."""
        try:
            return self.highwater(tp)
        except Exception:  # noqa: BLE001  # a look at state: the next one comes in NEARDUP_STALL_CHECK_S
            return None

    async def check_stalls(self, queued: set[TP]) -> None:
        """Seek back each stream partition that `stalled` finds (the module's last paragraph); `queued`: the
        partitions with events in the app's queues."""
        app = self.app
        if app.rebalancing or app.in_recovery or not self.flow_active:
            self._progress.clear()
            return
        busy = queued | {m.tp for m in self._unacked_messages if not m.acked}
        paused = self._paused_partitions
        now = {tp: Progress(self._committed_offset.get(tp), self._read_offset.get(tp), self._highwater(tp),
                            tp in busy, self._committing(tp))
               for tp in sorted(self.assignment())
               if not self._is_changelog_tp(tp) and tp not in paused and app.topics.acks_enabled_for(tp.topic)}
        before, self._progress = self._progress, now
        for tp, progress in now.items():
            offset = stalled(before.get(tp), progress)
            if offset is None:
                continue
            state = (progress.committed, progress.highwater)  # a seek changes the read offset, not these
            last, seeks = self._stall_seeks.get(tp, (None, 0))
            seeks = seeks + 1 if last == state else 1
            if seeks > STALL_SEEKS:
                continue
            self._stall_seeks[tp] = (state, seeks)
            log.warning("%s:%d holds records before offset %s that nothing processes (committed %s, read %s, "
                        "nothing queued or in a take since the last look): fetched again from %d", tp.topic,
                        tp.partition, progress.highwater, progress.committed, progress.read, offset)
            self._redeliveries += 1
            self._redelivered[tp] = self._redeliveries
            await self.seek(tp, offset)  # its read offset changes: the next look starts over
            STALLS.inc()
            RESEEKS.inc()

    def _acked_topic(self, tp: TP) -> bool:
        """Whether Faust commits the partition's acknowledged offsets (its topic is an agent's), cached."""
        acking = self._acking.get(tp)
        if acking is None:
            acking = self._acking[tp] = self.app.topics.acks_enabled_for(tp.topic)
        return acking

    def _committing(self, tp: TP) -> bool:
        """Whether Faust's next commit moves the partition (`committing`), which it does not while its head
        record was fetched and not acknowledged (`_new_offset`)."""
        committed = self._committed_offset.get(tp)
        return committing(self._acked.get(tp), committed) and \
            unacked_head(self._fetched.get(tp, set()), self._acked_index[tp], committed) is None

    def redeliver(self, dropped: Mapping[TP, int]) -> None:
        """Seek each assigned stream partition back to the first offset a cleared queue dropped of it
        (`fetch_again`). Changelog partitions are left to the recovery, which reads them by its own offsets."""
        assigned = self.assignment()
        self._redeliveries += 1
        for tp, offset in sorted(dropped.items()):
            read, committed = self._read_offset.get(tp), self._committed_offset.get(tp)
            if tp not in assigned or self._is_changelog_tp(tp) or not fetch_again(offset, committed):
                continue
            # `committed` is Faust's view: None before its recovery has read the group's offsets
            log.info("the flow resumed with fetched records of %s:%d still queued (from %d, read %s, committed "
                     "as Faust knows it %s): fetched again from %d", tp.topic, tp.partition, offset, read, committed,
                     offset)
            self._thread.seek(tp, offset)  # aiokafka's seek, on its thread: a fetch in flight is discarded
            self._read_offset[tp] = offset or None
            self._redelivered[tp] = self._redeliveries
            RESEEKS.inc()

    async def on_partitions_revoked(self, revoked: set[TP]) -> None:
        """Faust forgets the acknowledgements of revoked partitions (and commits what is acknowledged after):
        the offsets fetched of them go too, or their head would look fetched and never acknowledged."""
        for tp in revoked:
            self._fetched.pop(tp, None)
        await super().on_partitions_revoked(revoked)

    def _new_offset(self, tp: TP) -> int | None:
        """Faust's next offset to commit for `tp`, unless its record at the head was fetched and not
        acknowledged (`unacked_head`): then None, and Faust's acknowledged offsets stay as they are."""
        fetched = self._fetched.get(tp)
        if not fetched:
            return super()._new_offset(tp)
        committed = self._committed_offset.get(tp)
        if committed is not None and min(fetched) < committed:
            fetched.difference_update([o for o in fetched if o < committed])
        head = unacked_head(fetched, self._acked_index[tp], committed)
        if head is not None:
            if self._acked.get(tp):
                log.warning("%s:%d: record %d was fetched and not acknowledged, and records after it were: not "
                            "committed past it (the stall check reads it again)", tp.topic, tp.partition, head)
            return None
        return super()._new_offset(tp)

    async def getmany(self, timeout: float) -> AsyncIterator[tuple[TP, Message]]:
        records, active = await self._wait_next_records(timeout)
        generation = self.app.consumer_generation_id
        redeliveries = self._redeliveries
        if records is None or self.should_stop:
            return
        dropped: dict[TP, int] = {}  # partition -> the first offset not handed on
        gaps: dict[TP, int] = {}  # partition -> the first offset the gap would count as processed
        cut = not self.flow_active  # from here on nothing of this fetch is handed on
        for tp, record in self.scheduler.iterate(records):
            fetched = self._fetched.get(tp)
            if fetched is None and self._acked_topic(tp):
                fetched = self._fetched[tp] = set()
            if fetched is not None:
                fetched.add(record.offset)
            if self._redelivered.get(tp, 0) > redeliveries:
                continue  # `redeliver` sought the partition back while this fetch was handed on: it comes again
            cut = cut or not self.flow_active or self.app.consumer_generation_id != generation
            if tp in dropped or cut or not (active is None or tp in active or tp in self._buffered_partitions):
                dropped.setdefault(tp, record.offset)
                continue
            if self.drops and self._fault_drop(tp, record.offset):
                continue
            # the read offset as Faust's fetch loop sees it: it reads each record before the next
            missing = missing_before(self._read_offset.get(tp), record.offset)
            if missing is not None and self.app.topics.acks_enabled_for(tp.topic):
                if self._gap_records.get(tp) != record.offset:
                    self._gap_records[tp] = record.offset
                    dropped[tp] = missing - 1  # the read offset: after a seek, the next record's
                    gaps[tp] = missing
                    continue
                log.warning("offsets %d..%d of %s:%d are not in the log (the same gap once fetched again): "
                            "taken as compaction or transaction markers", missing, record.offset - 1,
                            tp.topic, tp.partition)
            self.app.monitor.track_tp_end_offset(tp, self.highwater(tp))
            yield tp, self._to_message(tp, record)
        for tp, missing in gaps.items():
            log.warning("a record of %s:%d would leave offsets from %d unread and counted as processed: "
                        "fetched again from %d", tp.topic, tp.partition, missing, dropped[tp])
        if not dropped:
            return
        assigned = self.assignment()  # a set of every assigned partition, built anew: only when it is needed
        again = {tp: offset for tp, offset in sorted(dropped.items()) if tp in assigned}
        if again:
            log.info("fetched records not handed on (a partition paused or the group rebalancing meanwhile), "
                     "fetched again from: %s", ", ".join(f"{tp.topic}:{tp.partition}@{o}" for tp, o in again.items()))
        for tp, offset in again.items():
            await self.seek(tp, offset)
            RESEEKS.inc()
