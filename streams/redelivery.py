"""Fetching again what Faust fetched and dropped.

faust-streaming 0.15 can drop records it has fetched: its fetch loop hands on only the records of
partitions that are active when the fetch *returns* (`Consumer.getmany`), while aiokafka has already
moved the partition's position past them. A fetch in flight across a rebalance's recovery (the fetcher
runs while a restarted worker reads its changelogs, then Faust seeks the stream partitions and resumes
them) can return in between: its records are neither queued, nor acked, nor committed, and the
partition is never read again until the next rebalance (faust-streaming issue #629 reports the same
symptom). Seen here as a worker restarted after SIGKILL that holds `pages.fetched` partitions with
nothing read from them, its position at the end of the log and its stream idle.

`RedeliveryWatch` notices a partition like that (its position is past the last record handed to its
streams, their queues are empty, and neither changed between two checks) and seeks it with Faust's
`Consumer.seek` to just after the last record handed on, or to its start when none was (`refetch_from`).
Records fetched twice are processed twice, which the idempotent state makes harmless. A partition is
sought at most once per position, so a false alarm (a partition whose log starts past offset 0) costs
one seek.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from faust.types import TP, AppT

from streams.metrics import RESEEKS

log = logging.getLogger(__name__)


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
