"""The soak: a steady stream of pages into three workers while a killer stops them, and the broker once.

Used by `tests/reliability/test_soak.py` (a short run in CI) and `bench/bench_soak.py` (a long run whose
numbers are recorded). Modelled on faust's own `tests/stress` killer (a loop that sleeps a random time
in a range, then signals a worker with a signal picked from a list, while producers keep writing):

- a publisher thread sends the generated crawl (`generate_crawl`, shuffled: duplicates, near
  duplicates, syndicated copies, a URL trap and recrawls, in any order) to `pages.fetched` at a steady
  rate with an idempotent confluent-kafka producer whose deliveries wait out a broker outage (librdkafka
  retries until `message.timeout.ms`), so every event is delivered exactly once or reported failed;
- a follower thread reads `dedup.decisions` from its start (no consumer group) all along, also across
  the outage;
- the killer (the calling thread): after the group settled on every worker and the pipeline caught up
  (the oldest page without a complete decision is at most `late_s` old), it sleeps a random
  `interval_s`, then signals a random worker's main process with the next of `signals` (they take turns,
  from a random start, so a short run sees each), waits until it has exited, starts it again after
  `restart_after_s`, and waits for the group to settle; its `broker_turn`-th disturbance stops the
  broker instead (`deploy/local-kafka stop`) and starts it again on the same port and dir with its data
  after `broker_down_s`. It makes `disturbances` of them (then publishing goes on for `tail_s`), or as
  many as fit in `duration_s`;
- at the end (all published, no more disturbances): every delivered URL has a complete decision (or
  `drain_timeout_s` passed), G1 and G2 against the brute-force oracle, and every worker alive in a
  settled group. A worker that exits on its own ends the soak (`WorkerExited`).

**Time to recover** from a disturbance (a kill and its restart, or the broker's stop and start), from
the pages' own timestamps: a page's decision latency is the time from its record's timestamp in
`pages.fetched` to that of the first complete decision of its URL (the first fetch of each URL only:
a recrawl's URL already has one); a page is *late* when that is more than `late_s`. The disturbance's
window runs from its start to `late_s` before the next one (or to the end); recovery is the time from
its start to the publication of the first page of the window from which on every page of the window
is on time. 0 when none was late; None when the window's last page was still late (not recovered
before the next disturbance).
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import random
import signal
import statistics
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from neardup_core.hosts.urls import url_identity
from neardup_core.testing.oracle import rule_problems
from neardup_core.testing.synthetic import generate_crawl
from streams.dev import (
    Broker,
    Cluster,
    ClusterError,
    Decision,
    all_complete,
    latest_by_url,
    restart_broker,
    stop_broker,
)
from tests.integration.checks import LSH, K, fetches_of, verdicts

LOG = logging.getLogger("soak.clients")
"""The soak's clients' librdkafka log and the follower's notes: a broker outage makes a line per reconnect
attempt, so they go to `soak-clients.log` in the cluster's workdir, not to standard error or pytest's log."""
LOG.propagate = False


@dataclass(frozen=True)
class SoakPlan:
    """What one soak does; the defaults are CI's short run."""

    disturbances: int = 3
    """How many the killer makes (kills, and the broker's once); 0: as many as fit in `duration_s`."""
    duration_s: float = 0.0
    """With `disturbances` 0: publishing (and the killer) stop after this long."""
    tail_s: float = 15.0
    """With `disturbances`: publishing goes on this long after the last one settled."""
    broker_turn: int = 1
    """Which disturbance (0-based) is the broker's stop and start; the others are kills."""
    scale: int = 8
    """Of the generated crawl (about 340 events per unit); publishing also ends when it runs out."""
    seed: int = 13
    rate: float = 8.0
    """Pages per second sent to pages.fetched."""
    workers: tuple[str, ...] = ("a", "b", "c")
    interval_s: tuple[float, float] = (20.0, 60.0)
    """The killer sleeps a random time in this range between the cluster's recovery and the next kill."""
    signals: tuple[signal.Signals, ...] = (signal.SIGKILL, signal.SIGTERM)
    restart_after_s: float = 3.0
    broker_down_s: float = 10.0
    late_s: float = 10.0
    healthy_timeout_s: float = 240.0
    """At most this long the killer waits for the pipeline to catch up before the next disturbance."""
    settle_timeout_s: float = 300.0
    drain_timeout_s: float = 600.0
    killer_seed: int = 1

    def events(self) -> list[dict[str, Any]]:
        """The generated crawl, shuffled (any arrival order), cut to what `duration_s` publishes."""
        events = generate_crawl(seed=self.seed, scale=self.scale)
        random.Random(self.seed).shuffle(events)
        if not self.disturbances and self.duration_s:
            events = events[:int(self.duration_s * self.rate) + 1]
        return events


