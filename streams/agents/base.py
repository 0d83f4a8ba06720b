"""The bodies of the worker's agents: what each does with one record, calling neardup_core.

    pages.fetched --fingerprint--> neardup.gather (by URL) --gather--> neardup.probes (by bucket)
    neardup.probes --index--> neardup.gather (answers for the pages, notices for worse pages)
    neardup.gather --gather--> dedup.decisions, neardup.hosts (by host) --hosts--> frontier.host-signals

Records between the agents carry batches (`streams.kafka.records`): the fingerprint agent takes up to
`batch_max` events at a time, and every later step takes the records that arrive within
`hop_wait_s` together (the step before sent one per partition at once) and sends what they cause
for one partition in one record. So a page costs about the same number of Kafka records whatever
the number of tables, and a batch does not fan out into partitions x partitions records. Each take
is one `streams.state.commit.Take`: its state changes held per table partition, its sends, and the commit
steps that make them durable before the take's input is acknowledged (any failure there stops the
worker, `streams.state.commit.guarded`). The index agent runs its step in the index process
(`streams.processes.index`) and puts the writes that come back in the take.

A record that cannot be processed (an internal record that does not decode, a step that raises on
it) does not stop the worker: its partition's records are processed again one by one, and the one
that fails alone becomes a dead letter in `pages.rejected` with the stage, topic, partition and
offset (`Stage._isolated`). A page whose extraction process dies is fingerprinted again alone, in a
new process, and is a dead letter if that one dies too.

Each agent is a `Stage` in a module of its own (`fingerprint`, `gather`, `index`, `hosts`); `Stage`
holds what they share: the app's topics and tables, the core settings, and the helpers below.
`streams.agents.Agents` makes the four and `streams.app` registers each as an agent (concurrency 1),
and the ticks as the leader's timer.

A take's records go out with its commit (`Take.commit`, in aiokafka batches per partition), not
through Faust's `stream_publish_on_commit` buffer, which would hold them until the input's offsets
commit, a commit interval per hop; the timer's ticks go out at once (`force=True`). Table reads
and writes touch only the partition of the record being processed, which is what Faust's changelogs
assume.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from faust.streams import Stream
from faust.types import AppT, EventT, StreamT, TableT, TopicT

from neardup_core.fingerprint.page import Rejected
from neardup_core.settings import CoreSettings
from neardup_core.store.base import Store
from neardup_core.store.overlay import Overlay
from streams.kafka import records
from streams.kafka.records import partition_of
from streams.state.commit import Fail, Take, stop_worker
from streams.web import metrics, status

log = logging.getLogger(__name__)
R = TypeVar("R")


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
    """The agents' tables: per URL state (and the deadlines of pages still waiting), the index
    buckets, per host counts."""

    urls: TableT[bytes, bytes]
    index: TableT[bytes, bytes]
    hosts: TableT[bytes, bytes]


@dataclass
class Shared:
    """What every agent of a worker shares: the app's topics and tables, the core settings, the partition
    count, how the later agents take records, and what a failure the worker cannot handle does."""

    app: AppT
    topics: Topics
    tables: Tables
    core: CoreSettings
    partitions: int
    batch_max: int = 256
    hop_wait_s: float = 0.05
    fail: Fail = stop_worker
    """`stop_worker` (tests raise instead)."""


class Stage:
    """An agent of the worker over what the agents share (`Shared`), with the helpers that send gather
    records and turn a record that cannot be processed into a dead letter."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.app = shared.app
        self.topics = shared.topics
        self.tables = shared.tables
        self.core = shared.core
        self.partitions = shared.partitions
        self.batch_max = shared.batch_max
        self.hop_wait_s = shared.hop_wait_s

    @property
    def fail(self) -> Fail:
        return self.shared.fail

    def partition_of(self, key: bytes) -> int:
        return partition_of(key, self.partitions)

    async def _reject(self, take: Take, event: EventT, rejected: Rejected) -> None:
        msg = event.message
        metrics.REJECTS.labels(rejected.stage).inc()
        status.RECORDER.rejected(rejected, key=msg.key, topic=msg.topic, partition=msg.partition, offset=msg.offset)
        letter = rejected.dead_letter(msg.value or b"", msg.topic, msg.partition, msg.offset, key=msg.key,
                                      settings=self.core)
        take.send(self.topics.rejected, key=letter.key, value=letter.value)

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
