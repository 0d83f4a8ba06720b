"""`neardup demo`: a local Kafka, a worker, a generated crawl; decisions and host signals printed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from neardup_core.ingest.files import RawEvent
from neardup_core.testing.synthetic import generate_crawl
from streams.admin import create_topics
from streams.cli.publish import publish_events
from streams.cli.tail import print_table, read_topic
from streams.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
LOCAL_KAFKA = ROOT / "deploy" / "local-kafka"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_local_kafka(workdir: Path, console: Console) -> str:
    if not LOCAL_KAFKA.exists():
        raise SystemExit(f"{LOCAL_KAFKA} is missing: run the demo from a checkout, or set NEARDUP_BROKER")
    console.print("[bold]starting a local Kafka broker[/] (the first run fetches it with Maven)")
    result = subprocess.run([str(LOCAL_KAFKA), "start", "--port", "0", "--dir", str(workdir)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise SystemExit("deploy/local-kafka start failed (its log tail is above)")
    return result.stdout.strip().splitlines()[-1]


def run_demo(base: Settings, *, keep: bool = False) -> int:
    console = Console(width=None if sys.stdout.isatty() else 200)
    workdir = Path(tempfile.mkdtemp(prefix="neardup-demo-"))
    started_broker = not os.environ.get("NEARDUP_BROKER")
    broker = start_local_kafka(workdir / "kafka", console) if started_broker else base.broker
    run = f"demo{int(time.time())}{uuid.uuid4().hex[:4]}"
    prefix = base.topic_prefix or f"{run}."
    settings = Settings(broker=broker, topic_prefix=prefix, app_id=run, data_dir=workdir / "worker",
                        k=base.k, tables=base.tables)
    worker: subprocess.Popen | None = None
    try:
        console.print(f"broker {broker}; topics prefixed {prefix!r}; scratch dir {workdir}")
        create_topics(settings, 4)
        env = {**os.environ, "NEARDUP_BROKER": broker, "NEARDUP_TOPIC_PREFIX": prefix, "NEARDUP_APP_ID": run,
               "NEARDUP_DATA_DIR": str(settings.data_dir), "NEARDUP_WEB_PORT": str(_free_port()),
               "NEARDUP_TICK_INTERVAL_S": "1", "PYTHONUNBUFFERED": "1"}
        log = (workdir / "worker.log").open("wb")
        worker = subprocess.Popen([sys.executable, "-m", "streams.cli", "worker", "-l", "warning"], env=env,
                                  stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
        console.print(f"worker started (pid {worker.pid}, log {workdir / 'worker.log'})")
        events = generate_crawl()
        import orjson

        raw = [RawEvent(orjson.dumps(e), "generated", i, e["url"].encode()) for i, e in enumerate(events)]
        result = publish_events(settings, raw)
        if result.failed:
            console.print(f"[red]{result.failed} events failed to publish: {result.errors[:3]}")
            return 1
        urls = {e["url"] for e in events}
        latest = wait_for_decisions(settings, urls, worker, console)
        if latest is None:
            console.print(f"[red]the worker did not decide every page; see {workdir / 'worker.log'}")
            return 1
        print_summary(latest, console)
        signals: dict[str, dict] = {}
        for _, value in read_topic(settings, "hosts", idle_s=3):
            # per host, the latest overall signal if there is one, else its latest window's
            kept = signals.get(value["host"])
            if kept is None or value["window_start"] is None or kept["window_start"] is not None:
                signals[value["host"]] = value
        print_table("hosts", sorted(signals.values(), key=lambda s: -s["penalty"]), console)
        console.print("penalty rises with the share of a host's pages that duplicate its own pages; "
                      "url_rules are learned normalisations for the frontier")
        return 0
    finally:
        if worker is not None and worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
        if started_broker and not keep:
            subprocess.run([str(LOCAL_KAFKA), "stop", "--dir", str(workdir / "kafka")], stdin=subprocess.DEVNULL,
                           capture_output=True)
            console.print("stopped the worker and the local broker")


def wait_for_decisions(settings: Settings, urls: set[str], worker: subprocess.Popen, console: Console,
                       timeout_s: float = 300) -> dict[str, dict] | None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    latest: dict[str, dict] = {}
    deadline = time.monotonic() + timeout_s
    with Progress(TextColumn("[bold]decisions"), BarColumn(), MofNCompleteColumn(), console=console) as bar:
        task = bar.add_task("decisions", total=len(urls))
        for _, value in read_topic(settings, "decisions", idle_s=20):
            if value["url"] not in latest or value["revision"] >= latest[value["url"]]["revision"]:
                latest[value["url"]] = value
            done = sum(1 for u in urls if u in latest and latest[u]["complete"])
            bar.update(task, completed=done)
            if done == len(urls) or time.monotonic() > deadline or worker.poll() is not None:
                break
    if not all(u in latest and latest[u]["complete"] for u in urls):
        return None
    return latest


def print_summary(latest: dict[str, dict], console: Console) -> None:
    counts: Counter[tuple[str, str]] = Counter((d["host"], d["verdict"]) for d in latest.values())
    verdicts = ["unique", "exact_duplicate", "near_duplicate", "skipped"]
    table = Table(title="dedup.decisions: latest decision per URL, by host")
    table.add_column("host")
    for v in verdicts:
        table.add_column(v, justify="right")
    for host in sorted({h for h, _ in counts}):
        table.add_row(host, *[str(counts.get((host, v), 0)) for v in verdicts])
    console.print(table)
    examples = [d for d in latest.values() if d["verdict"] != "unique"][:5]
    for d in examples:
        console.print(f"  {d['url']} -> {d['verdict']} of {d['duplicate_of']} ({d['reason']})")
