"""The Faust app: its topics and tables, and the agents, timers and pages registered on them.

What each agent does lives in `streams.agents`, the web views in `streams.web.views`; this module only
wires them. Every stateful agent runs at concurrency 1 on its own partitions. Delivery is
at-least-once: each take's sends and changelog records are acknowledged by the broker before its
local state is written and its input acknowledged (`streams.state.commit`), and every state change is
idempotent and monotone, so a replay re-sends at most equal messages.

`create_app` asks the broker nothing: the worker command reads the partition count of the
internal topics first (`streams.kafka.admin.internal_partitions`) and passes it in.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import faust
from aiokafka.helpers import create_ssl_context
from faust.types import TP, ConsumerT, TableT, TopicT
from mode.utils.queues import ThrowableQueue

from streams.agents import Agents, Tables, Topics
from streams.kafka.redelivery import FetchLimits, RedeliveringConsumer, RedeliveringQueue, parse_drops
from streams.kafka.topics import table_names
from streams.settings import Settings
from streams.state.stores import STORE_URL
from streams.web import status
from streams.web.metrics import measure_lag
from streams.web.views import add_pages

# aiokafka sends one batch per partition per request: a take's changelog records for one partition
# (hundreds of small records) go in one or a few batches of up to this size instead of 16 KiB ones.
PRODUCER_BATCH_BYTES = 256 * 1024
TABLE_CACHE_BYTES = 32 * 1024 * 1024  # RocksDB block cache per partition store of the small tables


class NeardupApp(faust.App):
    """A Faust app whose consumer fetches again what Faust's would drop (`streams.kafka.redelivery`).
    `App._new_consumer` is Faust's private factory: the one place its consumer class can be chosen;
    `App.FlowControlQueue` the public one of the queues a flow resume clears."""

    queues: weakref.WeakSet[RedeliveringQueue]
    fault_drops: set[tuple[str, int, int]]
    """NEARDUP_FAULT_DROP_FETCHED (tests only), set before the consumer is made."""
    fetch_limits: FetchLimits
    """NEARDUP_FETCH_MIN_BYTES and NEARDUP_FETCH_MAX_WAIT_MS, set before the consumer is made."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.queues = weakref.WeakSet()
        self.fault_drops = set()
        self.fetch_limits = FetchLimits()
        super().__init__(*args, **kwargs)

    def FlowControlQueue(self, maxsize: int | None = None, *,  # noqa: N802  # Faust's name
                         clear_on_resume: bool = False) -> ThrowableQueue:
        queue = RedeliveringQueue(maxsize=maxsize, flow_control=self.flow_control, clear_on_resume=clear_on_resume,
                                  on_drop=self._redeliver)
        self.queues.add(queue)
        return queue

    def _redeliver(self, dropped: Mapping[TP, int]) -> None:
        consumer = self.consumer
        if isinstance(consumer, RedeliveringConsumer):
            consumer.redeliver(dropped)

    def _new_consumer(self) -> ConsumerT:
        transport: Any = self.transport  # Transport.create_consumer instantiates its `Consumer` class
        transport.Consumer = RedeliveringConsumer
        consumer = super()._new_consumer()
        if isinstance(consumer, RedeliveringConsumer):
            consumer.drops = set(self.fault_drops)
        return consumer

    async def check_stalls(self) -> None:
        """`RedeliveringConsumer.check_stalls`, told which partitions have events in the queues."""
        consumer = self.consumer
        if isinstance(consumer, RedeliveringConsumer):
            await consumer.check_stalls(set().union(*(queue.partitions() for queue in list(self.queues))))


def broker_credentials(settings: Settings) -> Any:
    proto = settings.security_protocol.upper()
    if proto == "PLAINTEXT":
        return None
    ssl_context = None
    if "SSL" in proto:
        ssl_context = create_ssl_context(cafile=settings.ssl_cafile or None, certfile=settings.ssl_certfile or None,
                                         keyfile=settings.ssl_keyfile or None)
    if "SASL" in proto:
        mechanism = settings.sasl_mechanism or "PLAIN"
        if mechanism.startswith("SCRAM"):
            return faust.SASLCredentials(username=settings.sasl_username, password=settings.sasl_password,
                                         mechanism=mechanism, ssl_context=ssl_context)
        return faust.SASLCredentials(username=settings.sasl_username, password=settings.sasl_password,
                                     ssl_context=ssl_context)
    return faust.SSLCredentials(ssl_context)


