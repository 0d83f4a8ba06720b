"""A local dev cluster: a `deploy/local-kafka` broker (`streams.dev.broker`), one neardup app on it, and
its worker processes (`Cluster`, here).

What `neardup demo`, the integration and reliability tests and `bench/bench_stream.py` share:

- a broker: `start_broker(dir)` runs `deploy/local-kafka start --port 0 --dir DIR` and returns its
  address, `stop_broker(dir)` stops it, `restart_broker(broker)` starts it again on its port with its
  data; `missing_prerequisites()` says why none can start here (no checkout, no Java) before trying;
- an app on a broker, `Cluster`: one topic prefix and Faust app id, its topics created as the workers
  will see them, worker processes (`python -m streams.cli worker`, each in its own session, with its own
  NEARDUP_DATA_DIR and NEARDUP_WEB_PORT, its output in `worker-NAME.log`), killed or stopped by process
  group (the worker and its extraction pool), what they report on /health and /metrics, and a wait until
  the group's assignment has settled;
- publishing events to `pages.fetched` and reading a topic from its start until a condition holds;
  `latest_by_url` folds decisions to the latest one per URL.

A session, in the order it runs::

    broker = start_broker(Path("/tmp/nd/kafka"))
    cluster = Cluster(broker.bootstrap, "try1", Path("/tmp/nd/try1"))
    cluster.create_topics()
    cluster.start_worker("a")
    cluster.wait_balanced()
    cluster.publish(events)
    decisions = cluster.read_until("dedup.decisions", all_complete({e["url"] for e in events}))
    cluster.stop_all()
    stop_broker(broker.dir)

Failures raise `ClusterError` (or a subclass) with the worker logs' tails; callers turn them into test
failures, exit messages or retries.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from streams.dev.broker import ROOT, ClusterError, free_port
from streams.dev.decisions import Decision, Record
from streams.settings import Settings

BALANCED_TOPICS = ("pages.fetched", "neardup.gather", "neardup.probes")
"""The topics whose partitions a settled group holds between its workers."""
FOREIGN_SIGNAL = re.compile(r"Signal received: (15|2|1) ")  # how mode logs SIGTERM, SIGINT, SIGHUP


class WorkerExited(ClusterError):
    """A worker process ended while the cluster still counted on it."""

    def __init__(self, name: str, returncode: int, log_tail: str, *, signalled: bool) -> None:
        super().__init__(f"worker {name} exited with {returncode}\n{log_tail}")
        self.name = name
        self.returncode = returncode
        self.signalled = signalled
        """Its log says it got SIGTERM, SIGINT or SIGHUP: someone else stopped it (a shared machine)."""


# --- one app and its workers ---------------------------------------------------------------------------


@dataclass
class Cluster:
    """One neardup app (topic prefix and Faust app id) on a broker, and its worker processes.

    Workers run with a clean NEARDUP_* environment (none of the caller's settings leak in) from the
    repository root, so `python -m streams.cli` is this checkout's; `inherit=True` runs them as if
    started from the caller's shell instead: its NEARDUP_* settings and working directory (the demo,
    where the user's settings are meant to apply). Either way each gets the cluster's broker, prefix and
    app id, its own data dir and web port, and then `worker_env`.

    `code` runs the workers and `topics create` from another checkout of the project instead (e.g. a
    `git worktree` of an earlier commit, to compare two versions on one broker): it is their working
    directory and comes first on their PYTHONPATH, so `python -m streams.cli` and the packages it imports
    are that checkout's."""

    bootstrap: str
    prefix: str
    """The app's name: its Faust app id (and consumer group), and its topics' prefix `{prefix}.`."""
    workdir: Path
    """Worker data dirs (`data-NAME`) and logs (`worker-NAME.log`)."""
    partitions: int = 8
    worker_env: dict[str, str] = field(default_factory=dict)
    inherit: bool = False
    topic_prefix: str = ""
    """The topics' prefix, when not `{prefix}.` (e.g. the NEARDUP_TOPIC_PREFIX the demo was given)."""
    log_level: str = "info"
    code: Path | None = None
    """The checkout whose `streams.cli` the processes run (their cwd, first on PYTHONPATH); None: this
    repository (or, with `inherit`, the caller's working directory), as `python -m` finds it."""
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.topic_prefix = self.topic_prefix or f"{self.prefix}."

    @property
    def app_id(self) -> str:
        return self.prefix

    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}{name}"

    @property
    def settings(self) -> Settings:
        """This process's settings (security included) with the cluster's broker, prefix and app id."""
        return Settings(broker=self.bootstrap, topic_prefix=self.topic_prefix, app_id=self.app_id)

    def env(self, name: str | None = None) -> dict[str, str]:
        """The environment of worker `name` (None: of a command of the app, such as `topics create`)."""
        env = dict(os.environ) if self.inherit else {k: v for k, v in os.environ.items()
                                                       if not k.startswith("NEARDUP_")}
        env.update({"NEARDUP_BROKER": self.bootstrap, "NEARDUP_TOPIC_PREFIX": self.topic_prefix,
                    "NEARDUP_APP_ID": self.app_id, "PYTHONUNBUFFERED": "1"})
        if name is not None:
            env["NEARDUP_DATA_DIR"] = str(self.workdir / f"data-{name}")
            env["NEARDUP_WEB_PORT"] = str(self.ports.setdefault(name, free_port()))
        if self.code is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(self.code), *filter(None, [env.get("PYTHONPATH")])])
        env.update(self.worker_env)
        return env

    @property
    def cwd(self) -> Path | None:
        """The processes' working directory: `code`, else the repository root (None with `inherit`)."""
        if self.code is not None:
            return self.code
        return None if self.inherit else ROOT

    def create_topics(self) -> None:
        """`neardup topics create --partitions N` in the workers' environment, so the topics (Faust's
        changelogs, named after the table design, among them) are those the workers will look for."""
        cmd = [sys.executable, "-m", "streams.cli", "topics", "create", "--partitions", str(self.partitions)]
        result = subprocess.run(cmd, cwd=self.cwd, env=self.env(), stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, timeout=180)
        if result.returncode != 0:
            raise ClusterError(f"neardup topics create failed (exit {result.returncode}):\n"
                               f"{result.stdout}{result.stderr}")

    def start_worker(self, name: str) -> subprocess.Popen[bytes]:
        """Starts worker `name` in a session of its own (a restart appends to its log and reuses its
        data dir and port). Spelled `python -m streams.cli worker`, it is what `neardup worker` runs,
        and a `pkill -f "neardup worker"` of someone else on a shared machine leaves it alone."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = self.workdir / f"worker-{name}.log"
        self.logs[name] = log
        with log.open("ab") as fh:
            proc = subprocess.Popen([sys.executable, "-m", "streams.cli", "worker", "-l", self.log_level],
                                    cwd=self.cwd, env=self.env(name), stdout=fh, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self.workers[name] = proc
        return proc

    def kill_worker(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` to the worker's process group (it and its extraction pool) and waits for it."""
        proc = self.workers.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        proc.wait(timeout=60)

    def stop_all(self, timeout_s: float = 30.0) -> None:
        """SIGTERM to every worker's process group at once, SIGKILL to those still running after
        `timeout_s`, then SIGKILL to each group again for pool processes left behind by a fast exit."""
        procs = list(self.workers.values())
        for proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=timeout_s)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        self.workers.clear()

    def check_alive(self) -> None:
        """Raises `WorkerExited` when a worker the cluster still runs has ended."""
        for name, proc in self.workers.items():
            if proc.poll() is not None:
                text = self.logs[name].read_text(errors="replace")
                raise WorkerExited(name, proc.returncode, self.log_tail(),
                                   signalled=FOREIGN_SIGNAL.search(text) is not None)

    def log_tail(self, lines: int = 60) -> str:
        out = []
        for name, path in self.logs.items():
            text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else []
            out.append(f"--- worker {name} ({path}) ---\n" + "\n".join(text))
        return "\n".join(out)

    # --- what the workers report ------------------------------------------------------------------------

    def group_lag(self) -> dict[str, int]:
        """`topic:partition` -> messages of the app's input topics the consumer group has not committed,
        for the partitions where that is more than 0 (what a stalled pipeline leaves behind)."""
        return {tp: high - committed for tp, (committed, high) in self.uncommitted().items()}

    def uncommitted(self) -> dict[str, tuple[int, int]]:
        """`topic:partition` -> (the group's committed offset, the highwater) of the app's input topics,
        for the partitions where the highwater is past the committed offset."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import AdminClient

        config = self.settings.confluent_config()
        admin = AdminClient(config)
        topics = [self.topic(t) for t in ("pages.fetched", "neardup.gather", "neardup.probes", "neardup.hosts")]
        meta = admin.list_topics(timeout=20).topics
        tps = [TopicPartition(t, p) for t in topics if t in meta for p in meta[t].partitions]
        future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(self.app_id, tps)])
        committed = {(tp.topic, tp.partition): tp.offset
                     for tp in future[self.app_id].result(timeout=20).topic_partitions}
        from confluent_kafka import Consumer

        consumer = Consumer({**config, "group.id": f"devcluster-{uuid.uuid4()}"})
        try:
            behind = {}
            for tp in tps:
                _, high = consumer.get_watermark_offsets(tp, timeout=10)
                done = max(committed.get((tp.topic, tp.partition), 0), 0)
                if high > done:
                    behind[f"{tp.topic}:{tp.partition}"] = (done, high)
            return behind
        finally:
            consumer.close()

    def diagnose(self) -> str:
        """What a stalled cluster looks like from outside: first one short line each (the group's
        uncommitted input per partition; each worker's counts, assignment and reported lag), then the
        long dumps (each worker's asyncio tasks and, with `py-spy` on PATH, its threads), so a cut log
        keeps the summary."""
        lines = ["--- diagnosis ---"]
        try:
            lines.append(f"group lag (committed, highwater): {self.uncommitted()}")
        except Exception as exc:  # a diagnosis must not hide the failure it explains
            lines.append(f"group lag: unavailable ({exc!r})")
        shown = ("neardup_pages_total", "neardup_pending_pages", "neardup_probes_total",
                 "neardup_decisions_total", "neardup_reseeks_total", "neardup_stalled_partitions_total")
        for name in self.workers:
            try:
                samples = self.metrics(name)
                lag = {k: v for k, v in samples.items() if k.startswith("neardup_consumer_lag{") and v}
                counts = {k: v for k, v in samples.items() if k.split("{", 1)[0] in shown}
                lines.append(f"worker {name}: {counts}; assigned {sorted(self.assignment(name) or [])}; lag {lag}")
            except OSError as exc:
                lines.append(f"worker {name}: no metrics ({exc!r})")
        spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
        for name, proc in self.workers.items():
            with contextlib.suppress(OSError):
                tasks = self._get(name, "/debug/tasks", 10).decode()
                lines.append(f"asyncio tasks of worker {name}:\n{tasks[-20000:]}")
            if spy is not None and proc.poll() is None:
                dump = subprocess.run([spy, "dump", "--subprocesses", "--pid", str(proc.pid)], capture_output=True,
                                      text=True, timeout=60, check=False)
                lines.append(f"py-spy dump of worker {name}:\n{dump.stdout[-12000:]}{dump.stderr[-1000:]}")
        return "\n".join(lines)

    def _get(self, name: str, path: str, timeout_s: float) -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[name]}{path}", timeout=timeout_s) as resp:
            body: bytes = resp.read()
            return body

    def health(self, name: str) -> dict[str, Any] | None:
        """Worker `name`'s /health page, or None while it does not answer."""
        try:
            health: dict[str, Any] = orjson.loads(self._get(name, "/health", 5))
            return health
        except (OSError, ValueError):
            return None

    def assignment(self, name: str) -> set[str] | None:
        """The `topic:partition`s worker `name` reports on /health, or None while it does not answer."""
        health = self.health(name)
        try:
            return set(health["assigned"]) if health is not None else None
        except (KeyError, TypeError):
            return None

    def metrics(self, name: str) -> dict[str, float]:
        """Worker `name`'s Prometheus samples: `name{label=value,...}` (or just `name`) -> value."""
        from prometheus_client.parser import text_string_to_metric_families

        out: dict[str, float] = {}
        for family in text_string_to_metric_families(self._get(name, "/metrics", 10).decode()):
            for s in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                key = f"{s.name}{{{labels}}}" if labels else s.name
                out[key] = out.get(key, 0.0) + s.value
        return out

    def metric(self, name: str, metric: str) -> float:
        """The sum of one metric's samples (all labels) on worker `name`."""
        return sum(v for k, v in self.metrics(name).items() if k.split("{", 1)[0] == metric)

    def metrics_total(self) -> dict[str, float]:
        """Prometheus samples summed over the workers that answer."""
        out: dict[str, float] = {}
        for name in self.workers:
            try:
                samples = self.metrics(name)
            except OSError:
                continue
            for key, value in samples.items():
                out[key] = out.get(key, 0.0) + value
        return out

    def _balanced(self, parts: dict[str, set[str] | None]) -> bool:
        held = {name: p for name, p in parts.items() if p}
        if len(held) != len(parts):
            return False
        source = self.topic("pages.fetched")
        wanted = {f"{self.topic(t)}:{p}" for t in BALANCED_TOPICS for p in range(self.partitions)}
        fetched = {name: [a for a in p if a.rsplit(":", 1)[0] == source] for name, p in held.items()}
        flat = [a for owned in fetched.values() for a in owned]
        return (wanted <= set().union(*held.values()) and len(flat) == len(set(flat)) == self.partitions
                and all(fetched.values()))

    def wait_balanced(self, names: list[str] | None = None, *, stable_s: float = 5.0,
                      timeout_s: float = 180.0) -> float:
        """Waits until the workers (default: all) have settled on an assignment and returns the seconds
        it took: every worker answers /health and holds partitions of pages.fetched, each of those is
        held by exactly one worker, together they hold every partition of the internal topics, and the
        assignment has not changed for `stable_s`. (Publishing into a rebalance is what the kill test is
        for.)"""
        names = list(self.workers) if names is None else names
        t0 = time.monotonic()
        stable_since, last = 0.0, None
        parts: dict[str, set[str] | None] = {}
        while time.monotonic() - t0 < timeout_s:
            self.check_alive()
            parts = {name: self.assignment(name) for name in names}
            if self._balanced(parts):
                if parts != last:
                    stable_since, last = time.monotonic(), parts
                elif time.monotonic() - stable_since >= stable_s:
                    return time.monotonic() - t0
            else:
                last = None
            time.sleep(0.5)
        raise ClusterError(f"workers {names} did not settle on an assignment in {timeout_s:.0f} s: "
                           f"{ {n: sorted(p) if p else p for n, p in parts.items()} }\n{self.log_tail()}")

    # --- publishing and reading back --------------------------------------------------------------------

    def publish(self, events: Iterable[bytes | Decision], *, keys: Iterable[bytes | None] | None = None) -> int:
        """Sends events to pages.fetched, each keyed by its `keys` entry, else by its URL when it is a
        dict with one (as `neardup publish` does); returns how many, once all are delivered."""
        from confluent_kafka import Producer

        producer = Producer({**self.settings.confluent_config(), "linger.ms": 10, "message.max.bytes": 20_000_000})
        key_list = list(keys) if keys is not None else None
        topic = self.topic("pages.fetched")
        n = 0
        for i, event in enumerate(events):
            raw = event if isinstance(event, bytes) else orjson.dumps(event)
            if key_list is not None:
                key = key_list[i]
            else:
                url = event.get("url") if isinstance(event, dict) else None
                key = url.encode() if isinstance(url, str) else None
            producer.produce(topic, value=raw, key=key)
            producer.poll(0)
            n += 1
        left = producer.flush(60)
        if left:
            raise ClusterError(f"{left} of {n} events still undelivered to {topic} after 60 s")
        return n

    def follow(self, topic: str, on_record: Callable[[Record], None], done: Callable[[], bool], *,
               settle_s: float = 3.0, timeout_s: float = 360.0, every: Callable[[], None] | None = None) -> None:
        """Reads a topic of the app from its start (every partition, no consumer group), handing each
        record with a value to `on_record`, until `done()` holds and nothing new came for `settle_s`.

        After each batch: `every()` (the caller's progress and checks), then `done()`, then the workers
        (`WorkerExited` when one ended). `ClusterError` after `timeout_s`."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

        name = self.topic(topic)
        consumer = Consumer({**self.settings.confluent_config(), "group.id": f"devcluster-{uuid.uuid4()}",
                             "enable.auto.commit": False, "fetch.wait.max.ms": 50})
        count = 0
        try:
            meta = consumer.list_topics(name, timeout=20).topics.get(name)
            if meta is None or meta.error is not None:
                raise ClusterError(f"topic {name} is not on {self.bootstrap}: {meta.error if meta else 'absent'}")
            consumer.assign([TopicPartition(name, p, OFFSET_BEGINNING) for p in meta.partitions])
            deadline = time.monotonic() + timeout_s
            last_new = time.monotonic()
            while time.monotonic() < deadline:
                for msg in consumer.consume(1000, timeout=0.2):
                    error = msg.error()
                    if error is not None:
                        if error.code() != KafkaError._PARTITION_EOF:
                            raise ClusterError(f"reading {name}: {error}")
                        continue
                    value = msg.value()
                    if value is not None:
                        on_record(Record(msg.key(), value, msg.timestamp()[1], msg.partition() or 0,
                                         msg.offset() or 0))
                        count += 1
                    last_new = time.monotonic()
                if every is not None:
                    every()
                if done() and time.monotonic() - last_new >= settle_s:
                    return
                self.check_alive()
        finally:
            consumer.close()
        raise ClusterError(f"timed out after {timeout_s:.0f} s reading {name}: {count} messages\n"
                           f"{self.diagnose()}\n{self.log_tail()}")

    def read_until(self, topic: str, done: Callable[[list[Decision]], bool], *, timeout_s: float = 360.0,
                   settle_s: float = 3.0) -> list[Decision]:
        """The messages of a topic of the app (JSON values, each with its record key under `_key`) from
        its start, once `done(messages)` holds and nothing new came for `settle_s`."""
        messages: list[Decision] = []
        try:
            self.follow(topic, lambda r: messages.append(r.json() | {"_key": r.key}), lambda: done(messages),
                        settle_s=settle_s, timeout_s=timeout_s)
        except ClusterError as exc:
            why_not = getattr(done, "why_not", None)
            if why_not is None:
                raise
            raise ClusterError(f"not done: {why_not(messages)}\n{exc}") from None
        return messages
