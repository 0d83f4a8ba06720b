"""The worker's agents in this process, without a broker: Faust's agent test contexts, and a
producer that keeps what the agents send.

Faust 0.15 has no in-memory transport (its registry holds `aiokafka`, `confluent` and `kafka`), but
it has `Agent.test_context()`: a copy of the agent that reads a local channel, with events built as
the consumer builds them (topic, partition, offset, timestamp) and the current event set, so table
writes go to the event's partition as in a worker. `MemoryKafka` puts an in-memory producer on the
app: every `topic.send` and every table changelog record lands in a log per topic, in partitions
chosen as Kafka's default partitioner chooses them. `run()` delivers the log's records of the topics
the agents read to the test context of the agent reading each, in the order they were sent, until
none is left, and waits until the agents are done with them (a sensor sees each event leave its
stream, and no batch is still being committed in the background). The tables use the worker's own
stores: RocksDB under the app's data dir.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import faust
from aiokafka.partitioner import DefaultPartitioner
from faust.sensors import Sensor
from faust.transport.producer import Producer
from faust.types import TP, AgentT, EventT, RecordMetadata, StreamT, TransportT
from faust.types.agents import AgentTestWrapperT
from faust.types.tuples import HeadersArg


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: float | None


class Log:
    """Every record sent, per topic, and the records not delivered to an agent yet."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self.topics: dict[str, list[Record]] = defaultdict(list)
        self.undelivered: deque[Record] = deque()
        self._next_offset: dict[TP, int] = defaultdict(int)
        self._partitioner = DefaultPartitioner()

    def partition_for(self, key: bytes | None) -> int:
        every = list(range(self.partitions))
        return int(self._partitioner(key, every, every))

    def append(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None,
               timestamp: float | None = None) -> Record:
        tp = TP(topic, self.partition_for(key) if partition is None else partition)
        record = Record(topic, tp.partition, self._next_offset[tp], key, value, timestamp)
        self._next_offset[tp] += 1
        self.topics[topic].append(record)
        self.undelivered.append(record)
        return record


class MemoryProducer(Producer):
    """A Faust producer that appends to a `Log` instead of sending to Kafka."""

    def __init__(self, transport: TransportT, log: Log, **kwargs: Any) -> None:
        super().__init__(transport, **kwargs)
        self.memory = log  # (`self.log` is the service's logger)

    async def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None,
                   timestamp: float | None, headers: HeadersArg | None, *,
                   transactional_id: str | None = None) -> Awaitable[RecordMetadata]:
        record = self.memory.append(topic, key, value, partition, timestamp)
        sent: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        sent.set_result(RecordMetadata(topic=topic, partition=record.partition,
                                       topic_partition=TP(topic, record.partition), offset=record.offset,
                                       timestamp=timestamp, timestamp_type=0))
        return sent

    async def send_and_wait(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None,
                            timestamp: float | None, headers: HeadersArg | None, *,
                            transactional_id: str | None = None) -> RecordMetadata:
        return await (await self.send(topic, key, value, partition, timestamp, headers))

    async def flush(self) -> None:
        await self.buffer.flush()

    def key_partition(self, topic: str, key: bytes) -> TP:
        return TP(topic, self.memory.partition_for(key))

    def supports_headers(self) -> bool:
        return True


class StreamsDone(Sensor):
    """Counts, per topic, the events the app's streams are done with (their agent asked for the next)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.done: dict[str, int] = defaultdict(int)

    def on_stream_event_out(self, tp: TP, offset: int, stream: StreamT, event: EventT,
                            state: dict | None = None) -> None:
        self.done[tp.topic] += 1


class MemoryKafka:
    """The app's agents reading from and sending to in-memory topics (see the module docstring)."""

    def __init__(self, app: faust.App, partitions: int) -> None:
        self.app = app
        self.log = Log(partitions)
        self.held: list[Record] = []
        self.delivered: dict[str, int] = defaultdict(int)
        self.contexts: dict[str, AgentTestWrapperT] = {}
        self._done = StreamsDone()
        app.producer = MemoryProducer(app.transport, self.log, loop=app.loop, beacon=app.beacon)
        app.sensors.add(self._done)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[MemoryKafka]:
        """The producer and a test context per agent, started; stopped at the end."""
        async with AsyncExitStack() as stack:
            await self.app.producer.start()
            stack.push_async_callback(self.app.producer.stop)
            for agent in self.app.agents.values():
                self.contexts[_topic_of(agent)] = await stack.enter_async_context(agent.test_context())
            yield self

    def send(self, topic: str, value: bytes | None, *, key: bytes | None = None, partition: int | None = None,
             timestamp: float | None = None) -> Record:
        """A record from outside (a crawler's fetched page), delivered by the next `run()`."""
        return self.log.append(topic, key, value, partition, timestamp)

    async def run(self, *, hold: Iterable[str] = (), timeout_s: float = 60.0) -> int:
        """Deliver what was sent to the topics the agents read until nothing is left, and wait
        until the agents are done with it; records of the `hold` topics stay back (for the next
        run without them). The number of records delivered."""
        hold = set(hold)
        self.log.undelivered.extendleft(reversed([r for r in self.held if r.topic not in hold]))
        self.held = [r for r in self.held if r.topic in hold]
        deadline = time.monotonic() + timeout_s
        count = 0
        while self.log.undelivered:
            while self.log.undelivered:
                record = self.log.undelivered.popleft()
                if record.topic in hold:
                    self.held.append(record)
                elif record.topic in self.contexts:  # not an output topic or a changelog
                    await self._deliver(record)
                    count += 1
            while any(self._done.done[topic] < n for topic, n in self.delivered.items()) or self._finishing():
                assert time.monotonic() < deadline, f"agents not done: {dict(self._done.done)} of {self.delivered}"
                await asyncio.sleep(0.002)
        await self.app.producer.flush()  # the table changelog records into the log
        return count

    def _finishing(self) -> bool:
        """Whether an agent still commits a batch its stream is done with (the fingerprint agent finishes
        a batch in the background while it takes the next: `FingerprintStage.finishing`)."""
        for agent in self.app.agents.values():
            owner = getattr(agent.fun, "__self__", None)  # `streams.agents.Agents`
            pending = getattr(getattr(owner, "fingerprint_stage", None), "finishing", None)
            if isinstance(pending, asyncio.Future) and not pending.done():
                return True
        return False

    async def _deliver(self, record: Record) -> None:
        """What `AgentTestWrapper.put` does, with the record's partition and offset."""
        context = self.contexts[record.topic]
        message = context.to_message(record.key, record.value, partition=record.partition, offset=record.offset,
                                     timestamp=record.timestamp)
        channel = context.stream().channel
        assert isinstance(channel, faust.ChannelT)
        message.incref()  # as Faust's conductor does for each channel it delivers to: the stream's ack decrefs
        await channel.put(await channel.decode(message))
        self.delivered[record.topic] += 1

    def records(self, topic: str) -> list[Record]:
        return list(self.log.topics[topic])


def _topic_of(agent: AgentT) -> str:
    channel = agent.channel
    assert isinstance(channel, faust.TopicT), channel
    (name,) = channel.topics
    return name