@dataclass
class Disturbance:
    """One kill and restart of a worker, or the broker's stop and start (times: epoch seconds)."""

    kind: str
    """SIGKILL, SIGTERM or broker."""
    worker: str | None
    at: float
    exited_at: float = 0.0
    """The worker's main process ended / the broker stopped."""
    back_at: float = 0.0
    """The worker was started again / the broker serves again."""
    settled_at: float = 0.0
    """The group settled on every worker again."""
    caught_up_s: float | None = None
    """How long after it settled the pipeline had caught up (None: not within `healthy_timeout_s`)."""
    recovery_s: float | None = None
    window_pages: int = 0
    late_pages: int = 0

    def describe(self) -> str:
        rec = "not recovered before the next" if self.recovery_s is None else f"recovered in {self.recovery_s:.1f} s"
        who = f" {self.worker}" if self.worker else ""
        return (f"{self.kind}{who}: down {self.exited_at - self.at:.1f} s, back after {self.back_at - self.at:.1f} s, "
                f"settled after {self.settled_at - self.at:.1f} s; {rec} ({self.late_pages} of "
                f"{self.window_pages} pages of its window late)")


@dataclass
class SoakResult:
    plan: SoakPlan
    events: list[dict[str, Any]]
    """The delivered events (all of them, unless `delivery_errors`)."""
    delivery_errors: list[str]
    disturbances: list[Disturbance]
    latencies: list[float]
    """Decision latency (s) of every first fetch of a URL that got a complete decision."""
    lost: list[str]
    """Delivered URLs without a complete latest decision at the end."""
    g2_problems: list[str]
    decisions: int
    publish_s: float
    drain_s: float
    worker_counters: dict[str, float] = field(default_factory=dict)
    follower_reassigned: int = 0
    """How often the soak's own decisions reader had to be assigned again (see `DecisionFollower`)."""

    @property
    def kills(self) -> list[Disturbance]:
        return [d for d in self.disturbances if d.kind != "broker"]

    def recoveries(self) -> list[float | None]:
        return [d.recovery_s for d in self.disturbances]


