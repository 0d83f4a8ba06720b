"""Streaming benchmark: throughput, decision latency, Kafka messages per page and RSS, for 1 and 2 workers.

    python bench/bench_stream.py [--scale S] [--seed N] [--corpus DIR | --no-corpus] [--workers 1,2]
                                 [--broker HOST:PORT] [--repeat R] [--out bench/results/stream.md]
                                 [--worker-env KEY=VALUE]... [--py-spy DIR] [--keep]

What bench/results/stream.md holds: `--scale 2 --corpus-limit 400 --repeat 4` (1062 pages, 1-2.5 min per
phase on a shared 2-core machine). `--worker-env` passes settings to the workers for experiments (Faust also
reads its own settings from the environment, e.g. TABLE_STANDBY_REPLICAS=0 or PRODUCER_LINGER=0.05);
`--py-spy DIR` profiles the workers during the throughput phases and adds a summary to the report.

Input: the generated crawl (`neardup_core.testing.synthetic.generate_crawl(seed, scale=S)`) and, unless
`--no-corpus` or the folder is absent, the real pages of the shared corpus (`pages/*/*.html.gz`, as
`pages.fetched` events with their manifest URL; pages without one are skipped), spread evenly through
the crawl. Every event is keyed by its URL, as `neardup publish` does.

Unless `--broker` is given, a broker is started with `deploy/local-kafka start --port 0` in a temporary
directory. Everything the script starts (broker, workers and their extraction pools) is stopped at the
end, also on failure and on Ctrl-C / SIGTERM.

For each worker count, two phases, each on a fresh topic prefix and app id (`neardup topics create
--partitions P` first, then the workers, each with its own NEARDUP_DATA_DIR and NEARDUP_WEB_PORT; events
are published once every worker answers /health, the group's assignment covers every partition and has
not changed for `--ready-settle` seconds):

1. throughput: every event is published at once; pages per second = pages / (time of the last record in
   dedup.decisions - time of the first published record), once every URL's latest decision is complete
   and for the latest fetch of that URL, and nothing new came for `--settle` seconds. Both times are
   record timestamps (CreateTime), so they come from the same clock.
2. latency: the same events published at `--paced-fraction` (default 0.5) of the rate phase 1 measured
   for that worker count. Latency of an event = timestamp of the first complete decision for its URL
   and fetch time - timestamp of its published record.

After each phase, while the workers still run: records in every topic of the prefix and in the app's
own topics (`{app_id}-*-changelog`, Faust's `{app_id}-__assignor-__leader`), from end offsets; the
kinds of neardup.gather records (fetches, answers, revisions, ticks); RSS and PSS of each worker (its
process and all its descendants, i.e. the extraction pool, from /proc); CPU used during the phase by
each worker's main process and by its pool, by the broker (if started here), by this script, and by
the whole machine (/proc/stat; the machine is shared, so the rest is other people's load); the workers'
Prometheus counters; and the Faust timer warnings in their logs ("Timer commit is overlapping").

Numbers on a shared 2-core machine are noisy: the report puts each worker count next to the 1-worker
run of the same script run and prints the ratios. `--repeat R` runs the sequence R times, alternating.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gzip
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgpack
import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from neardup_core.testing.synthetic import CRAWL_START, generate_crawl  # noqa: E402
from neardup_core.timefmt import rfc3339_to_ms  # noqa: E402

LOCAL_KAFKA = ROOT / "deploy" / "local-kafka"
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"
DEFAULT_OUT = ROOT / "bench" / "results" / "stream.md"
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
NEARDUP_TOPICS = (
    "pages.fetched",
    "neardup.gather",
    "neardup.probes",
    "neardup.hosts",
    "dedup.decisions",
    "frontier.host-signals",
    "pages.rejected",
)
GATHER_KINDS = {"F": "fetch", "A": "answer", "R": "revision", "T": "tick"}


class ForeignStop(RuntimeError):
    """A worker got a signal from outside (another job on a shared machine): the phase is run again."""


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def neardup_command() -> str:
    beside = Path(sys.executable).parent / "neardup"
    found = str(beside) if beside.exists() else shutil.which("neardup")
    if not found:
        raise SystemExit("no `neardup` console script beside the interpreter or on PATH")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- input -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Event:
    url: str
    key: bytes
    raw: bytes
    fetched_ms: int
    source: str  # "crawl" or "corpus"


def crawl_events(seed: int, scale: int) -> list[Event]:
    out = []
    for e in generate_crawl(seed, scale=scale):
        out.append(Event(e["url"], e["url"].encode(), orjson.dumps(e), rfc3339_to_ms(e["fetched_at"]), "crawl"))
    return out


def corpus_events(corpus: Path, limit: int | None) -> list[Event]:
    """The corpus pages with a manifest URL, as fetched-page events (raw bytes as body_b64)."""
    manifest = corpus / "MANIFEST.jsonl"
    if not manifest.exists():
        return []
    out: list[Event] = []
    start = CRAWL_START + timedelta(days=1)  # after the crawl: a corpus URL's fetches keep their order
    with manifest.open() as f:
        for line in f:
            row = json.loads(line)
            url, path = row.get("url"), corpus / row["path"]
            if not url or not path.exists():
                continue
            at = start + timedelta(seconds=len(out))
            event = {
                "url": url,
                "body_b64": base64.b64encode(gzip.decompress(path.read_bytes())).decode(),
                "fetched_at": at.isoformat().replace("+00:00", "Z"),
                "status": 200,
                "content_type": "text/html",
            }
            out.append(Event(url, url.encode(), orjson.dumps(event), int(at.timestamp() * 1000), "corpus"))
            if limit is not None and len(out) >= limit:
                break
    return out


def interleave(a: list[Event], b: list[Event]) -> list[Event]:
    """`b` spread evenly through `a`, each list keeping its order."""
    if not b:
        return list(a)
    out, j = [], 0
    total = len(a) + len(b)
    for i, e in enumerate(a):
        while j < len(b) and (j + 1) * total <= (i + j + 1) * len(b):
            out.append(b[j])
            j += 1
        out.append(e)
    out.extend(b[j:])
    return out


# --- processes and /proc -----------------------------------------------------------------------------


def proc_stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, utime+stime in ticks, rss pages) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[21])


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            st = proc_stat(int(entry.name))
            if st is not None:
                children.setdefault(st[0], []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])  # guest time is already inside user/nice
    return total - idle, total


def schedstat(path: str) -> tuple[int, int]:
    """(ns on a CPU, ns runnable but waiting for a CPU) of a task, from /proc/.../schedstat."""
    try:
        run, wait, _ = Path(path).read_text().split()
        return int(run), int(wait)
    except (OSError, ValueError):
        return 0, 0


def process_sched(pid: int) -> tuple[int, int]:
    """schedstat summed over the threads of a process."""
    run = wait = 0
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            r, w = schedstat(f"/proc/{pid}/task/{tid}/schedstat")
            run, wait = run + r, wait + w
    return run, wait


@dataclass
class CpuSnapshot:
    """Cumulative scheduler times (ns), per task group, at one moment."""

    at: float
    loop: dict[int, tuple[int, int]]  # worker pid -> its main thread (the event loop)
    main: dict[int, tuple[int, int]]  # worker pid -> all threads of its main process (RocksDB, aiokafka, ...)
    pool: dict[int, dict[int, tuple[int, int]]]  # worker pid -> {descendant pid: its threads} (extraction pool)
    broker: tuple[int, int]
    me: tuple[int, int]
    machine: tuple[int, int]


def cpu_snapshot(workers: list[int], broker_pid: int | None) -> CpuSnapshot:
    loop, main, pool = {}, {}, {}
    for pid in workers:
        loop[pid] = schedstat(f"/proc/{pid}/task/{pid}/schedstat")
        main[pid] = process_sched(pid)
        pool[pid] = {d: process_sched(d) for d in descendants(pid)}
    broker = process_sched(broker_pid) if broker_pid else (0, 0)
    return CpuSnapshot(time.monotonic(), loop, main, pool, broker, process_sched(os.getpid()), machine_jiffies())


def cpu_usage(a: CpuSnapshot, b: CpuSnapshot) -> dict[str, Any]:
    """Cores used (1.0 = one core the whole time) and cores' worth of waiting for a CPU, between two
    snapshots."""
    wall_ns = max(b.at - a.at, 1e-9) * 1e9

    def used(x: tuple[int, int], y: tuple[int, int]) -> tuple[float, float]:
        return (y[0] - x[0]) / wall_ns, (y[1] - x[1]) / wall_ns

    out: dict[str, Any] = {"wall_s": wall_ns / 1e9, "workers": {}}
    for pid in b.main:
        pool_run = sum(t[0] - a.pool.get(pid, {}).get(d, (0, 0))[0] for d, t in b.pool[pid].items())
        pool_wait = sum(t[1] - a.pool.get(pid, {}).get(d, (0, 0))[1] for d, t in b.pool[pid].items())
        loop, main = used(a.loop[pid], b.loop[pid]), used(a.main[pid], b.main[pid])
        out["workers"][pid] = {
            "loop": loop[0],
            "loop_wait": loop[1],
            "main": main[0],
            "main_wait": main[1],
            "pool": pool_run / wall_ns,
            "pool_wait": pool_wait / wall_ns,
        }
    out["broker"] = used(a.broker, b.broker)[0]
    out["bench"] = used(a.me, b.me)[0]
    busy, total = b.machine[0] - a.machine[0], b.machine[1] - a.machine[1]
    out["machine"] = busy / max(total, 1) * (os.cpu_count() or 1)
    return out


class Sampler(threading.Thread):
    """Once a second: each worker's total RSS (for the peak) and how much of that second its event-loop
    thread was on a CPU or waiting for one (a loop that needs the CPU all the time is at 1.0)."""

    def __init__(self, workers: list[int]) -> None:
        super().__init__(daemon=True)
        self.workers = workers
        self.stop_event = threading.Event()
        self.peak_rss: dict[int, int] = dict.fromkeys(workers, 0)
        self.loop_demand: dict[int, list[float]] = {pid: [] for pid in workers}

    def run(self) -> None:
        last = {pid: (time.monotonic(), schedstat(f"/proc/{pid}/task/{pid}/schedstat")) for pid in self.workers}
        while not self.stop_event.wait(1.0):
            for pid in self.workers:
                rss = sum((proc_stat(p) or (0, 0, 0))[2] for p in [pid, *descendants(pid)]) * PAGE_SIZE
                self.peak_rss[pid] = max(self.peak_rss[pid], rss)
                now, st = time.monotonic(), schedstat(f"/proc/{pid}/task/{pid}/schedstat")
                t0, st0 = last[pid]
                self.loop_demand[pid].append((st[0] + st[1] - st0[0] - st0[1]) / 1e9 / max(now - t0, 1e-9))
                last[pid] = (now, st)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=5)


def memory_of(pid: int) -> dict[str, int]:
    procs = [pid, *descendants(pid)]
    rss = sum((proc_stat(p) or (0, 0, 0))[2] for p in procs) * PAGE_SIZE
    return {
        "processes": len(procs),
        "rss": rss,
        "pss": sum(pss_kb(p) for p in procs) * 1024,
        "main_rss": (proc_stat(pid) or (0, 0, 0))[2] * PAGE_SIZE,
    }


# --- broker ------------------------------------------------------------------------------------------


class LocalBroker:
    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / "kafka"
        self.bootstrap: str | None = None

    def start(self) -> str:
        say(f"starting a broker: deploy/local-kafka start --port 0 --dir {self.dir}")
        result = subprocess.run(
            [sys.executable, str(LOCAL_KAFKA), "start", "--port", "0", "--dir", str(self.dir)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        self.bootstrap = "pending"  # stop() even if start half-failed
        if result.returncode != 0:
            raise SystemExit(f"local-kafka start failed ({result.returncode}):\n{result.stderr}")
        self.bootstrap = result.stdout.strip().splitlines()[-1]
        return self.bootstrap

    @property
    def pid(self) -> int | None:
        try:
            return int((self.dir / "kafka.pid").read_text())
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        if self.bootstrap is None:
            return
        say("stopping the broker")
        subprocess.run(
            [sys.executable, str(LOCAL_KAFKA), "stop", "--dir", str(self.dir)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.bootstrap = None


# --- one app on the broker: topics, workers --------------------------------------------------------


@dataclass
class App:
    bootstrap: str
    name: str  # topic prefix (with a dot) and app id
    workdir: Path
    partitions: int
    extract_processes: int | None
    extra_env: dict[str, str] = field(default_factory=dict)
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        return f"{self.name}."

    def topic(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def env(self, worker: str | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
        env.update(
            {
                "NEARDUP_BROKER": self.bootstrap,
                "NEARDUP_TOPIC_PREFIX": self.prefix,
                "NEARDUP_APP_ID": self.name,
                "PYTHONUNBUFFERED": "1",
            }
        )
        if worker is not None:
            env["NEARDUP_DATA_DIR"] = str(self.workdir / f"data-{worker}")
            env["NEARDUP_WEB_PORT"] = str(self.ports.setdefault(worker, free_port()))
            if self.extract_processes is not None:
                env["NEARDUP_EXTRACT_PROCESSES"] = str(self.extract_processes)
            env.update(self.extra_env)
        return env

    def create_topics(self) -> None:
        cmd = [neardup_command(), "topics", "create", "--partitions", str(self.partitions)]
        result = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise SystemExit(f"{shlex.join(cmd)} failed:\n{result.stdout}{result.stderr}")

    def start_worker(self, name: str) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = self.workdir / f"worker-{name}.log"
        self.logs[name] = log
        with log.open("ab") as fh:
            # `python -m streams.cli worker` is what the `neardup worker` console script runs; spelled this
            # way, a `pkill -f "neardup worker"` of someone else on a shared machine leaves it alone
            self.workers[name] = subprocess.Popen(
                [sys.executable, "-m", "streams.cli", "worker", "-l", "info"],
                cwd=ROOT,
                env=self.env(name),
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def check_alive(self) -> None:
        for name, proc in self.workers.items():
            if proc.poll() is not None:
                text = self.logs[name].read_text(errors="replace")
                tail = "\n".join(text.splitlines()[-40:])
                if re.search(r"Signal received: (15|2|1) ", text):
                    raise ForeignStop(f"worker {name} was stopped by a signal this script did not send")
                raise RuntimeError(f"worker {name} exited with {proc.returncode}; log tail:\n{tail}")

    def health(self, name: str) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[name]}/health", timeout=5) as resp:
                return orjson.loads(resp.read())
        except (OSError, ValueError):
            return None

    def wait_ready(self, settle_s: float, timeout_s: float) -> float:
        """Seconds until every worker answers /health, every pages.fetched partition is assigned to
        exactly one worker (each worker has some) and the assignment has held for `settle_s`."""
        t0 = time.monotonic()
        source = self.topic("pages.fetched")
        stable_since, last = None, None
        while time.monotonic() - t0 < timeout_s:
            self.check_alive()
            health = {name: self.health(name) for name in self.workers}
            states = {name: s for name, s in health.items() if s is not None}
            ok = len(states) == len(health)
            if ok:
                owned = {
                    name: sorted(a for a in s["assigned"] if a.rsplit(":", 1)[0] == source)
                    for name, s in states.items()
                }
                flat = [a for v in owned.values() for a in v]
                ok = len(flat) == len(set(flat)) == self.partitions and all(owned.values())
                snapshot = {name: tuple(s["assigned"]) for name, s in states.items()}
                if ok and snapshot == last:
                    stable_since = stable_since or time.monotonic()
                    if time.monotonic() - stable_since >= settle_s:
                        return time.monotonic() - t0
                else:
                    stable_since = None
                last = snapshot
            time.sleep(0.5)
        raise RuntimeError(f"workers not ready after {timeout_s:.0f}s: { {n: self.health(n) for n in self.workers} }")

    def metrics(self) -> dict[str, float]:
        """Prometheus samples summed over the workers: name{labels} -> value."""
        from prometheus_client.parser import text_string_to_metric_families

        out: dict[str, float] = {}
        for name in self.workers:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[name]}/metrics", timeout=10) as resp:
                    text = resp.read().decode()
            except OSError:
                continue
            for family in text_string_to_metric_families(text):
                for s in family.samples:
                    labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                    key = f"{s.name}{{{labels}}}" if labels else s.name
                    out[key] = out.get(key, 0.0) + s.value
        return out

    def stop(self) -> None:
        procs = list(self.workers.items())
        for _, proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)  # the worker and its extraction pool
        for _, proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
            with contextlib.suppress(ProcessLookupError):  # pool processes left behind by a fast exit
                os.killpg(proc.pid, signal.SIGKILL)
        self.workers.clear()


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
    latest: dict[str, tuple[int, bool, int]] = field(default_factory=dict)  # URL -> (revision, complete, fetched)
    first_complete: dict[tuple[str, int], int] = field(default_factory=dict)  # (URL, fetched) -> record ts
    records: int = 0
    incomplete: int = 0
    revised: int = 0
    last_ts: int = 0
    verdicts: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    done_count: int = 0
    timestamps: list[int] = field(default_factory=list)

    def add(self, value: bytes, ts: int) -> None:
        d = orjson.loads(value)
        url, rev, complete = d["url"], d["revision"], d["complete"]
        fetched = rfc3339_to_ms(d["fetched_at"])
        self.records += 1
        self.incomplete += not complete
        self.revised += rev > 1
        self.last_ts = max(self.last_ts, ts)
        self.timestamps.append(ts)
        if complete:
            self.first_complete.setdefault((url, fetched), ts)
        old = self.latest.get(url)
        if old is None or rev >= old[0]:
            was_done = old is not None and self._done(url, old)
            self.latest[url] = (rev, complete, fetched)
            self.verdicts[url] = (d["verdict"], d["duplicate_of"])
            self.done_count += self._done(url, self.latest[url]) - was_done

    def _done(self, url: str, state: tuple[int, bool, int]) -> bool:
        return state[1] and state[2] == self.expected.get(url)

    @property
    def done(self) -> bool:
        return self.done_count == len(self.expected)


def read_decisions(app: App, log: DecisionLog, publisher: Publisher, *, settle_s: float, timeout_s: float) -> float:
    """Reads dedup.decisions until every URL is done and nothing new came for `settle_s`; returns the
    monotonic time at which it was first done."""
    consumer = Consumer(
        {
            "bootstrap.servers": app.bootstrap,
            "group.id": f"bench-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    topic = app.topic("dedup.decisions")
    try:
        parts = consumer.list_topics(topic, timeout=20).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        deadline = time.monotonic() + timeout_s
        done_at: float | None = None
        last_new = time.monotonic()
        next_report = time.monotonic() + 15
        while time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=0.2):
                error = msg.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(f"consumer error: {error}")
                    continue
                value = msg.value()
                if value is not None:
                    log.add(value, msg.timestamp()[1])
                last_new = time.monotonic()
            if publisher.error is not None:
                raise RuntimeError(f"publishing failed: {publisher.error!r}")
            if log.done and done_at is None:
                done_at = time.monotonic()
            if done_at is not None and not publisher.is_alive() and time.monotonic() - last_new >= settle_s:
                return done_at
            if time.monotonic() >= next_report:
                say(f"  {log.done_count}/{len(log.expected)} URLs decided ({log.records} decision records)")
                next_report += 15
                app.check_alive()
        raise RuntimeError(f"timed out after {timeout_s:.0f}s: {log.done_count}/{len(log.expected)} URLs done")
    finally:
        consumer.close()


# --- counting records --------------------------------------------------------------------------------


def topic_records(app: App) -> dict[str, int]:
    """End offsets summed over partitions, for the prefix's topics and the app's own topics."""
    admin = AdminClient({"bootstrap.servers": app.bootstrap})
    topics = admin.list_topics(timeout=20).topics
    mine = sorted(t for t in topics if t.startswith(app.prefix) or t.startswith(f"{app.name}-"))
    consumer = Consumer({"bootstrap.servers": app.bootstrap, "group.id": f"bench-{uuid.uuid4()}"})
    try:
        out = {}
        for t in mine:
            out[t] = sum(
                consumer.get_watermark_offsets(TopicPartition(t, p), timeout=20)[1] for p in topics[t].partitions
            )
        return out
    finally:
        consumer.close()


def gather_kinds(app: App) -> Counter[str]:
    """neardup.gather records by kind (fetch, answer, revision, tick), read up to the end offsets."""
    topic = app.topic("neardup.gather")
    consumer = Consumer(
        {"bootstrap.servers": app.bootstrap, "group.id": f"bench-{uuid.uuid4()}", "enable.auto.commit": False}
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
                    tag = msgpack.unpackb(value, raw=False)[0]
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


# --- profiling (optional) ---------------------------------------------------------------------------


def start_py_spy(out_dir: Path, app: str, pids: list[int]) -> list[tuple[subprocess.Popen, Path]]:
    """py-spy on each worker's main process (all its threads), sampling without pausing it."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        say("no py-spy beside the interpreter: no profile")
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    spies = []
    for i, pid in enumerate(pids):
        path = out_dir / f"{app}-worker{i + 1}.txt"
        cmd = [str(spy), "record", "--nonblocking", "-r", "100", "-f", "raw", "-o", str(path), "-p", str(pid)]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        spies.append((proc, path))
    return spies


