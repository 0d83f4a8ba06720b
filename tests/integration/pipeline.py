"""Helpers of the pipeline tests: topics, worker processes, publishing, and reading decisions back."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from confluent_kafka import Consumer, Producer

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import fingerprint_event
from neardup_core.testing.oracle import oracle_from_fetches
from streams.admin import create_topics
from streams.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Pipeline:
    """One app (topic prefix, app id) on the test broker, and its worker processes."""

    bootstrap: str
    prefix: str
    workdir: Path
    partitions: int = 8
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)

    def env(self, name: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
        env.update({
            "NEARDUP_BROKER": self.bootstrap,
            "NEARDUP_TOPIC_PREFIX": f"{self.prefix}.",
            "NEARDUP_APP_ID": self.prefix,
            "NEARDUP_DATA_DIR": str(self.workdir / f"data-{name}"),
            "NEARDUP_WEB_PORT": str(self.ports.setdefault(name, free_port())),
            "NEARDUP_MAX_BODY_BYTES": "200000",
            "NEARDUP_SESSION_TIMEOUT_S": "20",
            "NEARDUP_TICK_INTERVAL_S": "1",
            "NEARDUP_DECISION_TIMEOUT_S": "120",
            "NEARDUP_EXTRACT_PROCESSES": "1",
            "PYTHONUNBUFFERED": "1",
        })
        return env

    @property
    def settings(self) -> Settings:
        return Settings(broker=self.bootstrap, topic_prefix=f"{self.prefix}.", app_id=self.prefix)

    def create_topics(self) -> None:
        create_topics(self.settings, self.partitions)

    def start_worker(self, name: str) -> subprocess.Popen:
        log = self.workdir / f"worker-{name}.log"
        self.logs[name] = log
        fh = log.open("ab")
        proc = subprocess.Popen([sys.executable, "-m", "streams.cli", "worker", "-l", "info"], cwd=ROOT,
                                env=self.env(name), stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        self.workers[name] = proc
        return proc

    def kill_worker(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.workers.pop(name)
        os.killpg(proc.pid, sig)  # the worker and its extraction pool
        proc.wait(timeout=60)

    def stop_all(self) -> None:
        for name in list(self.workers):
            proc = self.workers[name]
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=30)
            self.workers.pop(name)

    def metric(self, name: str, metric: str) -> float:
        """The sum of a Prometheus metric's samples on one worker's /metrics page."""
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[name]}/metrics", timeout=10) as resp:
            text = resp.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(metric) and not line.startswith("#"))

    def assignment(self, name: str) -> set[str] | None:
        """The topic partitions a worker reports on /health, or None while it does not answer."""
        import json
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[name]}/health", timeout=5) as resp:
                return set(json.loads(resp.read())["assigned"])
        except (OSError, ValueError, KeyError):
            return None

    def wait_balanced(self, names: list[str], *, stable_s: float = 5.0, timeout_s: float = 180.0) -> None:
        """Until every worker has partitions, together they hold every partition of the internal
        topics, and the assignment has not changed for `stable_s`: publishing into a rebalance is
        what the kill test is for."""
        topics = [f"{self.prefix}.{t}" for t in ("pages.fetched", "neardup.gather", "neardup.probes")]
        wanted = {f"{t}:{p}" for t in topics for p in range(self.partitions)}
        deadline, stable_since, last = time.monotonic() + timeout_s, None, None
        while time.monotonic() < deadline:
            parts = [self.assignment(n) for n in names]
            if all(parts) and wanted <= set().union(*parts):
                if parts != last:
                    stable_since, last = time.monotonic(), parts
                elif time.monotonic() - stable_since >= stable_s:
                    return
            else:
                stable_since, last = None, None
            time.sleep(0.5)
        raise AssertionError(f"workers {names} did not settle on an assignment\n{self.log_tail()}")

    def log_tail(self, lines: int = 60) -> str:
        out = []
        for name, path in self.logs.items():
            text = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- worker {name} ({path}) ---\n" + "\n".join(text))
        return "\n".join(out)

    def publish(self, events: Iterable[bytes | dict], *, keys: Iterable[bytes | None] | None = None) -> int:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 10, "message.max.bytes": 20_000_000})
        n = 0
        key_list = list(keys) if keys is not None else None
        for i, event in enumerate(events):
            raw = event if isinstance(event, bytes) else orjson.dumps(event)
            if key_list is not None:
                key = key_list[i]
            else:
                key = event["url"].encode() if isinstance(event, dict) and isinstance(event.get("url"), str) else None
            producer.produce(f"{self.prefix}.pages.fetched", value=raw, key=key)
            producer.poll(0)
            n += 1
        assert producer.flush(60) == 0
        return n

    def consumer(self, topic: str) -> Consumer:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"test-{uuid.uuid4()}",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe([f"{self.prefix}.{topic}"])
        return c

    def read_until(self, topic: str, done: callable, *, timeout_s: float = 360, settle_s: float = 3.0,
                   ) -> list[dict]:
        """Messages of a topic until `done(messages)` holds and nothing new came for `settle_s`."""
        consumer = self.consumer(topic)
        messages: list[dict] = []
        deadline = time.monotonic() + timeout_s
        last = time.monotonic()
        try:
            while time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error() and msg.value() is not None:
                    messages.append(orjson.loads(msg.value()) | {"_key": msg.key()})
                    last = time.monotonic()
                    continue
                if done(messages) and time.monotonic() - last >= settle_s:
                    return messages
                for name, proc in self.workers.items():
                    if proc.poll() is not None:
                        raise AssertionError(f"worker {name} exited with {proc.returncode}\n{self.log_tail()}")
        finally:
            consumer.close()
        raise AssertionError(f"timed out reading {topic}: {len(messages)} messages\n{self.log_tail()}")


def latest_by_url(decisions: list[dict]) -> dict[str, dict]:
    """The decision with the highest revision per URL (ties: the later message)."""
    out: dict[str, dict] = {}
    for d in decisions:
        if d["url"] not in out or d["revision"] >= out[d["url"]]["revision"]:
            out[d["url"]] = d
    return out


def all_complete(urls: set[str]) -> callable:
    def done(decisions: list[dict]) -> bool:
        latest = latest_by_url(decisions)
        return urls <= set(latest) and all(latest[u]["complete"] for u in urls)
    return done


def fetches_of(events: Iterable[dict]) -> list[Fetch]:
    """The fingerprinted pages of the good events (the rejected ones are left out)."""
    return [f for e in events if isinstance(f := fingerprint_event(orjson.dumps(e)), Fetch)]


def oracle_of(events: list[dict], k: int = 3) -> dict[str, tuple]:
    return oracle_from_fetches(fetches_of(events), k)


def verdicts(latest: dict[str, dict]) -> dict[str, tuple]:
    return {u: (d["verdict"], d["duplicate_of"], d["distance"]) for u, d in latest.items()}