def raw_topic(app: faust.App, name: str, partitions: int | None = None) -> TopicT:
    """A topic of raw bytes keys and values (`streams.kafka.records` and `neardup_core.messages` encode them)."""
    return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw",
                     partitions=partitions)


def raw_table(app: faust.App, name: str, partitions: int, *, store: str | None = None,
              options: dict[str, Any] | None = None) -> TableT[bytes, bytes]:
    """A table of bytes keys and values (bytes types make Faust use the raw codec); `store` None is
    the app's (`rocksdb://`)."""
    return app.Table(name, partitions=partitions, store=store, options=options, key_type=bytes, value_type=bytes)


def create_app(settings: Settings, partitions: int) -> faust.App:
    """The worker's app, with `partitions` partitions of every internal topic and table."""
    app = NeardupApp(
        settings.app_id,
        broker=[f"kafka://{b.strip()}" for b in settings.broker.split(",")],
        broker_credentials=broker_credentials(settings),
        store="rocksdb://",
        datadir=str(settings.data_dir),
        web_port=settings.web_port,
        web_host="0.0.0.0",
        topic_partitions=partitions,
        topic_replication_factor=0,
        processing_guarantee="at_least_once",
        consumer_auto_offset_reset="earliest",
        autodiscover=False,
        table_cleanup_interval=3600.0,
        stream_wait_empty=True,
        producer_linger=0.005,
        producer_max_batch_size=PRODUCER_BATCH_BYTES,
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=min(3.0, settings.session_timeout_s / 4),
        consumer_group_instance_id=settings.group_instance_id or None,
    )
    app.fault_drops = parse_drops(settings.fault_drop_fetched)
    app.fetch_limits = FetchLimits(settings.fetch_min_bytes, settings.fetch_max_wait_ms)
    t = settings.topic
    topics = Topics(
        fetched=raw_topic(app, t("pages.fetched")),
        gather=raw_topic(app, t("neardup.gather"), partitions),
        probes=raw_topic(app, t("neardup.probes"), partitions),
        hosts=raw_topic(app, t("neardup.hosts"), partitions),
        decisions=raw_topic(app, t("dedup.decisions")),
        signals=raw_topic(app, t("frontier.host-signals")),
        rejected=raw_topic(app, t("pages.rejected")),
    )
    small = {"block_cache_size": TABLE_CACHE_BYTES}
    index_options = {"block_cache_size": settings.index_cache_mb << 20,
                     "prefix_bytes": settings.core.design.prefix_bytes}
    tables = Tables(
        urls=raw_table(app, "urls", partitions, store=STORE_URL, options=small),
        index=raw_table(app, table_names(settings)[-1], partitions, store=STORE_URL, options=index_options),
        hosts=raw_table(app, "hosts", partitions, store=STORE_URL, options=small),
    )
    agents = Agents(app, topics, tables, settings.core, partitions=partitions,
                    extract_processes=settings.extract_processes, extract_nice=settings.extract_nice,
                    batch_max=settings.batch_max, batch_wait_s=settings.batch_wait_s, hop_wait_s=settings.hop_wait_s,
                    index_processes=settings.index_processes, index_cache_bytes=settings.index_cache_mb << 20,
                    tick_interval_s=settings.tick_interval_s)

    app.agent(topics.fetched, concurrency=1)(agents.fingerprint)
    app.agent(topics.gather, concurrency=1)(agents.gather)
    app.agent(topics.probes, concurrency=1)(agents.index)
    app.agent(topics.hosts, concurrency=1)(agents.hosts)
    app.timer(interval=settings.tick_interval_s, on_leader=True)(agents.send_ticks)
    if settings.stall_check_s > 0:
        app.timer(interval=settings.stall_check_s)(app.check_stalls)
    app.timer(interval=10.0)(measure_lag)
    app.timer(interval=status.SAMPLE_EVERY_S)(status.sample_counters)
    add_pages(app, settings, partitions)
    return app
