"""One phase of the stream benchmark on a fresh app: the workers started on a dev cluster (from a given
checkout of the project), the events published (all at once or paced), dedup.decisions read back until
every URL is decided, and what the phase cost measured while the workers still run: records per topic,
neardup.gather by kind, CPU, memory, the workers' metrics and the timer warnings in their logs."""

from __future__ import annotations

import argparse
import re
import shutil
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import orjson
from common import percentile, say
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from stream_broker import BrokerCounts, broker_counts, phase_counts
from stream_input import Event
from stream_logdir import topic_usage
from stream_procfs import Sampler, cpu_snapshot, cpu_usage, memory_of
from stream_profile import start_py_spy, stop_py_spy

from neardup_core.timefmt import rfc3339_to_ms
from streams.dev import Cluster, Decision, WorkerExited, keep_latest

GATHER_KINDS = {"F": "fetch", "A": "answer", "R": "revision", "T": "tick"}


# --- publishing and reading decisions ---------------------------------------------------------------


class Publisher(threading.Thread):
    """Publishes the events, all at once (`rate=None`) or paced; records each record's timestamp."""

    def __init__(self, bootstrap: str, topic: str, events: list[Event], rate: float | None) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "linger.ms": 20,
                "enable.idempotence": True,
                "compression.type": "lz4",
                "message.max.bytes": 20_000_000,
            }
        )
        self.topic, self.events, self.rate = topic, events, rate
        self.published_ms: list[int | None] = [None] * len(events)
        self.failed = 0
        self.error: BaseException | None = None
        self.started = self.finished = 0.0
        self.cancel = threading.Event()

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.error = exc

    def _run(self) -> None:
        def delivered(i: int) -> Any:
            def cb(err: Any, msg: Any) -> None:
                if err is not None:
                    self.failed += 1
                else:
                    self.published_ms[i] = msg.timestamp()[1]

            return cb

        self.started = time.monotonic()
        for i, e in enumerate(self.events):
            if self.cancel.is_set():
                return
            if self.rate:
                delay = self.started + i / self.rate - time.monotonic()
                if delay > 0:
                    self.producer.poll(delay)  # serve delivery callbacks while waiting
                    while (delay := self.started + i / self.rate - time.monotonic()) > 0:
                        time.sleep(delay)
            while True:
                try:
                    self.producer.produce(self.topic, value=e.raw, key=e.key, on_delivery=delivered(i))
                    break
                except BufferError:
                    self.producer.poll(0.1)
            self.producer.poll(0)
        if self.producer.flush(120):
            raise RuntimeError("events still undelivered 120 s after the last produce")
        self.finished = time.monotonic()


@dataclass
class DecisionLog:
    """What dedup.decisions said, folded as it is read."""

    expected: dict[str, int]  # URL -> fetch time (ms) of its latest published fetch
    latest: dict[str, Decision] = field(default_factory=dict)  # URL -> its latest decision
    first_complete: dict[tuple[str, int], int] = field(default_factory=dict)  # (URL, fetched) -> record ts
    records: int = 0
    incomplete: int = 0
    revised: int = 0
    last_ts: int = 0
    done_count: int = 0
    timestamps: list[int] = field(default_factory=list)

    def add(self, value: bytes, ts: int) -> None:
        d = orjson.loads(value)
        url, rev, complete = d["url"], d["revision"], d["complete"]
        self.records += 1
        self.incomplete += not complete
        self.revised += rev > 1
        self.last_ts = max(self.last_ts, ts)
        self.timestamps.append(ts)
        if complete:
            self.first_complete.setdefault((url, rfc3339_to_ms(d["fetched_at"])), ts)
        old = self.latest.get(url)
        was_done = old is not None and self._done(old)
        if keep_latest(self.latest, d):
            self.done_count += self._done(d) - was_done

    def _done(self, d: Decision) -> bool:
        """Complete, and for the URL's latest published fetch."""
        return bool(d["complete"]) and rfc3339_to_ms(d["fetched_at"]) == self.expected.get(d["url"])

    @property
    def done(self) -> bool:
        return self.done_count == len(self.expected)

    @property
    def verdicts(self) -> dict[str, tuple[str, str | None]]:
        return {url: (d["verdict"], d["duplicate_of"]) for url, d in self.latest.items()}


