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

Two remedies, both with Faust's own seek:

- `RedeliveringConsumer`, the worker's consumer: its `getmany` is Faust's, except that a partition whose
  records it does not hand on is sought back to the first of them, so they are fetched again once the
  partition is resumed (and not at all if it was revoked meanwhile);
- `RedeliveryWatch`, a timer, the safety net for any other way of losing fetched records: a partition
  whose position is past the last record handed to its streams while their queues are empty, unchanged
  over two checks, is sought to just after the last record handed on, or to its start when none was
  (`refetch_from`). A partition is sought at most once per position, so a false alarm (a partition
  whose log starts past offset 0) costs one seek.

Records fetched twice are processed twice, which the idempotent state makes harmless.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from faust.transport.drivers.aiokafka import Consumer
from faust.types import TP, AppT, Message

from streams.metrics import RESEEKS

log = logging.getLogger(__name__)


class RedeliveringConsumer(Consumer):
    """Faust's aiokafka consumer whose `getmany` seeks back what it does not hand on (the module's
    docstring says why)."""

    async def getmany(self, timeout: float) -> AsyncIterator[tuple[TP, Message]]:
        records, active = await self._wait_next_records(timeout)
        generation = self.app.consumer_generation_id
        if records is None or self.should_stop:
            return
        dropped: dict[TP, int] = {}  # partition -> the first offset not handed on
        cut = not self.flow_active  # from here on nothing of this fetch is handed on
        for tp, record in self.scheduler.iterate(records):
            cut = cut or not self.flow_active or self.app.consumer_generation_id != generation
            if tp in dropped or cut or not (active is None or tp in active or tp in self._buffered_partitions):
                dropped.setdefault(tp, record.offset)
                continue
            self.app.monitor.track_tp_end_offset(tp, self.highwater(tp))
            yield tp, self._to_message(tp, record)
        assigned = self.assignment()
        again = {tp: offset for tp, offset in sorted(dropped.items()) if tp in assigned}
        if again:
            log.info("fetched records not handed on (a partition paused or the group rebalancing meanwhile), "
                     "fetched again from: %s", ", ".join(f"{tp.topic}:{tp.partition}@{o}" for tp, o in again.items()))
        for tp, offset in again.items():
            await self.seek(tp, offset)


@dataclass(frozen=True, slots=True)
class Delivery:
    """What the consumer has done with one partition: its fetch position (next offset aiokafka
    returns), the offset it last handed to the partition's streams (None: none since the last seek),
    and whether those streams have records queued."""

    position: int
    handed_on: int | None
    queued: bool

    @property
    def behind(self) -> bool:
        """Records were fetched that no stream got."""
        return not self.queued and self.position > (self.handed_on + 1 if self.handed_on is not None else 0)


@dataclass
class RedeliveryWatch:
    """A timer body: notices partitions whose fetched records were dropped and seeks them again."""

    app: AppT
    topics: frozenset[str]
    """The topics the agents read (changelogs are read by the tables' recovery, not by streams)."""
    last: dict[TP, Delivery] = field(default_factory=dict)
    sought: dict[TP, int] = field(default_factory=dict)
    """The position each partition was re-sought at (never twice at one position)."""

    async def check(self) -> None:
        if self.app.rebalancing or self.app.in_recovery:
            self.last.clear()
            return
        now = await self.observe()
        stalled = sorted(tp for tp in stalled_partitions(self.last, now) if self.sought.get(tp) != now[tp].position)
        self.last = now
        for tp in stalled:
            offset = refetch_from(now[tp])
            log.warning("records of %s:%d fetched up to offset %d but handed on only up to %s: fetching again "
                        "from offset %d", tp.topic, tp.partition, now[tp].position, now[tp].handed_on, offset)
            await self.app.consumer.seek(tp, offset)
            RESEEKS.inc()
            self.sought[tp] = now[tp].position
        if stalled:
            self.last.clear()

    async def observe(self) -> dict[TP, Delivery]:
        """Each assigned partition of `topics`."""
        consumer: Any = self.app.consumer
        conductor: Any = self.app.topics
        out: dict[TP, Delivery] = {}
        for tp in consumer.assignment():
            channels = conductor._tp_index.get(tp)  # the channels Faust delivers the partition to
            if tp.topic not in self.topics or not channels:
                continue
            try:
                position = await consumer.position(tp)
            except Exception:  # the partition may be revoked while we look
                continue
            if position is None:
                continue
            out[tp] = Delivery(position, consumer._read_offset.get(tp),
                               any(not channel.queue.empty() for channel in channels))
        return out


def refetch_from(delivery: Delivery) -> int:
    """Where to fetch a stalled partition from again: after the last record handed on, or from the
    start when none was since the last seek (then nothing was committed either: Faust seeks every
    partition with a committed offset and hands on from there; aiokafka's `seek_to_committed` skips
    the others, so `Consumer.perform_seek` would leave such a partition where it is)."""
    return delivery.handed_on + 1 if delivery.handed_on is not None else 0


def stalled_partitions(before: dict[TP, Delivery], now: dict[TP, Delivery]) -> list[TP]:
    """The partitions behind at two checks in a row with nothing changed in between."""
    return [tp for tp, delivery in now.items() if delivery.behind and before.get(tp) == delivery]
