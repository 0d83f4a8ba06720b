"""The Faust app: topics, tables and the agents that move data between partitions.

    pages.fetched --fingerprint--> neardup.gather (by URL) --gather--> neardup.probes (by bucket)
    neardup.probes --index--> neardup.gather (answers for the page, revisions for worse pages)
    neardup.gather --gather--> dedup.decisions, neardup.hosts (by host) --hosts--> frontier.host-signals

Every stateful agent runs at concurrency 1 on its own partitions, reads and writes only the
tables of the partition it is processing, and does what neardup_core says. Delivery is
at-least-once: sends go out at once (`force=True`; Faust would otherwise hold them until the
source offset commits, a commit interval per hop), the producer is flushed before offsets are
committed, and every state change is idempotent and monotone, so a replay re-sends at most
equal messages.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

import faust
from aiokafka.helpers import create_ssl_context
from faust.transport.producer import ProducerBuffer

from neardup_core.dedup.gather import Gather, Published, UrlState, UrlStates
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import Rejected, fingerprint_event
from neardup_core.hosts.tracker import HostTracker
from neardup_core.index.bucket import Answer, probe_bucket
from streams import metrics, records
from streams.admin import internal_partitions
from streams.settings import Settings
from streams.stores import STORE_URL, PartitionView
from streams.topics import table_names

log = logging.getLogger("neardup")
RAW = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw", "value_serializer": "raw"}
RAW_TABLE = {"key_type": bytes, "value_type": bytes}  # bytes types make Faust use the raw codec


def now_ms() -> int:
    return int(time.time() * 1000)


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


def create_app(settings: Settings) -> faust.App:
    # Faust pauses the stream to flush table changelogs whenever more than 100 wait; every event
    # here writes a table, so that pause came at nearly every event.
    ProducerBuffer.max_messages = 5000
    partitions = internal_partitions(settings)
    core = settings.core
    design = core.design
    gather = Gather(core)
    pool: Executor | None = (ProcessPoolExecutor(settings.extract_processes)
                             if settings.extract_processes > 0 else None)

    app = faust.App(
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
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=min(3.0, settings.session_timeout_s / 4),
        consumer_group_instance_id=settings.group_instance_id or None,
    )
    fetched = app.topic(settings.topic("pages.fetched"), **RAW)
    gather_topic = app.topic(settings.topic("neardup.gather"), partitions=partitions, **RAW)
    probes_topic = app.topic(settings.topic("neardup.probes"), partitions=partitions, **RAW)
    hosts_topic = app.topic(settings.topic("neardup.hosts"), partitions=partitions, **RAW)
    decisions_topic = app.topic(settings.topic("dedup.decisions"), **RAW)
    signals_topic = app.topic(settings.topic("frontier.host-signals"), **RAW)
    rejected_topic = app.topic(settings.topic("pages.rejected"), **RAW)

    table_options = {"block_cache_size": 32 * 1024 * 1024}
    urls = app.Table("urls", partitions=partitions, options=table_options, **RAW_TABLE)
    pending = app.Table("pending", partitions=partitions, store=STORE_URL, options=table_options, **RAW_TABLE)
    index = app.Table(table_names(settings)[-1], partitions=partitions, store=STORE_URL,
                      options={**table_options, "block_cache_size": settings.index_cache_mb << 20,
                               "prefix_bytes": design.prefix_bytes},
                      **RAW_TABLE)
    host_state = app.Table("hosts", partitions=partitions, options=table_options, **RAW_TABLE)
    received: dict[bytes, float] = {}  # when a fetch reached the gather stage, for the latency metric

    async def reject(event: Any, rejected: Rejected) -> None:
        msg = event.message
        metrics.REJECTS.labels(rejected.stage).inc()
        rejection = rejected.message(msg.value or b"", msg.topic, msg.partition, msg.offset)
        await rejected_topic.send(force=True, key=msg.key, value=rejection.to_json())

    @app.agent(fetched, concurrency=1)
    async def fingerprint_agent(stream: faust.StreamT) -> None:
        """Stateless: validate and fingerprint in the process pool, a batch at a time."""
        loop = asyncio.get_running_loop()
        async for events in stream.take_events(64, within=0.1):
            jobs = []
            for event in events:
                msg = event.message
                ts = int(msg.timestamp * 1000) if msg.timestamp else None
                job = functools.partial(fingerprint_event, msg.value or b"", key=msg.key, timestamp_ms=ts,
                                        settings=core)
                jobs.append(loop.run_in_executor(pool, job))
            results = await asyncio.gather(*jobs)
            for event, result in zip(events, results, strict=True):
                metrics.PAGES.inc()
                if isinstance(result, Fetch):
                    await gather_topic.send(force=True, key=result.url.encode(), value=records.encode_gather(result))
                else:
                    await reject(event, result)

    async def publish(published: list[Published]) -> None:
        for d, before in published:
            metrics.DECISIONS.labels(d.verdict).inc()
            if d.revision > 1:
                metrics.REVISIONS.inc()
            key = d.url.encode()
            if d.complete and key in received:
                metrics.DECISION_SECONDS.observe(time.monotonic() - received.pop(key))
            await decisions_topic.send(force=True, key=key, value=d.to_json())
            await hosts_topic.send(force=True, key=d.host.encode(), value=records.encode_host_change(d, before))

    # deadlines this process wrote: a page's answers mostly leave its deadline as it was, and one
    # write (with its changelog record) per page is enough; after a restart every one is rewritten
    # once, in case the crash lost a changelog record the local store kept
    written_deadlines: dict[bytes, bytes] = {}

    @app.on_partitions_revoked.connect
    async def forget_deadlines(sender: Any, revoked: Any, **kwargs: Any) -> None:
        """Another worker may change a partition's deadlines while it is away from this one."""
        written_deadlines.clear()

    def track_pending(key: bytes, state: UrlState) -> None:
        deadline = gather.awaiting(state)
        if deadline is not None:
            value = deadline.to_bytes(8, "big")
            if written_deadlines.get(key) != value:
                pending[key] = written_deadlines[key] = value
        else:
            written_deadlines.pop(key, None)
            if pending.get(key) is not None:
                del pending[key]

    @app.agent(gather_topic, concurrency=1)
    async def gather_agent(stream: faust.StreamT) -> None:
        """Per URL: start probe rounds, merge answers and revisions, publish decisions."""
        async for event in stream.events():
            message = records.decode_gather(event.message.value)
            if isinstance(message, int):
                await on_tick(event.message.partition, message)
                continue
            key = event.message.key
            states = UrlStates(PartitionView(urls, event.message.partition))
            url = key.decode()
            state = states.load(url)
            now = now_ms()
            if isinstance(message, Fetch):
                received.setdefault(key, time.monotonic())
                probes, decisions = gather.on_fetch(state, message, now)
                for probe in probes:
                    await probes_topic.send(force=True, key=probe.lo, value=records.encode_probe(probe))
            elif isinstance(message, Answer):
                decisions = gather.on_answer(state, message, now)
            else:
                decisions = gather.on_revision(state, message, now)
            states.save(url, state)
            track_pending(key, state)
            await publish(decisions)

    async def on_tick(partition: int, tick_ms: int) -> None:
        """Decide overdue pages of this partition provisionally (inside the stream, so tables are writable)."""
        due = [key for key, deadline in pending.data.scan(partition, b"", b"\xff" * 8)
               if int.from_bytes(deadline, "big") <= tick_ms]
        metrics.PENDING.set(sum(1 for _ in pending.data.scan(partition, b"", b"\xff" * 8)))
        states = UrlStates(PartitionView(urls, partition))
        for key in due:
            state = states.load(key.decode())
            decisions = gather.on_tick(state, tick_ms)
            states.save(key.decode(), state)
            del pending[key]
            written_deadlines.pop(key, None)
            await publish(decisions)

    @app.agent(probes_topic, concurrency=1)
    async def index_agent(stream: faust.StreamT) -> None:
        """Per bucket: look up, insert, answer the page and revise the worse pages found."""
        async for event in stream.events():
            probe = records.decode_probe(event.message.value)
            started = time.perf_counter()
            answer, revisions = probe_bucket(PartitionView(index, event.message.partition), probe, design, settings.k)
            metrics.PROBE_SECONDS.observe(time.perf_counter() - started)
            metrics.PROBES.inc()
            await gather_topic.send(force=True, key=answer.url.encode(), value=records.encode_gather(answer))
            for revision in revisions:
                await gather_topic.send(force=True, key=revision.url.encode(), value=records.encode_gather(revision))

    @app.agent(hosts_topic, concurrency=1)
    async def hosts_agent(stream: faust.StreamT) -> None:
        """Per host: move the page between counts, emit a signal when the penalty crosses a threshold."""
        async for event in stream.events():
            decision, before = records.decode_host_change(event.message.value)
            tracker = HostTracker(PartitionView(host_state, event.message.partition), core.host_policy)
            signals = tracker.observe(decision, before)
            for signal in signals:
                await signals_topic.send(force=True, key=signal.host.encode(), value=signal.to_json())

    @app.timer(interval=settings.tick_interval_s, on_leader=True)
    async def send_ticks() -> None:
        tick = records.encode_gather(now_ms())
        for partition in range(partitions):
            await gather_topic.send(force=True, key=None, value=tick, partition=partition)

    @app.timer(interval=10.0)
    async def measure_lag() -> None:
        """Per assigned partition: the highwater minus the consumer's position."""
        consumer = app.consumer
        for tp in consumer.assignment():
            try:
                position = await consumer.position(tp)
                highwater = consumer.highwater(tp)
            except Exception:  # the partition may be revoked while we look
                continue
            if position is not None and highwater is not None:
                metrics.LAG.labels(tp.topic, str(tp.partition)).set(max(0, highwater - position))

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return web.bytes(generate_latest(metrics.REGISTRY), content_type=CONTENT_TYPE_LATEST.split(";")[0])

    @app.page("/health")
    async def health_page(web: Any, request: Any) -> Any:
        assigned = sorted(f"{tp.topic}:{tp.partition}" for tp in app.consumer.assignment()) if app.consumer else []
        return web.json({"status": "ok", "app_id": settings.app_id, "design": design.name, "k": settings.k,
                         "partitions": partitions, "assigned": assigned})

    return app