def stop_py_spy(spies: list[tuple[subprocess.Popen, Path]]) -> list[str]:
    paths = []
    for proc, path in spies:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        paths.append(path)
    return summarize_profiles(paths) if paths else []


AREAS = (
    ("neardup_core/", "neardup_core"),
    ("streams/", "streams (the app)"),
    ("faust/", "faust"),
    ("mode/", "mode (faust's service library)"),
    ("aiokafka/", "aiokafka"),
    ("rocksdict", "rocksdict"),
    ("asyncio/selector_events.py", "asyncio socket transport (send/recv)"),
    ("selectors.py", "selectors (epoll)"),
    ("asyncio/", "asyncio (event loop, tasks, futures)"),
    ("msgpack", "msgpack"),
    ("orjson", "orjson"),
)
# frames on the stack of almost every sample: they say nothing about where the time goes
GENERIC = (
    "asyncio/base_events.py",
    "asyncio/events.py",
    "<frozen runpy>",
    "typer/",
    "click/",
    "threading.py",
    "mode/worker.py",
    "streams/cli.py",
    "mode/utils/",
    "mode/services.py",
)


def frame_path(frame: str) -> str:
    m = re.match(r".* \((.*?):\d+\)$", frame)
    return m.group(1) if m else frame


def frame_area(frame: str) -> str:
    """What a frame belongs to, from the (shortened) file path py-spy prints."""
    path = frame_path(frame)
    for needle, area in AREAS:
        if needle in path:
            return area
    return "other (stdlib, multiprocessing, ...)"


