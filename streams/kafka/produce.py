"""The producer's batch API under Faust's producer: a partition's records appended to aiokafka batches and
sent a batch at a time (`streams.state.commit` produces a take's changelog records and outputs with it)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from faust.types import ProducerT, RecordMetadata


def record_batches(producer: ProducerT) -> Any | None:
    """The aiokafka producer under Faust's, when it has aiokafka's batch API (`create_batch`,
    `send_batch`); None for another driver (the tests' in-memory producer): records go one by one then.

    Faust's `Producer.send` costs a future, a metadata wait and a partition check per record (aiokafka's
    `_partition` builds the topic's partition set each time, so the cost grows with the partition
    count); a take's changelog records for one table partition go to one partition, so they are
    appended to one batch (or a few, each at most `producer_max_batch_size`) and sent with one call.
    Faust keeps the aiokafka producer in its driver's `_ensure_producer()` (no public accessor in
    Faust 0.15); `Producer.flush`, which Faust awaits before committing offsets, covers batches sent so."""
    ensure = getattr(producer, "_ensure_producer", None)
    client = ensure() if ensure is not None else None
    return client if client is not None and hasattr(client, "send_batch") else None


async def produce_batches(client: Any, topic: str, partition: int,
                          items: list[tuple[bytes, bytes | None]] | list[tuple[bytes | None, bytes | None]],
                          headers: list[tuple[str, bytes]]) -> list[Awaitable[int]]:
    """`items` as records of `topic`'s `partition`, in order, in as few of aiokafka's batches as fit
    (`BatchBuilder.append` refuses a record once the batch is full; an empty batch takes any record):
    the offset of each batch's last record, once the broker acknowledged it."""
    acks: list[Awaitable[int]] = []
    batch, count = client.create_batch(), 0
    for key, value in items:
        if batch.append(timestamp=None, key=key, value=value, headers=headers) is None:
            acks.append(_last_offset(await client.send_batch(batch, topic, partition=partition), count))
            batch, count = client.create_batch(), 0
            batch.append(timestamp=None, key=key, value=value, headers=headers)
        count += 1
    acks.append(_last_offset(await client.send_batch(batch, topic, partition=partition), count))
    return acks


async def _last_offset(sent: Awaitable[RecordMetadata], count: int) -> int:
    """A batch's acknowledgement gives its first record's offset; its records' offsets follow on."""
    return (await sent).offset + count - 1
