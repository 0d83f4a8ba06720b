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
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from faust.transport.drivers.aiokafka import Consumer
from faust.types import TP, Message

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
            RESEEKS.inc()