def short_frame(frame: str) -> str:
    m = re.match(r"(.*) \((.*?):\d+\)$", frame)
    return f"{m.group(1)} ({m.group(2)})" if m else frame


def summarize_profiles(paths: list[Path]) -> list[str]:
    """Shares of samples: by area of the innermost Python frame (where the thread was), and the
    functions most often on the stack (inclusive)."""
    self_area: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit() or not stack:
                continue
            n = int(count)
            frames = stack.split(";")
            total += n
            self_area[frame_area(frames[-1])] += n
            for f in {short_frame(f) for f in frames if not any(g in frame_path(f) for g in GENERIC)}:
                inclusive[f] += n
    if not total:
        return []
    out = [
        f"{total} samples (py-spy, 100 per second per worker, all threads of the main process, only "
        "while a thread was not idle).",
        "",
        "| innermost Python frame in | share of samples |",
        "|---|---|",
    ]
    out += [f"| {a} | {n / total:.0%} |" for a, n in self_area.most_common()]
    out += ["", "| function (on the stack, inclusive) | share of samples |", "|---|---|"]
    out += [f"| `{f}` | {n / total:.0%} |" for f, n in inclusive.most_common(25)]
    return out


# --- one phase ---------------------------------------------------------------------------------------


@dataclass
class Phase:
    kind: str  # "throughput" or "latency"
    workers: int
    app: str
    pages: int
    rate_target: float | None = None
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

    @property
    def rate(self) -> float:
        return self.pages / self.elapsed_s if self.elapsed_s else 0.0


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
) -> Phase:
    name = f"bench-{tag}-{kind[:3]}-w{workers}"
    extra = dict(kv.split("=", 1) for kv in args.worker_env)
    app = App(bootstrap, name, base / name, args.partitions, args.extract_processes, extra)
    phase = Phase(kind, workers, name, len(events), rate_target=rate)
    expected: dict[str, int] = {}
    for e in events:
        expected[e.url] = max(expected.get(e.url, 0), e.fetched_ms)
    try:
        say(f"{kind}, {workers} worker(s): app {name}")
        app.create_topics()
        for i in range(workers):
            app.start_worker(str(i + 1))
        phase.ready_s = app.wait_ready(args.ready_settle, args.ready_timeout)
        say(
            f"  workers ready after {phase.ready_s:.1f}s; publishing {len(events)} events"
            + (f" at {rate:.1f}/s" if rate else " at once")
        )
        pids = [p.pid for p in app.workers.values()]
        sampler = Sampler(pids)
        before = cpu_snapshot(pids, broker_pid)
        sampler.start()
        spies = start_py_spy(args.py_spy, name, pids) if args.py_spy and kind == "throughput" else []
        publisher = Publisher(bootstrap, app.topic("pages.fetched"), events, rate)
        log = DecisionLog(expected)
        publisher.start()
        try:
            read_decisions(app, log, publisher, settle_s=args.settle, timeout_s=args.timeout)
        finally:
            publisher.cancel.set()
            publisher.join(timeout=150)
            sampler.stop()
            phase.profile = stop_py_spy(spies)
        after = cpu_snapshot(pids, broker_pid)
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
            quantile(sampler.loop_demand[p], 0.5) if sampler.loop_demand[p] else 0.0 for p in pids
        ]
        phase.memory = [memory_of(p) for p in pids]
        phase.metrics = app.metrics()
        phase.records = topic_records(app)
        phase.gather = dict(gather_kinds(app))
        say(f"  {phase.rate:.1f} pages/s over {phase.elapsed_s:.1f}s; {phase.decisions} decision records")
    finally:
        app.stop()
        if app.logs:
            phase.logs = log_findings(list(app.logs.values()))
        if not args.keep:
            shutil.rmtree(app.workdir, ignore_errors=True)
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
) -> Phase:
    for attempt in range(1, 4):
        try:
            phase = run_phase(args, bootstrap, broker_pid, base, events, kind, workers, rate, f"{tag}a{attempt}")
            phase.attempts = attempt
            return phase
        except ForeignStop as exc:
            say(f"  {exc}; running the phase again on a fresh app")
            if attempt == 3:
                raise
    raise AssertionError("unreachable")


