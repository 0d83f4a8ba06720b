"""The commit protocol of a take: how a batch of input records becomes outputs, changelog records and
local state, in an order that loses nothing when the worker dies at any point.

An agent processes a take (the records it read together) into one `Take`: a partition transaction
per table partition it touches (`Take.writes`: reads see the take's own writes, nothing reaches
RocksDB yet) and the records it sends (`Take.send`). Then `Take.commit` runs, per take:

1. Produce each transaction's writes to its table's changelog, one record per state key (a delete
   is a tombstone), to the table partition's own changelog partition, each carrying the writer's
   group generation in a header (`GENERATION_HEADER`). Keyed by state key, a compacted changelog
   holds the live state, and recovery replays the live state, not the history. A transaction's
   records go to one partition, so they are appended to aiokafka batches and sent a batch at a time
   (`produce_batches`), not a record at a time.
2. Produce the take's outputs (decisions, internal records, dead letters), each partition's records
   in order and in as few batches as fit, as in 1. A keyed record goes to the partition Kafka's
   default partitioner gives its key (`streams.kafka.records.key_partition`, murmur2: the partition Faust's
   `Topic.send` chose before), so a URL's decisions stay in one partition, in order.
3. Wait until the broker has acknowledged every record of 1 and 2. Any refusal raises: the caller
   stops the worker (`stop_worker`) before the take's input is acknowledged.
4. Refuse to go on when the group moved on while the take was processed (another generation: this
   worker may no longer own the partitions, and a new owner replays the take).
5. Write each transaction to its partition's RocksDB in one atomic batch, together with the
   changelog offset it reached (Faust's persisted offset, where a recovery on this disk resumes)
   and the generation.
6. Return. The agent then acknowledges this take's input records: the later agents by asking for their
   next take (`Stream.take_events` acks a take when the agent comes back for the next), the
   fingerprint agent, which asks for its next take before this one commits, by releasing the
   reference it held on each record (`FingerprintStage._finish_batch`). Faust commits acknowledged offsets after
   flushing its producer.

A worker killed between 3 and 5 left changelog records its disk lacks: Faust's recovery reads the
changelog from the persisted offset of 5 and applies them. Killed before 6, its input is read again
and processed again: every state change is idempotent and monotone, so a replay re-sends at most
equal records. Recovery (`streams.state.stores.PrefixRocksStore.apply_changelog_batch`) skips a record of
an older generation than one it has applied to that partition: a stalled worker that the group has
replaced cannot overwrite its successor's state.

Step 1 uses Faust's producer (`ProducerT.send`, an explicit partition), not `Collection.send_changelog`:
that one's delivery callback writes the persisted offset to RocksDB at once, before step 5 has written
the records it covers, and a worker killed in between would resume its recovery past them.

Anything that fails in 1-5 (or while processing) is not handled here: `guarded` turns it into one
log line and an exit with `EXIT_FAILED`, so the group rebalances and another worker (or this one,
restarted) replays the take. A record that cannot be processed at all is not such a failure: the
agents turn it into a dead letter before it reaches a take's commit.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn, cast

from faust.types import AppT, RecordMetadata, TableT, TopicT

from neardup_core.store.overlay import Overlay
from streams.kafka.produce import produce_batches, record_batches
from streams.kafka.records import key_partition
from streams.state.stores import GENERATION_HEADER, PartitionView, PrefixRocksStore, generation_bytes

log = logging.getLogger(__name__)

EXIT_FAILED = 70
"""The worker's exit code when a take could not be committed (sysexits' EX_SOFTWARE)."""


def stop_worker(what: str, exc: BaseException) -> NoReturn:
    """Log why, then end the process at once: no `finally`, no offset commit, no clean leave of the group."""
    log.critical("stopping the worker: %s failed (%s: %s); its input was not acknowledged and will be "
                 "processed again", what, type(exc).__name__, exc, exc_info=exc)
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_FAILED)


Fail = Callable[[str, BaseException], NoReturn]


async def guarded(what: str, body: Awaitable[None], fail: Fail = stop_worker) -> None:
    """Run an agent's body; any exception stops the worker (`fail`) before the take it was in is acked.
    Cancellation (a rebalance, a shutdown) goes through."""
    try:
        await body
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        fail(what, exc)


@dataclass
class _Transaction:
    table: TableT[bytes, bytes]
    partition: int
    overlay: Overlay


@dataclass
class Take:
    """One take's partition transactions and output records, committed together (the module's steps)."""

    app: AppT
    generation: int
    transactions: dict[tuple[str, int], _Transaction] = field(default_factory=dict)
    outputs: dict[tuple[str, int | None], list[tuple[bytes | None, bytes]]] = field(default_factory=dict)
    """The records to produce, by topic and partition (None: by the key's partition), in order."""
    topics: dict[str, TopicT] = field(default_factory=dict)

    @classmethod
    def begin(cls, app: AppT) -> Take:
        return cls(app, app.consumer_generation_id)

    def writes(self, table: TableT[bytes, bytes], partition: int) -> Overlay:
        """The transaction of one table partition: a `Store` whose reads see this take's writes."""
        key = (table.name, partition)
        tx = self.transactions.get(key)
        if tx is None:
            tx = self.transactions[key] = _Transaction(table, partition, Overlay(PartitionView(table, partition)))
        return tx.overlay

    def send(self, topic: TopicT, *, key: bytes | None, value: bytes, partition: int | None = None) -> None:
        """A record to produce with the take (step 2 of `commit`); its acknowledgement is awaited there."""
        name = topic.get_topic_name()
        self.topics.setdefault(name, topic)
        self.outputs.setdefault((name, partition), []).append((key, value))

    async def commit(self) -> None:
        """Steps 1-5 of the module's docstring."""
        headers = [(GENERATION_HEADER, generation_bytes(self.generation))]
        producer = self.app.producer
        produced: list[tuple[_Transaction, list[tuple[bytes, bytes | None]], list[Awaitable[int]]]] = []
        batches = record_batches(producer)
        for tx in self.transactions.values():  # 1.
            items = tx.overlay.pending()
            if not items:
                continue
            topic = tx.table.changelog_topic.get_topic_name()
            if batches is not None:
                acks = await produce_batches(batches, topic, tx.partition, items, headers)
            else:
                acks = [_offset(await producer.send(topic, key, value, tx.partition, None, headers))
                        for key, value in items]
            produced.append((tx, items, acks))
        sent = await self._produce_outputs(batches)  # 2.
        await asyncio.gather(*sent)  # 3.
        offsets: list[int] = []
        for _tx, _items, acks in produced:
            offsets.append(max(await asyncio.gather(*acks)))
        if self.app.consumer_generation_id != self.generation:  # 4.
            raise GroupMovedOn(self.generation, self.app.consumer_generation_id)
        for (tx, items, _acks), offset in zip(produced, offsets, strict=True):  # 5.
            cast(PrefixRocksStore, tx.table.data).apply_local(tx.partition, items, offset, self.generation)
        self.transactions.clear()
        self.outputs.clear()

    async def _produce_outputs(self, client: Any | None) -> list[Awaitable[Any]]:
        """Step 2: each partition's records in aiokafka batches (`produce_batches`); with another driver
        (the tests' in-memory producer), one `Topic.send` per record."""
        sent: list[Awaitable[Any]] = []
        if client is None:
            for (name, partition), items in self.outputs.items():
                topic = self.topics[name]
                sent += [await topic.send(force=True, key=key, value=value, partition=partition)
                         for key, value in items]
            return sent
        by_partition: dict[tuple[str, int], list[tuple[bytes | None, bytes | None]]] = {}
        for (name, partition), items in self.outputs.items():
            if partition is not None:
                by_partition.setdefault((name, partition), []).extend(items)
                continue
            count = len(await client.partitions_for(name))
            for key, value in items:
                p = key_partition(key, count) if key is not None else random.randrange(count)
                by_partition.setdefault((name, p), []).append((key, value))
        for (name, partition), records in by_partition.items():
            sent += await produce_batches(client, name, partition, records, [])
        return sent


async def _offset(sent: Awaitable[RecordMetadata]) -> int:
    return (await sent).offset


class GroupMovedOn(RuntimeError):
    def __init__(self, taken: int, now: int) -> None:
        super().__init__(f"the consumer group moved from generation {taken} to {now} while a take was processed")