class Publisher(threading.Thread):
    """Sends `events` to pages.fetched at `rate` per second, keyed by URL; `published[i]` is the record
    timestamp (epoch s) of delivered event i, `errors` what librdkafka gave up on."""

    def __init__(self, cluster: Cluster, events: list[dict[str, Any]], rate: float) -> None:
        super().__init__(name="soak-publisher", daemon=True)
        self.cluster, self.events, self.rate = cluster, events, rate
        self.published: dict[int, float] = {}
        self.errors: list[str] = []
        self.sent = 0
        self.failure: BaseException | None = None
        self.stop = threading.Event()
        """Set: send no more events (those sent are still delivered)."""

    def run(self) -> None:
        from confluent_kafka import Producer

        try:
            producer = Producer({**self.cluster.settings.confluent_config(), "enable.idempotence": True,
                                 "message.timeout.ms": 900_000, "linger.ms": 10, "message.max.bytes": 20_000_000,
                                 "logger": LOG})
            topic = self.cluster.topic("pages.fetched")
            t0 = time.monotonic()
            for i, event in enumerate(self.events):
                # poll() returns as soon as it served a delivery report: wait out the rest
                while (wait := t0 + i / self.rate - time.monotonic()) > 0:
                    producer.poll(min(wait, 0.1))
                if self.stop.is_set():
                    break
                while True:
                    try:
                        producer.produce(topic, value=orjson.dumps(event), key=event["url"].encode(),
                                         on_delivery=lambda err, msg, i=i: self._delivered(i, err, msg))
                        break
                    except BufferError:  # the local queue is full (a long outage): let it drain
                        producer.poll(0.5)
                self.sent += 1
                producer.poll(0)
            left = producer.flush(900)
            if left:
                self.errors.append(f"{left} events still undelivered 900 s after the last was sent")
        except BaseException as exc:  # the killer thread reports it
            self.failure = exc

    def _delivered(self, i: int, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(f"event {i} ({self.events[i]['url']}): {err}")
        else:
            self.published[i] = msg.timestamp()[1] / 1000


class DecisionFollower(threading.Thread):
    """Reads dedup.decisions from its start until stopped: every decision, and per record key (the URL's
    identity) the timestamp (epoch s) of its first complete decision."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(name="soak-follower", daemon=True)
        self.cluster = cluster
        self.lock = threading.Lock()
        self.decisions: list[Decision] = []
        self.first_complete: dict[bytes, float] = {}
        self.stop = threading.Event()
        self.failure: BaseException | None = None
        self.reassigned = 0

    STUCK_S = 15.0
    """With nothing read for this long while a partition has records past its position, the follower
    assigns itself again from where it is (it saw a client stop fetching after a broker restart)."""

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

        try:
            name = self.cluster.topic("dedup.decisions")

            def consumer_at(offsets: dict[int, int]) -> Any:
                consumer = Consumer({**self.cluster.settings.confluent_config(),
                                     "group.id": f"soak-{uuid.uuid4()}", "enable.auto.commit": False,
                                     "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100, "logger": LOG})
                consumer.assign([TopicPartition(name, p, o) for p, o in sorted(offsets.items())])
                return consumer

            probe = Consumer({**self.cluster.settings.confluent_config(), "group.id": f"soak-{uuid.uuid4()}",
                              "logger": LOG})
            meta = probe.list_topics(name, timeout=30).topics[name]
            position = {p: OFFSET_BEGINNING for p in meta.partitions}
            consumer = consumer_at(position)
            last_read = checked = time.monotonic()
            try:
                while not self.stop.is_set():
                    for msg in consumer.consume(1000, timeout=0.5):
                        error, value = msg.error(), msg.value()
                        if error is not None:
                            if error.code() != KafkaError._PARTITION_EOF:
                                LOG.warning("follower: %s", error)
                            continue
                        if value is None:
                            continue
                        position[msg.partition() or 0] = (msg.offset() or 0) + 1
                        last_read = time.monotonic()
                        decision = orjson.loads(value)
                        key, ts = msg.key() or b"", msg.timestamp()[1] / 1000
                        with self.lock:
                            self.decisions.append(decision)
                            if decision["complete"] and key not in self.first_complete:
                                self.first_complete[key] = ts
                    now = time.monotonic()
                    if now - last_read >= self.STUCK_S and now - checked >= self.STUCK_S:
                        checked = now
                        behind = {}
                        for p, at in position.items():
                            with contextlib.suppress(Exception):  # the broker away: try again later
                                high = probe.get_watermark_offsets(TopicPartition(name, p), timeout=5,
                                                                   cached=False)[1]
                                if high > max(at, 0):
                                    behind[p] = (at, high)
                        if behind:
                            self.reassigned += 1
                            LOG.warning("follower: nothing read for %.0f s with records behind %s: assigned again",
                                        now - last_read, behind)
                            consumer.close()
                            consumer = consumer_at(position)
            finally:
                consumer.close()
                probe.close()
        except BaseException as exc:
            self.failure = exc

    def snapshot(self) -> list[Decision]:
        with self.lock:
            return list(self.decisions)


def recovery(disturbances: list[Disturbance], pages: list[tuple[float, float | None]], late_s: float,
             end: float) -> None:
    """Fills in each disturbance's recovery (module docstring) from `pages`: (published, decided) per
    first fetch of a URL, sorted by publication time; `decided` None when it never was."""
    times = [p for p, _ in pages]
    for n, d in enumerate(disturbances):
        stop = disturbances[n + 1].at - late_s if n + 1 < len(disturbances) else end
        window = pages[bisect.bisect_left(times, d.at):bisect.bisect_left(times, stop)]
        late = [j for j, (p, dec) in enumerate(window) if dec is None or dec - p > late_s]
        d.window_pages, d.late_pages = len(window), len(late)
        if not late:
            d.recovery_s = 0.0
        elif late[-1] + 1 < len(window):
            d.recovery_s = window[late[-1] + 1][0] - d.at
        else:
            d.recovery_s = None


class Soak:
    """One soak run on `cluster` (its topics created) and the local `broker` it runs on."""

    def __init__(self, cluster: Cluster, broker: Broker, plan: SoakPlan,
                 say: Callable[[str], None] = print) -> None:
        if not broker.local:
            raise ClusterError("the soak restarts its broker: it needs one started by deploy/local-kafka")
        self.cluster, self.broker, self.plan, self.say = cluster, broker, plan, say
        self.rng = random.Random(plan.killer_seed)
        self.events = plan.events()
        self.keys = [url_identity(e["url"]).encode() for e in self.events]
        firsts: dict[bytes, int] = {}
        for i, key in enumerate(self.keys):
            firsts.setdefault(key, i)
        self.first_fetches = sorted(firsts.values())
        self.publisher = Publisher(cluster, self.events, plan.rate)
        self.follower = DecisionFollower(cluster)
        self.disturbances: list[Disturbance] = []
        self.t0 = time.time()
        cluster.workdir.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(cluster.workdir / "soak-clients.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        LOG.handlers[:] = [handler]
        LOG.setLevel(logging.INFO)

    def log(self, msg: str) -> None:
        self.say(f"[soak {time.time() - self.t0:6.1f} s] {msg}")

    # --- while it runs ---------------------------------------------------------------------------------

    def check(self) -> None:
        """The threads and the workers are alive (a worker that exits on its own ends the soak)."""
        for thread in (self.publisher, self.follower):
            if thread.failure is not None:
                raise ClusterError(f"the soak's {thread.name} failed: {thread.failure!r}")
        self.cluster.check_alive()

    def sleep(self, seconds: float) -> bool:
        """Sleeps, checking; False when publishing ended first."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.check()
            if not self.publisher.is_alive():
                return False
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        return True

    def oldest_pending_s(self) -> float:
        """Age of the oldest delivered first fetch of a URL without a complete decision (0: none)."""
        published = dict(self.publisher.published)
        with self.follower.lock:
            done = set(self.follower.first_complete)
        pending = [published[i] for i in self.first_fetches if i in published and self.keys[i] not in done]
        return time.time() - min(pending) if pending else 0.0

    def wait_caught_up(self, d: Disturbance) -> None:
        t = time.monotonic()
        while time.monotonic() - t < self.plan.healthy_timeout_s:
            self.check()
            if self.oldest_pending_s() <= self.plan.late_s:
                d.caught_up_s = time.monotonic() - t
                return
            time.sleep(0.5)
        self.log(f"not caught up {self.plan.healthy_timeout_s:.0f} s after {d.kind}: oldest page without a "
                 f"decision {self.oldest_pending_s():.0f} s old; lag {self.cluster.group_lag()}")

    def settle(self, d: Disturbance) -> None:
        self.cluster.wait_balanced(stable_s=3.0, timeout_s=self.plan.settle_timeout_s)
        d.settled_at = time.time()
        self.wait_caught_up(d)
        caught = "not caught up" if d.caught_up_s is None else f"caught up {d.caught_up_s:.1f} s later"
        self.log(f"{d.kind}{' ' + d.worker if d.worker else ''}: settled after {d.settled_at - d.at:.1f} s, {caught}")

    def kill(self, sig: signal.Signals) -> Disturbance:
        """Signals a random worker's main process (its extraction pool must follow on its own), waits for
        it to exit, SIGKILLs what is left of its process group, and starts it again."""
        name = self.rng.choice(sorted(self.cluster.workers))
        proc = self.cluster.workers.pop(name)
        d = Disturbance(sig.name, name, time.time())
        self.log(f"{sig.name} to worker {name} (pid {proc.pid})")
        os.kill(proc.pid, sig)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.log(f"worker {name} still running 120 s after {sig.name}: SIGKILL")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        d.exited_at = time.time()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        self.log(f"worker {name} exited with {proc.returncode} after {d.exited_at - d.at:.1f} s")
        time.sleep(self.plan.restart_after_s)
        self.cluster.start_worker(name)
        d.back_at = time.time()
        return d

    def broker_outage(self) -> Disturbance:
        d = Disturbance("broker", None, time.time())
        self.log(f"stopping the broker {self.broker.bootstrap}")
        assert self.broker.dir is not None
        stop_broker(self.broker.dir)
        d.exited_at = time.time()
        self.log(f"broker stopped after {d.exited_at - d.at:.1f} s; down for {self.plan.broker_down_s:.0f} s")
        self.broker = restart_broker(self.broker, down_s=self.plan.broker_down_s)
        d.back_at = time.time()
        self.log(f"broker serves again on {self.broker.bootstrap}, {d.back_at - d.at:.1f} s after the stop")
        return d

    # --- the run ---------------------------------------------------------------------------------------

    def run(self) -> SoakResult:
        plan = self.plan
        self.log(f"up to {len(self.events)} events at {plan.rate:g}/s, workers {plan.workers}, "
                 f"{plan.disturbances or 'a ' + format(plan.duration_s, '.0f') + ' s run of'} disturbances")
        for name in plan.workers:
            self.cluster.start_worker(name)
        self.cluster.wait_balanced(timeout_s=plan.settle_timeout_s)
        self.log("group settled; publishing")
        self.follower.start()
        start = time.time()
        self.publisher.start()
        signals = list(plan.signals)
        turn = self.rng.randrange(len(signals))
        try:
            while not plan.disturbances or len(self.disturbances) < plan.disturbances:
                if not self.sleep(self.rng.uniform(*plan.interval_s)):
                    break
                if plan.duration_s and not plan.disturbances and time.time() - start > plan.duration_s:
                    break
                if len(self.disturbances) == plan.broker_turn:
                    d = self.broker_outage()
                else:
                    d = self.kill(signals[turn % len(signals)])
                    turn += 1
                self.disturbances.append(d)
                self.settle(d)
            if plan.disturbances:
                self.sleep(plan.tail_s)
                self.publisher.stop.set()
            self.publisher.join()
            publish_s = time.time() - start
            self.log(f"published {self.publisher.sent} events in {publish_s:.0f} s; "
                     f"{len(self.publisher.published)} delivered, {len(self.publisher.errors)} failed")
            return self.finish(start, publish_s)
        finally:
            self.follower.stop.set()
            self.follower.join(timeout=30)
            for handler in LOG.handlers:
                handler.close()

    def finish(self, start: float, publish_s: float) -> SoakResult:
        plan = self.plan
        delivered = [self.events[i] for i in sorted(self.publisher.published)]
        urls = {e["url"] for e in delivered}
        done = all_complete(urls)
        t = time.monotonic()
        while time.monotonic() - t < plan.drain_timeout_s and not done(self.follower.snapshot()):
            self.check()
            time.sleep(1.0)
        time.sleep(3.0)  # whatever revisions are still on their way
        decisions = self.follower.snapshot()
        drain_s = time.monotonic() - t
        if not done(decisions):
            self.log(f"not every URL decided {plan.drain_timeout_s:.0f} s after publishing: {done.why_not(decisions)}\n"
                     f"{self.cluster.diagnose()}")
        self.log(f"drained in {drain_s:.0f} s: {len(decisions)} decision records")
        self.check()
        self.cluster.wait_balanced(stable_s=3.0, timeout_s=plan.settle_timeout_s)  # no worker left dead
        latest = latest_by_url(decisions)
        lost = sorted(u for u in urls if u not in latest or not latest[u]["complete"])
        problems = rule_problems(verdicts({u: d for u, d in latest.items() if u in urls}), fetches_of(delivered), K,
                                 lsh=LSH)
        problems += [f"{u}: decided, but never published" for u in set(latest) - urls]
        with self.follower.lock:
            first = dict(self.follower.first_complete)
        pages = sorted((self.publisher.published[i], first.get(self.keys[i])) for i in self.first_fetches
                       if i in self.publisher.published)
        recovery(self.disturbances, pages, plan.late_s, end=time.time())
        counters = self.cluster.metrics_total()
        shown = ("neardup_reseeks_total", "neardup_pages_total", "neardup_decisions_total")
        return SoakResult(plan, delivered, list(self.publisher.errors), self.disturbances,
                          [dec - p for p, dec in pages if dec is not None], lost, problems, len(decisions),
                          publish_s, drain_s,
                          {k: v for k, v in counters.items() if k.split("{", 1)[0] in shown},
                          self.follower.reassigned)


def summary(result: SoakResult) -> list[str]:
    """The run in a few lines: what was done to it and what came out."""
    kills = result.kills
    by_signal = {s: sum(1 for d in kills if d.kind == s) for s in sorted({d.kind for d in kills})}
    rec = [r for r in result.recoveries() if r is not None]
    lat = sorted(result.latencies)
    lines = [f"pages {len(result.events)} ({len({e['url'] for e in result.events})} URLs) at "
             f"{result.plan.rate:g}/s in {result.publish_s:.0f} s, drained in {result.drain_s:.0f} s; "
             f"{result.decisions} decision records",
             f"kills {len(kills)} {by_signal}, restarts {len(kills)}, broker restarts "
             f"{sum(1 for d in result.disturbances if d.kind == 'broker')}",
             f"decisions lost {len(result.lost)}, G2 problems {len(result.g2_problems)}, "
             f"delivery errors {len(result.delivery_errors)}, the soak's reader assigned again "
             f"{result.follower_reassigned} times"]
    if rec:
        lines.append(f"recovery (s): min {min(rec):.1f} median {statistics.median(rec):.1f} max {max(rec):.1f}"
                     f"; not recovered before the next {sum(r is None for r in result.recoveries())}")
    if lat:
        lines.append(f"decision latency (s): p50 {lat[len(lat) // 2]:.2f} p99 {lat[int(len(lat) * 0.99)]:.2f} "
                     f"max {lat[-1]:.1f}")
    lines += [d.describe() for d in result.disturbances]
    return lines