# --- report ------------------------------------------------------------------------------------------


def quantile(values: list[float] | list[int], q: float) -> float:
    """Nearest-rank quantile."""
    s = sorted(values)
    if not s:
        return float("nan")
    return float(s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))])


def mib(n: float) -> str:
    return f"{n / 2**20:.0f}"


def topic_group(topic: str, app: str) -> str:
    for name in NEARDUP_TOPICS:
        if topic == f"{app}.{name}":
            return name
    if topic.startswith(f"{app}-") and topic.endswith("-changelog"):
        return "changelog " + topic[len(app) + 1 : -len("-changelog")]
    return topic.replace(app, "{app}")


def phase_rows(p: Phase) -> list[tuple[str, str]]:
    """(metric, value) rows describing one phase."""
    rows: list[tuple[str, str]] = []
    if p.kind == "throughput":
        rows.append(("pages/s (first publish -> last decision record)", f"{p.rate:.1f}"))
        rows.append(("elapsed s", f"{p.elapsed_s:.1f}"))
        rows.append(("s until every page had its first complete decision", f"{p.first_complete_s:.1f}"))
        rows.append(("publish s (producer)", f"{p.publish_s:.1f}"))
    else:
        achieved = p.pages / p.publish_s if p.publish_s else 0
        rows.append(("target / achieved publish rate, pages/s", f"{p.rate_target:.1f} / {achieved:.1f}"))
        lat = p.latencies_ms
        rows.append(
            (
                "decision latency p50 / p90 / p99 / max, ms",
                f"{quantile(lat, 0.5):.0f} / {quantile(lat, 0.9):.0f} / {quantile(lat, 0.99):.0f} / "
                f"{max(lat) if lat else float('nan'):.0f}",
            )
        )
        rows.append(("pages with a latency (of all)", f"{len(lat)} / {p.pages}"))
    rows.append(("decision records / incomplete / revisions", f"{p.decisions} / {p.incomplete} / {p.revised}"))
    rows.append(("longest time without a new decision record, s", f"{p.longest_gap_s:.1f}"))
    if p.kind == "throughput":
        rows.append(("decision records per 5 s from the first publish", " ".join(map(str, p.per_window))))
    total = sum(p.records.values())
    rows.append(("Kafka records per page, all topics", f"{total / p.pages:.2f}"))
    groups: Counter[str] = Counter()
    for t, n in p.records.items():
        groups[topic_group(t, p.app)] += n
    for g, n in sorted(groups.items(), key=lambda kv: -kv[1]):
        rows.append((f"  {g}", f"{n / p.pages:.2f} ({n})"))
    if p.gather:
        rows.append(("  neardup.gather by kind", ", ".join(f"{k} {v}" for k, v in sorted(p.gather.items()))))
    for i, m in enumerate(p.memory):
        rows.append(
            (
                f"RSS worker {i + 1} at the end, MiB (PSS; main process; processes)",
                f"{mib(m['rss'])} ({mib(m['pss'])}; {mib(m['main_rss'])}; {m['processes']})",
            )
        )
        rows.append((f"peak RSS worker {i + 1}, MiB", mib(p.peak_rss[i])))
    cpu = p.cpu
    for i, w in enumerate(cpu["workers"].values()):
        rows.append(
            (
                f"worker {i + 1} event-loop thread: on CPU / waiting for a CPU, cores (median second: both)",
                f"{w['loop']:.2f} / {w['loop_wait']:.2f} ({p.loop_demand_median[i]:.2f})",
            )
        )
        rows.append(
            (
                f"worker {i + 1} main process, all threads: on CPU / waiting, cores",
                f"{w['main']:.2f} / {w['main_wait']:.2f}",
            )
        )
        rows.append(
            (
                f"worker {i + 1} extraction pool: on CPU / waiting, cores",
                f"{w['pool']:.2f} / {w['pool_wait']:.2f}",
            )
        )
    wall = cpu["wall_s"]
    loop_s = sum(w["loop"] for w in cpu["workers"].values()) * wall
    main_s = sum(w["main"] for w in cpu["workers"].values()) * wall
    pool_s = sum(w["pool"] for w in cpu["workers"].values()) * wall
    rows.append(
        (
            "CPU ms per page: event loops / main processes / pools / broker",
            f"{loop_s / p.pages * 1000:.1f} / {main_s / p.pages * 1000:.1f} / {pool_s / p.pages * 1000:.1f} "
            "/ "
            f"{cpu['broker'] * wall / p.pages * 1000:.1f}",
        )
    )
    rows.append(
        (
            "CPU broker / this script / whole machine, cores",
            f"{cpu['broker']:.2f} / {cpu['bench']:.2f} / {cpu['machine']:.2f} of {os.cpu_count()}",
        )
    )
    rest = cpu["machine"] - cpu["broker"] - cpu["bench"] - sum(w["main"] + w["pool"] for w in cpu["workers"].values())
    rows.append(("CPU of everything else on the machine (other jobs), cores", f"{max(rest, 0):.2f}"))
    mv = p.metrics
    if mv:
        probes = mv.get("neardup_probes_total", 0)
        rows.append(("probes per page (worker metric)", f"{probes / p.pages:.2f}"))
        count, total_s = (
            mv.get("neardup_decision_seconds_count", 0),
            mv.get("neardup_decision_seconds_sum", 0),
        )
        if count:
            rows.append(
                (
                    "worker-side decision time mean, ms (gather receipt -> first complete)",
                    f"{total_s / count * 1000:.0f}",
                )
            )
        pcount, psum = (
            mv.get("neardup_probe_seconds_count", 0),
            mv.get("neardup_probe_seconds_sum", 0),
        )
        if pcount:
            rows.append(("index probe mean, ms", f"{psum / pcount * 1000:.2f}"))
    logs = p.logs
    if logs:
        over = logs["overlapping"]
        rows.append(
            (
                "'Timer ... is overlapping' warnings (max runtime s)",
                ", ".join(f"{k} {len(v)} ({max(v):.1f})" for k, v in over.items()) or "none",
            )
        )
        late = logs["late"]
        rows.append(
            (
                "'Timer ... woke up too late' (max drift s)",
                ", ".join(f"{k} {len(v)} ({max(v):.1f})" for k, v in late.items()) or "none",
            )
        )
        rows.append(
            (
                "log WARNING / ERROR lines",
                f"{logs['levels'].get('WARNING', 0)} / {logs['levels'].get('ERROR', 0)}",
            )
        )
    return rows


