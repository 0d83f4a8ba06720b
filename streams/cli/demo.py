"""`neardup demo`: a local Kafka, a worker, a generated crawl; decisions and host signals printed in tables
that fit 100 columns, the numbers explained, a few decisions in plain words, the next command to try; the
scratch dir (broker data, worker state and log) removed at the end unless `--keep`."""

from __future__ import annotations

import shutil
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

from neardup_core.hosts.urls import url_identity
from neardup_core.ingest.files import RawEvent
from neardup_core.testing.synthetic import generate_crawl
from streams.cli.publish import publish_events
from streams.cli.tail import read_topic
from streams.dev import (
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
    console = Console(width=min(Console().width, WIDTH) if sys.stdout.isatty() else WIDTH)
    workdir = Path(tempfile.mkdtemp(prefix="neardup-demo-"))
    started_broker = not is_set("broker")  # the user's broker when NEARDUP_BROKER is set (and valid: `base`)
    broker = start_local_kafka(workdir / "kafka", console) if started_broker else base.broker
    run = f"demo{int(time.time())}{uuid.uuid4().hex[:4]}"
    # the worker runs with the user's NEARDUP_* settings, from the user's working directory
    # NO_COLOR and TERM=dumb: a plain log file, without terminal escape codes
    cluster = Cluster(broker, run, workdir, partitions=4, topic_prefix=base.topic_prefix, inherit=True,
                      log_level="warning", worker_env={"NEARDUP_TICK_INTERVAL_S": "1", "NO_COLOR": "1",
                                                       "TERM": "dumb"})
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
        console.print(publish_line(events))
        latest = wait_for_decisions(cluster, urls, console)
        if latest is None:
            console.print(f"[red]the worker did not decide every page; see {log}")
            return 1
        print_summary(latest, console, k=base.k)
        signals: dict[str, dict[str, Any]] = {}
        for _, value in read_topic(settings, "hosts", idle_s=3):
            # per host, the latest overall signal if there is one, else its latest window's
            kept = signals.get(value["host"])
            if kept is None or value["window_start"] is None or kept["window_start"] is not None:
                signals[value["host"]] = value
        console.print(host_table(list(signals.values())))
        console.print("penalty (0 to 1) rises with the share of a host's pages that duplicate its own pages, and "
                      "budget is the factor for its crawl budget; rules are URL normalisations learned for the "
                      "frontier (the query parameter that does not change the page, and how sure)", highlight=False)
        console.print(NEXT_STEPS, highlight=False)
        return 0
    finally:
        cluster.stop_all()
        if started_broker and not keep:
            stop_broker(workdir / "kafka")
        if keep:
            console.print(f"kept: {'the broker at ' + broker + ' and ' if started_broker else ''}the scratch dir "
                          f"{workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
            console.print(f"stopped the worker{' and the local broker' if started_broker else ''}; removed "
                          f"the scratch dir")


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


WIDTH = 100
"""The demo's tables and lines fit this many columns."""
NEXT_STEPS = ("next: your own pages without Kafka: `neardup scan pages.jsonl` (README, \"Your own pages in five "
              "minutes\"); why two pages are duplicates: `neardup explain A B`; a broker to keep: "
              "`neardup demo --keep`")


def publish_line(events: list[dict[str, Any]]) -> str:
    """What was published, and why there are fewer decisions than events: a recrawl is one more fetch of a
    URL already fetched, and each URL gets one (latest) decision."""
    urls = {url_identity(e["url"]) for e in events}
    recrawls = len(events) - len(urls)
    again = f", {recrawls} of them recrawls of a URL fetched before" if recrawls else ""
    return (f"published {len(events)} fetched pages of {len(urls)} URLs{again}: one decision per URL, "
            "the latest wins")


def plain_reason(decision: dict[str, Any], k: int) -> str:
    """A decision in a crawler operator's words: what the page is, and which page it duplicates."""
    verdict, of = decision["verdict"], decision.get("duplicate_of")
    if verdict == "exact_duplicate":
        same = "the same bytes" if "same body" in (decision.get("reason") or "") else "the same main text"
        return f"{same} as {of}, a better-ranked copy"
    if verdict == "near_duplicate":
        if decision.get("distance") is None and decision.get("jaccard") is not None:
            how = f"{round(decision['jaccard'] * 100)}% of the same word pairs"
        elif decision.get("distance") == 0:
            how = "the same SimHash fingerprint, the texts a few words or numbers apart"
        else:
            how = f"{decision.get('distance')} of 64 fingerprint bits apart (at most {k} allowed)"
        return f"nearly the same main text as {of}, a better-ranked page ({how})"
    if verdict == "skipped":
        return f"not deduplicated: {decision.get('reason')}"
    return "unique: the canonical copy, to index"


def examples(latest: dict[str, dict[str, Any]], count: int = 6) -> list[dict[str, Any]]:
    """Up to `count` duplicates or skipped pages, each from another host as long as there are hosts left,
    exact and near duplicates both shown when there are both."""
    chosen: list[dict[str, Any]] = []
    hosts: set[str] = set()
    verdicts: set[str] = set()
    candidates = sorted((d for d in latest.values() if d["verdict"] != "unique"), key=lambda d: d["url"])
    for fresh in (lambda d: d["host"] not in hosts and d["verdict"] not in verdicts,
                  lambda d: d["host"] not in hosts, lambda d: True):
        for d in candidates:
            if len(chosen) < count and d not in chosen and fresh(d):
                chosen.append(d)
                hosts.add(d["host"])
                verdicts.add(d["verdict"])
    return chosen


def print_summary(latest: dict[str, dict[str, Any]], console: Console, *, k: int = 3) -> None:
    counts: Counter[tuple[str, str]] = Counter((d["host"], d["verdict"]) for d in latest.values())
    verdicts = [v for v in ("unique", "exact_duplicate", "near_duplicate", "skipped")
                if any(n for (_, seen), n in counts.items() if seen == v)]
    table = Table(title="dedup.decisions: the latest decision of each URL, by host")
    table.add_column("host")
    for v in verdicts:
        table.add_column(v.replace("_", " "), justify="right")
    for host in sorted({h for h, _ in counts}):
        table.add_row(host, *[str(counts.get((host, v), 0)) for v in verdicts])
    console.print(table)
    console.print("[bold]a few decisions, in words[/]")
    for d in examples(latest):
        console.print(f"  {d['url']}\n    {d['verdict']}: {plain_reason(d, k)}", highlight=False, soft_wrap=False)


def _rule(rule: dict[str, Any]) -> str:
    """`ignore sid (97%)` for a query parameter, else the kind and what it applies to."""
    sure = f" ({rule['confidence']:.0%})" if isinstance(rule.get("confidence"), int | float) else ""
    if rule.get("kind") == "ignore_query_param":
        return f"ignore {rule.get('param')}{sure}"
    return " ".join(str(part) for part in (rule.get("kind"), rule.get("param")) if part) + sure


def host_table(signals: list[dict[str, Any]]) -> Table:
    """The last signal of each host, worst first, in the columns a frontier acts on."""
    table = Table(title="frontier.host-signals: the last signal of each host")
    for name, justify in (("host", "left"), ("pages", "right"), ("dup %", "right"), ("penalty", "right"),
                          ("budget", "right"), ("rules", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for s in sorted(signals, key=lambda s: (-s["penalty"], s["host"])):
        rules = ", ".join(_rule(r) for r in s.get("url_rules") or [])
        table.add_row(s["host"], str(s["pages"]), f"{s['dup_ratio'] * 100:.0f}", f"{s['penalty']:.2f}",
                      f"{s['budget_factor']:.2f}", rules or "-")
    return table
