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
harmless. `/debug/tasks` (`streams.web`) shows, per partition, what the consumer has handed on.

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
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from faust.transport.drivers.aiokafka import Consumer
from faust.types import TP, Message
from mode.utils.queues import ThrowableQueue

from streams.metrics import RESEEKS

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

    def clear(self) -> None:
        dropped = first_offsets(self._queue)  # type: ignore[attr-defined]  # asyncio.Queue's deque
        super().clear()
        if dropped:
            self._on_drop(dropped)


class RedeliveringConsumer(Consumer):
    """Faust's aiokafka consumer whose `getmany` seeks back what it does not hand on, and what it
    would skip as a gap (the module's docstring says why)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gap_records: dict[TP, int] = {}  # partition -> the last record not handed on for a gap
        self._redeliveries = 0  # how many times `redeliver` sought partitions back
        self._redelivered: dict[TP, int] = {}  # partition -> the value of that count when it was last sought back

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
            self._thread.seek(tp, offset)  # aiokafka's seek, at once: a fetch in flight is discarded
            self._read_offset[tp] = offset or None
            self._redelivered[tp] = self._redeliveries
            RESEEKS.inc()

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
            if self._redelivered.get(tp, 0) > redeliveries:
                continue  # `redeliver` sought the partition back while this fetch was handed on: it comes again
            cut = cut or not self.flow_active or self.app.consumer_generation_id != generation
            if tp in dropped or cut or not (active is None or tp in active or tp in self._buffered_partitions):
                dropped.setdefault(tp, record.offset)
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
        assigned = self.assignment()
        again = {tp: offset for tp, offset in sorted(dropped.items()) if tp in assigned}
        if again:
            log.info("fetched records not handed on (a partition paused or the group rebalancing meanwhile), "
                     "fetched again from: %s", ", ".join(f"{tp.topic}:{tp.partition}@{o}" for tp, o in again.items()))
        for tp, offset in again.items():
            await self.seek(tp, offset)
            RESEEKS.inc()