def md_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def loop_ms(p: Phase) -> float:
    return sum(w["loop"] for w in p.cpu["workers"].values()) * p.cpu["wall_s"] / p.pages * 1000


def worker_ms(p: Phase) -> float:
    return sum(w["main"] + w["pool"] for w in p.cpu["workers"].values()) * p.cpu["wall_s"] / p.pages * 1000


def comparison(results: list[dict[int, dict[str, Phase]]], counts: list[int]) -> tuple[str, list[str]]:
    """Each worker count against the first (usually 1), per repeat, and the median of the ratios."""
    base = counts[0]
    header = ["metric", *[f"{n} worker(s)" for n in counts], *[f"{n} vs {base}" for n in counts[1:]]]
    lines = []

    def metric(label: str, get: Any, fmt: str = "{:.1f}") -> list[str]:
        row = [label]
        vals = {n: [get(r[n]) for r in results] for n in counts}
        for n in counts:
            row.append(" / ".join(fmt.format(v) for v in vals[n]))
        for n in counts[1:]:
            rs = [a / b for a, b in zip(vals[n], vals[base], strict=True) if b]
            row.append(
                (" / ".join(f"{x:.2f}" for x in rs) + (f" (median {statistics.median(rs):.2f})" if len(rs) > 1 else ""))
                if rs
                else "n/a"
            )
        return row

    rows = [
        metric("throughput, pages/s", lambda r: r["throughput"].rate),
        metric("latency p50, ms", lambda r: quantile(r["latency"].latencies_ms, 0.5), "{:.0f}"),
        metric("latency p99, ms", lambda r: quantile(r["latency"].latencies_ms, 0.99), "{:.0f}"),
        metric("(paced at, pages/s)", lambda r: r["latency"].rate_target),
        metric(
            "Kafka records per page (throughput run)",
            lambda r: sum(r["throughput"].records.values()) / r["throughput"].pages,
            "{:.2f}",
        ),
        metric(
            "Kafka records per page (paced run)",
            lambda r: sum(r["latency"].records.values()) / r["latency"].pages,
            "{:.2f}",
        ),
        metric(
            "RSS per worker at the end, MiB (mean)",
            lambda r: statistics.mean(m["rss"] for m in r["throughput"].memory) / 2**20,
            "{:.0f}",
        ),
        metric(
            "RSS all workers at the end, MiB",
            lambda r: sum(m["rss"] for m in r["throughput"].memory) / 2**20,
            "{:.0f}",
        ),
        metric(
            "CPU all workers, cores (throughput run)",
            lambda r: sum(w["main"] + w["pool"] for w in r["throughput"].cpu["workers"].values()),
            "{:.2f}",
        ),
        metric(
            "CPU worker main processes, cores (throughput run)",
            lambda r: sum(w["main"] for w in r["throughput"].cpu["workers"].values()),
            "{:.2f}",
        ),
        metric(
            "event loops on CPU + waiting for one, cores (throughput run)",
            lambda r: sum(w["loop"] + w["loop_wait"] for w in r["throughput"].cpu["workers"].values()),
            "{:.2f}",
        ),
        metric(
            "event loops waiting for a CPU, cores (throughput run)",
            lambda r: sum(w["loop_wait"] for w in r["throughput"].cpu["workers"].values()),
            "{:.2f}",
        ),
        metric(
            "event-loop CPU ms per page, all workers (throughput run)",
            lambda r: loop_ms(r["throughput"]),
            "{:.1f}",
        ),
        metric(
            "worker CPU ms per page, all processes (throughput run)",
            lambda r: worker_ms(r["throughput"]),
            "{:.1f}",
        ),
        metric("CPU whole machine, cores (throughput run)", lambda r: r["throughput"].cpu["machine"], "{:.2f}"),
    ]
    lines.append(md_table(header, rows))
    notes = []
    for r in results:
        b = r[base]["throughput"].verdicts
        for n in counts[1:]:
            other = r[n]["throughput"].verdicts
            differ = sum(1 for u in b if other.get(u) != b[u])
            notes.append(
                f"final (verdict, duplicate_of) of {n} worker(s) vs {base}: "
                f"{'identical' if not differ else f'{differ} URLs differ'} ({len(b)} URLs)"
            )
    return "\n".join(lines), notes


