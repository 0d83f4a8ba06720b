"""The stream benchmark's report: the rows of one phase, each worker count against the first, and the
markdown page with the machine, the software, the exact command and the definitions."""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import statistics
from collections import Counter
from datetime import datetime
from typing import Any

from common import REPO, code_state, machine, package_versions, percentile
from stream_input import Event
from stream_phase import Phase

NEARDUP_TOPICS = (
    "pages.fetched",
    "neardup.gather",
    "neardup.probes",
    "neardup.hosts",
    "dedup.decisions",
    "frontier.host-signals",
    "pages.rejected",
)


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
                f"{percentile(lat, 0.5):.0f} / {percentile(lat, 0.9):.0f} / {percentile(lat, 0.99):.0f} / "
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
        metric("latency p50, ms", lambda r: percentile(r["latency"].latencies_ms, 0.5), "{:.0f}"),
        metric("latency p99, ms", lambda r: percentile(r["latency"].latencies_ms, 0.99), "{:.0f}"),
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
    """`common.machine()` and what the stream's numbers also depend on: the kernel, the Kafka client
    and Faust versions, the broker's Kafka version and the code's commit."""
    info = machine()
    kafka = "?"
    try:
        m = re.search(r"<kafka\.version>([^<]+)<", (REPO / "deploy" / "kafka" / "pom.xml").read_text())
        kafka = m.group(1) if m else "?"
    except OSError:
        pass
    return {
        **info,
        "kernel": platform.release(),
        "versions": package_versions(("faust-streaming", "aiokafka", "confluent-kafka", "rocksdict")),
        "kafka": kafka,
        "git": code_state(),
        "loadavg": info["load"].split(" ")[0],
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