def read_decisions(cluster: Cluster, log: DecisionLog, publisher: Publisher, *, settle_s: float,
                   timeout_s: float) -> None:
    """Reads dedup.decisions until every URL is done, the publisher has finished and nothing new came
    for `settle_s`, saying how far it got every 15 s."""
    next_report = time.monotonic() + 15

    def every() -> None:
        nonlocal next_report
        if publisher.error is not None:
            raise RuntimeError(f"publishing failed: {publisher.error!r}")
        if time.monotonic() >= next_report:
            say(f"  {log.done_count}/{len(log.expected)} URLs decided ({log.records} decision records)")
            next_report += 15

    cluster.follow("dedup.decisions", lambda r: log.add(r.value, r.timestamp_ms),
                   lambda: log.done and not publisher.is_alive(), settle_s=settle_s, timeout_s=timeout_s,
                   every=every)


# --- counting records --------------------------------------------------------------------------------


def phase_topics(cluster: Cluster) -> tuple[AdminClient, dict[str, Any], list[str]]:
    """An admin client, the broker's topics, and the names of the phase's: the prefix's and the app's own."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topics = admin.list_topics(timeout=20).topics
    mine = sorted(t for t in topics if t.startswith(cluster.topic_prefix) or t.startswith(f"{cluster.app_id}-"))
    return admin, topics, mine


def topic_records(cluster: Cluster) -> dict[str, int]:
    """End offsets summed over partitions, for the prefix's topics and the app's own topics."""
    _, topics, mine = phase_topics(cluster)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"bench-{uuid.uuid4()}"})
    try:
        out = {}
        for t in mine:
            out[t] = sum(
                consumer.get_watermark_offsets(TopicPartition(t, p), timeout=20)[1] for p in topics[t].partitions
            )
        return out
    finally:
        consumer.close()


def delete_topics(cluster: Cluster) -> None:
    """The phase's topics (the prefix's and the app's own), deleted, so that each phase runs on a broker
    holding only its own: in one run that kept them, the later phases cost the broker up to 4x the CPU
    per page of the first (0.8 -> 3.7 ms) and ran at 0.6-0.8x their pages/s, for both codes."""
    admin, _, mine = phase_topics(cluster)
    if not mine:
        return
    for topic, future in admin.delete_topics(mine, operation_timeout=60).items():
        try:
            future.result(timeout=90)
        except Exception as exc:  # the next phase still runs, beside this phase's leftovers
            say(f"  could not delete topic {topic}: {exc}")


def gather_kinds(cluster: Cluster) -> Counter[str]:
    """neardup.gather messages by kind (fetch, answer, revision, tick), read up to the end offsets: one
    per record (`[tag, body]`, the format before batches) or every message of a batch (`[version,
    [[tag, body], ...]]`)."""
    topic = cluster.topic("neardup.gather")
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": f"bench-{uuid.uuid4()}", "enable.auto.commit": False}
    )
    kinds: Counter[str] = Counter()
    try:
        parts = consumer.list_topics(topic, timeout=20).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in parts}
        todo = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in todo])
        deadline = time.monotonic() + 120
        while todo and time.monotonic() < deadline:
            for msg in consumer.consume(5000, timeout=0.5):
                if msg.error():
                    continue
                offset, partition, value = msg.offset() or 0, msg.partition() or 0, msg.value()
                if offset < ends[partition] and value is not None:
                    data = msgpack.unpackb(value, raw=False, strict_map_key=False)
                    tags = [item[0] for item in data[1]] if isinstance(data[0], int) else [data[0]]
                    for tag in tags:
                        kinds[GATHER_KINDS.get(tag, tag)] += 1
                if offset >= ends[partition] - 1:
                    todo.discard(partition)
        return kinds
    finally:
        consumer.close()


TIMER_WARNING = re.compile(r"Timer (\S+) is overlapping \(interval=([\d.]+) runtime=([\d.]+)\)")
TIMER_LATE = re.compile(r"Timer (\S+) woke up too late, with a drift of \+([\d.]+)")


def log_findings(paths: list[Path]) -> dict[str, Any]:
    overlapping: dict[str, list[float]] = {}
    late: dict[str, list[float]] = {}
    levels: Counter[str] = Counter()
    messages: Counter[str] = Counter()
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            if m := TIMER_WARNING.search(line):
                overlapping.setdefault(m.group(1), []).append(float(m.group(3)))
            elif m := TIMER_LATE.search(line):
                late.setdefault(m.group(1), []).append(float(m.group(2)))
            for level in ("WARNING", "ERROR", "CRITICAL"):
                if f"[{level}]" in line:
                    levels[level] += 1
                    text = re.sub(r"^\[[^\]]*\] \[\d+\] \[\w+\] ", "", line)
                    messages[re.sub(r"\d+(\.\d+)?", "N", text)[:110]] += 1
    return {"overlapping": overlapping, "late": late, "levels": levels, "messages": messages}


# --- one phase ---------------------------------------------------------------------------------------


@dataclass
class Phase:
    kind: str  # "throughput" or "latency"
    workers: int
    app: str
    pages: int
    rate_target: float | None = None
    code: str = "this"  # the label of the checkout the workers ran
    design: str = ""  # the table design the workers report on /health
    ready_s: float = 0.0
    publish_s: float = 0.0
    elapsed_s: float = 0.0  # first published record -> last decision record
    first_complete_s: float = 0.0  # first published record -> last first-complete decision
    decisions: int = 0
    incomplete: int = 0
    revised: int = 0
    latencies_ms: list[int] = field(default_factory=list)
    unmatched: int = 0
    records: dict[str, int] = field(default_factory=dict)
    log_usage: dict[str, tuple[int, int]] = field(default_factory=dict)  # topic -> (bytes, batches) on its disk
    gather: dict[str, int] = field(default_factory=dict)
    memory: list[dict[str, int]] = field(default_factory=list)
    peak_rss: list[int] = field(default_factory=list)
    cpu: dict[str, Any] = field(default_factory=dict)
    loop_demand_median: list[float] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    logs: dict[str, Any] = field(default_factory=dict)
    verdicts: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    attempts: int = 1
    profile: list[str] = field(default_factory=list)  # py-spy summary lines (with --py-spy)
    longest_gap_s: float = 0.0  # longest time without a new decision record while pages were outstanding
    per_window: list[int] = field(default_factory=list)  # decision records per 5 s from the first publish
    broker: BrokerCounts | None = None  # the broker's requests by API and thread CPU during the phase

    @property
    def rate(self) -> float:
        return self.pages / self.elapsed_s if self.elapsed_s else 0.0


def settings_env(args: argparse.Namespace, *, neardup_only: bool = False) -> dict[str, str]:
    """The settings the workers get beyond the cluster's own: NEARDUP_EXTRACT_PROCESSES
    (`--extract-processes`), NEARDUP_TABLES (`--tables`), then `--worker-env`; `neardup_only` keeps
    only the NEARDUP_* entries of `--worker-env` (for `neardup scan`, which has no Faust)."""
    env = {} if args.extract_processes is None else {"NEARDUP_EXTRACT_PROCESSES": str(args.extract_processes)}
    if getattr(args, "tables", None):
        env["NEARDUP_TABLES"] = args.tables
    for kv in args.worker_env:
        key, _, value = kv.partition("=")
        if not neardup_only or key.startswith("NEARDUP_"):
            env[key] = value
    return env


def run_phase(
    args: argparse.Namespace,
    bootstrap: str,
    broker_pid: int | None,
    base: Path,
    events: list[Event],
    kind: str,
    workers: int,
    rate: float | None,
    tag: str,
    *,
    label: str = "this",
    code: Path | None = None,
) -> Phase:
    name = f"bench-{tag}-{kind[:3]}-w{workers}"
    cluster = Cluster(bootstrap, name, base / name, args.partitions, worker_env=settings_env(args), code=code)
    phase = Phase(kind, workers, name, len(events), rate_target=rate, code=label)
    expected: dict[str, int] = {}
    for e in events:
        expected[e.url] = max(expected.get(e.url, 0), e.fetched_ms)
    try:
        say(f"{label}: {kind}, {workers} worker(s): app {name} from {cluster.cwd}")
        cluster.create_topics()
        for i in range(workers):
            cluster.start_worker(str(i + 1))
        phase.ready_s = cluster.wait_balanced(stable_s=args.ready_settle, timeout_s=args.ready_timeout)
        health = cluster.health(next(iter(cluster.workers))) or {}
        phase.design = str(health.get("design", "?"))
        say(
            f"  workers ready after {phase.ready_s:.1f}s (design {phase.design}); publishing {len(events)} events"
            + (f" at {rate:.1f}/s" if rate else " at once")
        )
        pids = [p.pid for p in cluster.workers.values()]
        sampler = Sampler(pids)
        broker_before = broker_counts(broker_pid)  # before the CPU snapshot: the attach costs the broker CPU
        before = cpu_snapshot(pids, broker_pid)
        sampler.start()
        spies = (start_py_spy(args.py_spy, name, pids, gil=args.py_spy_gil) if args.py_spy and kind == "throughput"
                 else [])
        publisher = Publisher(bootstrap, cluster.topic("pages.fetched"), events, rate)
        log = DecisionLog(expected)
        publisher.start()
        try:
            read_decisions(cluster, log, publisher, settle_s=args.settle, timeout_s=args.timeout)
        finally:
            publisher.cancel.set()
            publisher.join(timeout=150)
            sampler.stop()
            phase.profile = stop_py_spy(spies)
        after = cpu_snapshot(pids, broker_pid)
        phase.broker = phase_counts(broker_before, broker_counts(broker_pid))
        if publisher.failed or any(t is None for t in publisher.published_ms):
            raise RuntimeError(f"{publisher.failed} events failed to publish")
        published = [t for t in publisher.published_ms if t is not None]
        first_pub = min(published)
        phase.publish_s = publisher.finished - publisher.started
        phase.elapsed_s = (log.last_ts - first_pub) / 1000
        firsts = []
        for e, pub in zip(events, publisher.published_ms, strict=True):
            ts = log.first_complete.get((e.url, e.fetched_ms))
            if ts is None or pub is None:
                phase.unmatched += 1
            else:
                phase.latencies_ms.append(ts - pub)
                firsts.append(ts)
        phase.first_complete_s = (max(firsts) - first_pub) / 1000 if firsts else 0.0
        phase.decisions, phase.incomplete, phase.revised = log.records, log.incomplete, log.revised
        stamps = sorted([first_pub, *log.timestamps])
        phase.longest_gap_s = max((b - a for a, b in zip(stamps, stamps[1:], strict=False)), default=0) / 1000
        windows = Counter((t - first_pub) // 5000 for t in log.timestamps)
        phase.per_window = [windows.get(i, 0) for i in range(int(max(windows, default=-1)) + 1)]
        phase.verdicts = log.verdicts
        phase.cpu = cpu_usage(before, after)
        phase.peak_rss = [sampler.peak_rss[p] for p in pids]
        phase.loop_demand_median = [
            percentile(sampler.loop_demand[p], 0.5) if sampler.loop_demand[p] else 0.0 for p in pids
        ]
        phase.memory = [memory_of(p) for p in pids]
        phase.metrics = cluster.metrics_total()
        phase.records = topic_records(cluster)
        if getattr(args, "broker_log_dir", None) is not None:
            usage = topic_usage(args.broker_log_dir, list(phase.records))
            phase.log_usage = {t: (u.bytes, u.batches) for t, u in usage.items()}
        phase.gather = dict(gather_kinds(cluster))
        say(f"  {phase.rate:.1f} pages/s over {phase.elapsed_s:.1f}s; {phase.decisions} decision records")
    finally:
        cluster.stop_all()
        if cluster.logs:
            phase.logs = log_findings(list(cluster.logs.values()))
        if not args.keep:
            shutil.rmtree(cluster.workdir, ignore_errors=True)
            delete_topics(cluster)
    return phase


def run_phase_retrying(
    args: argparse.Namespace,
    bootstrap: str,
    broker_pid: int | None,
    base: Path,
    events: list[Event],
    kind: str,
    workers: int,
    rate: float | None,
    tag: str,
    *,
    label: str = "this",
    code: Path | None = None,
) -> Phase:
    """`run_phase`, run again on a fresh app (up to three attempts) when a worker was stopped by a
    signal this script did not send: another job on a shared machine."""
    for attempt in range(1, 4):
        try:
            phase = run_phase(args, bootstrap, broker_pid, base, events, kind, workers, rate, f"{tag}a{attempt}",
                              label=label, code=code)
            phase.attempts = attempt
            return phase
        except WorkerExited as exc:
            if not exc.signalled or attempt == 3:
                raise
            say(f"  worker {exc.name} was stopped by a signal this script did not send; "
                "running the phase again on a fresh app")
    raise AssertionError("unreachable")