def machine_info() -> dict[str, str]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = "?"
    with contextlib.suppress(OSError):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 2**20:.0f} GiB"
    versions = {}
    for pkg in ("faust-streaming", "aiokafka", "confluent-kafka", "rocksdict"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version

            versions[pkg] = version(pkg)
    kafka = "?"
    with contextlib.suppress(OSError):
        m = re.search(r"<kafka\.version>([^<]+)<", (ROOT / "deploy" / "kafka" / "pom.xml").read_text())
        kafka = m.group(1) if m else "?"
    git = "?"
    with contextlib.suppress(Exception):
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        git = head + (" (with uncommitted changes)" if dirty else "")
    return {
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "memory": mem,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "versions": ", ".join(f"{k} {v}" for k, v in versions.items()),
        "kafka": kafka,
        "git": git,
        "loadavg": Path("/proc/loadavg").read_text().split(" ")[0],
    }


def report(
    args: argparse.Namespace,
    argv: list[str],
    events: list[Event],
    results: list[dict[int, dict[str, Phase]]],
    counts: list[int],
    started: datetime,
    load_before: str,
    wall_s: float,
) -> str:
    info = machine_info()
    sources = Counter(e.source for e in events)
    ext = (
        args.extract_processes if args.extract_processes is not None else f"default ({os.cpu_count()}, os.cpu_count())"
    )
    out = [
        "# Streaming benchmark: 1 vs 2 workers",
        "",
        f"Generated by `bench/bench_stream.py` on {started.strftime('%Y-%m-%d %H:%M UTC')} "
        f"({wall_s / 60:.1f} min for the whole run).",
        "",
        f"- machine: {info['nproc']} CPUs (`nproc`), {info['cpu']}, {info['memory']} RAM, Linux "
        f"{info['kernel']}; "
        f"shared with other jobs (1-min load average {load_before} at the start, {info['loadavg']} at the "
        "end)",
        f"- software: Python {info['python']}, {info['versions']}, Apache Kafka {info['kafka']} "
        f"({'deploy/local-kafka, started by the script' if not args.broker else 'broker ' + args.broker}); "
        f"neardup at {info['git']}",
        f"- input: {len(events)} `pages.fetched` events, {len({e.url for e in events})} URLs: "
        f"{sources.get('crawl', 0)} from `generate_crawl({args.seed}, scale={args.scale})` "
        f"(~3 KB each) and {sources.get('corpus', 0)} real pages of {args.corpus} (~60 KB each, "
        "`MANIFEST.jsonl` order, those with a URL), spread evenly through the crawl",
        f"- topics: {args.partitions} partitions each (`neardup topics create --partitions "
        f"{args.partitions}`); "
        f"worker settings: defaults (NEARDUP_EXTRACT_PROCESSES {ext})"
        + (f", plus {', '.join(f'`{kv}`' for kv in args.worker_env)}" if args.worker_env else "")
        + "; each worker its own NEARDUP_DATA_DIR and NEARDUP_WEB_PORT; every phase on a fresh topic prefix "
        "and app id",
        f"- each phase starts once every worker answers /health and the group's assignment covering all "
        f"partitions has not changed for {args.ready_settle:.0f} s",
        "",
        "Reproduce (from the repository root):",
        "",
        "```",
        "/work/venv/bin/python " + shlex.join(["bench/bench_stream.py", *argv]),
        "```",
        "",
        "It starts its own broker (`deploy/local-kafka start --port 0 --dir <tmp>/kafka`) and stops it "
        "at the end; `--broker HOST:PORT` uses a running one instead. Per phase it runs:",
        "",
        "```",
        "NEARDUP_BROKER=<bootstrap> NEARDUP_TOPIC_PREFIX=<app>. NEARDUP_APP_ID=<app> "
        f"neardup topics create --partitions {args.partitions}",
        "# once per worker N = 1..workers; `python -m streams.cli worker` is what `neardup worker` runs",
        "NEARDUP_BROKER=<bootstrap> NEARDUP_TOPIC_PREFIX=<app>. NEARDUP_APP_ID=<app> "
        "NEARDUP_DATA_DIR=<tmp>/<app>/data-N NEARDUP_WEB_PORT=<free port> python -m streams.cli worker -l info",
        "```",
        "",
        "Definitions:",
        "",
        "- **throughput** = pages / (timestamp of the last `dedup.decisions` record - timestamp of the "
        "first published record), everything published at once; the phase ends once every URL's latest "
        f"decision is complete and for its latest fetch, and nothing new came for {args.settle:.0f} s;",
        "- **latency** = timestamp of the first complete decision for the page's URL and fetch time - "
        "timestamp of its published record, publishing at "
        f"{args.paced_fraction:.0%} of the throughput just measured for the same worker count;",
        "- **Kafka records per page** = end offsets of every topic of the prefix and of the app's own "
        "topics (`{app}-*-changelog`, `{app}-__assignor-__leader`) after the phase, divided by pages "
        f"(ticks included: {args.partitions} per tick interval, also before the first publish);",
        "- **RSS** = worker process + its descendants (the extraction pool), from /proc; PSS counts pages "
        "shared after fork once;",
        "- **CPU**, in cores (1.0 = one core for the whole phase), from `/proc/<pid>/task/*/schedstat`: "
        "time on a CPU, and time runnable but waiting for a CPU (other jobs had it). The *event-loop "
        "thread* is the worker's main thread, where every agent, the RocksDB calls and the Kafka client "
        "run; a loop that is on a CPU or waiting for one all the time (1.0) is CPU-bound. *CPU ms per "
        "page* (CPU time / pages) depends much less on the other jobs than pages/s does.",
        "",
        "## 2 vs 1",
        "",
    ]
    table, notes = comparison(results, counts)
    out.append(table)
    if len(results) > 1:
        out += ["", "Values per repeat, separated by `/`, in run order (the worker counts alternate)."]
    out += [""] + [f"- {n}" for n in notes]
    for rep, r in enumerate(results):
        for n in counts:
            for kind in ("throughput", "latency"):
                p = r[n][kind]
                title = f"## {n} worker(s), {kind}" + (f" (repeat {rep + 1})" if len(results) > 1 else "")
                again = (
                    f" (attempt {p.attempts}: an earlier one lost a worker to a signal from another job)"
                    if p.attempts > 1
                    else ""
                )
                out += [
                    "",
                    title,
                    "",
                    f"App `{p.app}`{again}; workers ready {p.ready_s:.0f} s after start.",
                    "",
                ]
                out.append(md_table(["metric", "value"], [[a, b] for a, b in phase_rows(p)]))
                if p.profile:
                    out += ["", "py-spy profile of the workers' main processes during this phase:", ""]
                    out += p.profile
                msgs = p.logs.get("messages") if p.logs else None
                if msgs:
                    out += ["", "Worker log warnings/errors (digits as N):", ""]
                    out += [f"- {c}x `{m}`" for m, c in msgs.most_common(8)]
    return "\n".join(out) + "\n"


# --- main --------------------------------------------------------------------------------------------


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--scale", type=int, default=10, help="generate_crawl scale (about 320 events per unit)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the shared corpus (skipped if absent)")
    p.add_argument("--no-corpus", action="store_true", help="only the generated crawl")
    p.add_argument("--corpus-limit", type=int, default=None, help="at most this many corpus pages")
    p.add_argument("--workers", default="1,2", help="worker counts to compare, the first is the base (default 1,2)")
    p.add_argument("--repeat", type=int, default=1, help="run the whole sequence this many times")
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument(
        "--extract-processes",
        type=int,
        default=None,
        help="NEARDUP_EXTRACT_PROCESSES of each worker (default: the worker's default)",
    )
    p.add_argument("--paced-fraction", type=float, default=0.5, help="latency phase rate / measured throughput")
    p.add_argument("--broker", help="use this running broker (HOST:PORT) instead of starting one")
    p.add_argument("--ready-settle", type=float, default=5.0, help="seconds the assignment must hold before publishing")
    p.add_argument("--ready-timeout", type=float, default=240.0)
    p.add_argument("--settle", type=float, default=3.0, help="seconds without new decisions that end a phase")
    p.add_argument("--timeout", type=float, default=1200.0, help="seconds a phase may take")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (worker logs, RocksDB)")
    p.add_argument(
        "--worker-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment of every worker, repeatable (e.g. Faust's own TABLE_STANDBY_REPLICAS=0)",
    )
    p.add_argument(
        "--py-spy",
        type=Path,
        default=None,
        metavar="DIR",
        help="profile the workers with py-spy during throughput phases; raw stacks into DIR",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report ('-' for none)")
    return p.parse_args(argv)


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    args = parse(argv)
    counts = [int(x) for x in args.workers.split(",")]
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    started, t0 = datetime.now(UTC), time.monotonic()
    load_before = Path("/proc/loadavg").read_text().split(" ")[0]
    events = crawl_events(args.seed, args.scale)
    if not args.no_corpus:
        corpus = corpus_events(args.corpus, args.corpus_limit)
        if not corpus:
            say(f"no corpus pages under {args.corpus}: the generated crawl only")
        events = interleave(events, corpus)
    say(
        f"{len(events)} events ({len({e.url for e in events})} URLs), {sum(len(e.raw) for e in events) / 2**20:.1f} MiB"
    )
    base = Path(tempfile.mkdtemp(prefix="neardup-bench-stream-"))
    broker = LocalBroker(base)
    tag = uuid.uuid4().hex[:6]
    results: list[dict[int, dict[str, Phase]]] = []
    try:
        bootstrap = args.broker or broker.start()
        broker_pid = broker.pid if not args.broker else None
        for rep in range(args.repeat):
            order = counts if rep % 2 == 0 else list(reversed(counts))
            r: dict[int, dict[str, Phase]] = {}
            for n in order:
                tput = run_phase_retrying(
                    args, bootstrap, broker_pid, base, events, "throughput", n, None, f"{tag}{rep}"
                )
                rate = tput.rate * args.paced_fraction
                lat = run_phase_retrying(args, bootstrap, broker_pid, base, events, "latency", n, rate, f"{tag}{rep}")
                r[n] = {"throughput": tput, "latency": lat}
                for kind, p in r[n].items():
                    print(f"\n== {n} worker(s), {kind} ==")
                    for a, b in phase_rows(p):
                        print(f"{a:<78} {b}")
            results.append(r)
        text = report(args, argv, events, results, counts, started, load_before, time.monotonic() - t0)
        table, notes = comparison(results, counts)
        print("\n" + table)
        for note in notes:
            print(note)
        if str(args.out) != "-":
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text)
            say(f"wrote {args.out}")
        return 0
    except KeyboardInterrupt:
        say("interrupted; stopping what was started")
        return 130
    finally:
        broker.stop()
        if args.keep:
            say(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
