"""`neardup demo`: a local Kafka, a worker, a generated crawl; decisions and host signals printed."""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from neardup_core.ingest.files import RawEvent
from neardup_core.testing.synthetic import generate_crawl
from streams.cli.publish import publish_events
from streams.cli.tail import print_table, read_topic
from streams.devcluster import (
    Cluster,
    ClusterError,
    Record,
    keep_latest,
    missing_prerequisites,
    start_broker,
    stop_broker,
)
from streams.settings import Settings, is_set


def start_local_kafka(workdir: Path, console: Console) -> str:
    """A broker in `workdir`, the script's progress shown as it comes; a clear exit when it cannot start."""
    problem = missing_prerequisites()
    if problem:
        raise SystemExit(f"{problem}; or set NEARDUP_BROKER")
    console.print("[bold]starting a local Kafka broker[/] (the first run fetches it with Maven)")
    try:
        return start_broker(workdir, echo=True).bootstrap
    except ClusterError:
        raise SystemExit("deploy/local-kafka start failed (its log tail is above)") from None


def run_demo(base: Settings, *, keep: bool = False) -> int:
    console = Console(width=None if sys.stdout.isatty() else 200)
    workdir = Path(tempfile.mkdtemp(prefix="neardup-demo-"))
    started_broker = not is_set("broker")  # the user's broker when NEARDUP_BROKER is set (and valid: `base`)
    broker = start_local_kafka(workdir / "kafka", console) if started_broker else base.broker
    run = f"demo{int(time.time())}{uuid.uuid4().hex[:4]}"
    # the worker runs with the user's NEARDUP_* settings, from the user's working directory
    cluster = Cluster(broker, run, workdir, partitions=4, topic_prefix=base.topic_prefix, inherit=True,
                      log_level="warning", worker_env={"NEARDUP_TICK_INTERVAL_S": "1"})
    prefix = cluster.topic_prefix
    settings = replace(base, broker=broker, topic_prefix=prefix, app_id=run)
    try:
        console.print(f"broker {broker}; topics prefixed {prefix!r}; scratch dir {workdir}")
        try:
            cluster.create_topics()
        except ClusterError as exc:
            raise SystemExit(str(exc)) from None
        worker = cluster.start_worker("1")
        log = cluster.logs["1"]
        console.print(f"worker started (pid {worker.pid}, log {log})")
        events = generate_crawl()
        import orjson

        raw = [RawEvent(orjson.dumps(e), "generated", i, e["url"].encode()) for i, e in enumerate(events)]
        result = publish_events(settings, raw)
        if result.failed:
            console.print(f"[red]{result.failed} events failed to publish: {result.errors[:3]}")
            return 1
        urls = {e["url"] for e in events}
        latest = wait_for_decisions(cluster, urls, console)
        if latest is None:
            console.print(f"[red]the worker did not decide every page; see {log}")
            return 1
        print_summary(latest, console)
        signals: dict[str, dict[str, Any]] = {}
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
        cluster.stop_all()
        if started_broker and not keep:
            stop_broker(workdir / "kafka")
            console.print("stopped the worker and the local broker")


def wait_for_decisions(cluster: Cluster, urls: set[str], console: Console,
                       timeout_s: float = 300) -> dict[str, dict[str, Any]] | None:
    """The latest decision per URL once every URL of `urls` has a complete one, with a progress bar;
    None when the worker exits or `timeout_s` passes first."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    latest: dict[str, dict[str, Any]] = {}

    def decided() -> int:
        return sum(1 for u in urls if u in latest and latest[u]["complete"])

    with Progress(TextColumn("[bold]decisions"), BarColumn(), MofNCompleteColumn(), console=console) as bar:
        task = bar.add_task("decisions", total=len(urls))

        def on_record(record: Record) -> None:
            keep_latest(latest, record.json())

        try:
            cluster.follow("dedup.decisions", on_record, lambda: decided() == len(urls), settle_s=0,
                           timeout_s=timeout_s, every=lambda: bar.update(task, completed=decided()))
        except ClusterError:
            return None
    return latest


def print_summary(latest: dict[str, dict[str, Any]], console: Console) -> None:
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
