"""The stream benchmark's report: the rows of one phase, each code × worker count against the first
code (the before/after table, with the scan of the same events), each worker count against the first,
and the markdown page with the machine, the software, the codes' commits, the exact command and the
definitions."""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from common import REPO, code_state, machine, package_versions, percentile
from stream_broker import MAIN_APIS, BrokerCounts
from stream_input import Event
from stream_phase import Phase
from stream_scan import ScanRun

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


TOPIC_KINDS = {
    "pages.fetched": "input",
    "neardup.gather": "internal",
    "neardup.probes": "internal",
    "neardup.hosts": "internal",
    "dedup.decisions": "output",
    "frontier.host-signals": "output",
    "pages.rejected": "output",
}
KINDS = ("input", "internal", "changelog", "output")


def topic_group(topic: str, app: str) -> str:
    for name in NEARDUP_TOPICS:
        if topic == f"{app}.{name}":
            return name
    if topic.startswith(f"{app}-") and topic.endswith("-changelog"):
        return "changelog " + topic[len(app) + 1 : -len("-changelog")]
    return topic.replace(app, "{app}")


def topic_kind(topic: str, app: str) -> str:
    """input (pages.fetched), internal (neardup.gather, .probes, .hosts and Faust's own topics such as
    `{app}-__assignor-__leader`), changelog (`{app}-*-changelog`) or output (dedup.decisions,
    frontier.host-signals, pages.rejected)."""
    group = topic_group(topic, app)
    if group.startswith("changelog "):
        return "changelog"
    return TOPIC_KINDS.get(group, "internal")


def records_by_kind(p: Phase) -> dict[str, int]:
    out = dict.fromkeys(KINDS, 0)
    for t, n in p.records.items():
        out[topic_kind(t, p.app)] += n
    return out


def usage_by_kind(p: Phase, field: int) -> dict[str, int]:
    """Per kind (`KINDS`), the phase's bytes (`field` 0) or record batches (1) on the broker's disk."""
    out = dict.fromkeys(KINDS, 0)
    for t, usage in p.log_usage.items():
        out[topic_kind(t, p.app)] += usage[field]
    return out


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
    kinds = records_by_kind(p)
    rows.append(
        (
            "  by kind: input / internal / changelogs / outputs",
            " / ".join(f"{kinds[k] / p.pages:.2f}" for k in KINDS),
        )
    )
    groups: Counter[str] = Counter()
    for t, n in p.records.items():
        groups[topic_group(t, p.app)] += n
    for g, n in sorted(groups.items(), key=lambda kv: -kv[1]):
        rows.append((f"  {g}", f"{n / p.pages:.2f} ({n})"))
    if p.log_usage:
        for field, what, fmt in ((0, "bytes", "{:.0f}"), (1, "record batches", "{:.2f}")):
            kinds = usage_by_kind(p, field)
            rows.append((f"Kafka {what} per page on the broker's disk, all topics",
                         fmt.format(sum(kinds.values()) / p.pages)))
            rows.append(("  by kind: input / internal / changelogs / outputs",
                         " / ".join(fmt.format(kinds[k] / p.pages) for k in KINDS)))
        by_group: Counter[str] = Counter()
        batches_by_group: Counter[str] = Counter()
        for t, (size, batches) in p.log_usage.items():
            by_group[topic_group(t, p.app)] += size
            batches_by_group[topic_group(t, p.app)] += batches
        for g, n in sorted(by_group.items(), key=lambda kv: -kv[1]):
            per_page = f"{n / p.pages:.0f} / {batches_by_group[g] / p.pages:.2f}"
            rows.append((f"  {g}: bytes / batches per page", per_page))
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
    index_s = sum(w.get("index", 0.0) for w in cpu["workers"].values()) * wall
    rows.append(
        (
            "CPU ms per page: event loops / main processes / pools (extraction + index processes) / broker",
            f"{loop_s / p.pages * 1000:.1f} / {main_s / p.pages * 1000:.1f} / {pool_s / p.pages * 1000:.1f} "
            f"({(pool_s - index_s) / p.pages * 1000:.2f} + {index_s / p.pages * 1000:.2f}) / "
            f"{cpu['broker'] * wall / p.pages * 1000:.1f}",
        )
    )
    rows.append(
        (
            "CPU broker / this script / whole machine, cores",
            f"{cpu['broker']:.2f} / {cpu['bench']:.2f} / {cpu['machine']:.2f} of {os.cpu_count()}",
        )
    )
    if p.broker is not None:
        rows += broker_rows(p.broker, p.pages)
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


def requests_per_page(counts: BrokerCounts, pages: int, apis: tuple[str, ...] | None = None) -> float:
    """Requests the broker served per page: of `apis`, or of every API."""
    return sum(n for api, n in counts.requests.items() if apis is None or api in apis) / pages


def broker_per_page(p: Phase, apis: tuple[str, ...] | None = None) -> float | None:
    """`requests_per_page` of a phase, None when the broker's JVM could not be attached to."""
    return requests_per_page(p.broker, p.pages, apis) if p.broker is not None else None


def broker_thread_ms_per_page(p: Phase, groups: tuple[str, ...]) -> float | None:
    """The broker's CPU per page in these thread groups (`BrokerRequests.java`), None without the counts."""
    return sum(p.broker.thread_cpu_ms.get(g, 0) for g in groups) / p.pages if p.broker is not None else None


def broker_rows(counts: BrokerCounts, pages: int) -> list[tuple[str, str]]:
    """The broker's requests per page by API and its threads' CPU per page (`stream_broker`)."""
    other = requests_per_page(counts, pages) - requests_per_page(counts, pages, MAIN_APIS)
    by_api = " / ".join(f"{requests_per_page(counts, pages, (api,)):.3f}" for api in MAIN_APIS)
    threads = counts.thread_cpu_ms
    return [
        ("Kafka requests per page the broker served, all APIs", f"{requests_per_page(counts, pages):.3f}"),
        (f"  {' / '.join(MAIN_APIS)} / other", f"{by_api} / {other:.3f}"),
        ("broker thread CPU ms per page: request handlers / network threads / other",
         " / ".join(f"{threads.get(g, 0) / pages:.2f}" for g in ("request-handlers", "network-threads", "other"))),
    ]


def md_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def loop_ms(p: Phase) -> float:
    return sum(w["loop"] for w in p.cpu["workers"].values()) * p.cpu["wall_s"] / p.pages * 1000


def worker_ms(p: Phase) -> float:
    return sum(w["main"] + w["pool"] for w in p.cpu["workers"].values()) * p.cpu["wall_s"] / p.pages * 1000


def index_ms(p: Phase) -> float:
    """The index processes' CPU per page (a part of `worker_ms`)."""
    return sum(w.get("index", 0.0) for w in p.cpu["workers"].values()) * p.cpu["wall_s"] / p.pages * 1000


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


Runs = dict[str, list[dict[int, dict[str, Phase]]]]
"""code label -> per repeat (in run order) -> worker count -> "throughput" / "latency" -> the phase; a
phase that failed is missing."""
Scans = dict[str, list[ScanRun]]
"""code label -> the `neardup scan` of each repeat (empty without `--scan`)."""


def checkout_state(path: Path) -> str:
    """The checkout's commit (short hash and subject) and which library files differ from it."""
    try:
        head = subprocess.run(["git", "-C", str(path), "log", "-1", "--format=%h %s"], capture_output=True,
                              text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--", "neardup_core", "streams"],
                                 capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"
    sha, _, subject = head.partition(" ")
    files = [line[3:] for line in changed if line.strip()]
    subject = subject if len(subject) <= 90 else subject[:87] + "..."
    return f"commit {sha} ({subject})" + (f", uncommitted changes in {', '.join(files)}" if files else ", clean")


def _differ(a: dict[str, Any], b: dict[str, Any]) -> int:
    return sum(1 for u in set(a) | set(b) if a.get(u) != b.get(u))


def _root(final: dict[str, Any], url: str) -> str:
    """The end of the URL's duplicate_of chain (a URL whose final decision names no original)."""
    seen: set[str] = set()
    while url not in seen and (final.get(url) or (None, None))[1]:
        seen.add(url)
        url = final[url][1]
    return url


def _differ_text(a: dict[str, Any], b: dict[str, Any]) -> str:
    """URLs whose final (verdict, duplicate_of) differ: `verdict / duplicate_of only, the chains ending
    at the same URL / duplicate_of only, different ends` (a URL missing on one side counts as a
    verdict). duplicate_of may form chains; two orders of the same pages can name different members of
    one chain."""
    urls = set(a) | set(b)
    verdict = sum(1 for u in urls if (a.get(u) or (None,))[0] != (b.get(u) or (None,))[0])
    named = [u for u in urls if a.get(u) != b.get(u) and (a.get(u) or (None,))[0] == (b.get(u) or (None,))[0]]
    same_end = sum(1 for u in named if _root(a, u) == _root(b, u))
    return f"{verdict} / {same_end} / {len(named) - same_end}"


def _value(get: Callable[[dict[str, Phase], ScanRun | None], float | str | None], phases: dict[str, Phase],
           scan: ScanRun | None) -> float | str | None:
    try:
        return get(phases, scan)
    except (KeyError, ZeroDivisionError, ValueError, AttributeError, TypeError, statistics.StatisticsError):
        return None


def code_comparison(runs: Runs, scans: Scans, labels: list[str], counts: list[int]) -> tuple[str, list[str]]:
    """Rows = metrics, columns = code × worker count, then each code after the first against the first
    (per repeat, and their median when there are several)."""
    first = labels[0]
    header = ["metric", *[f"{lab}, {n} w" for lab in labels for n in counts]]
    header += [f"{lab} / {first}, {n} w" for lab in labels[1:] for n in counts]

    def tput(ph: dict[str, Phase]) -> Phase:
        return ph["throughput"]

    def lat(ph: dict[str, Phase]) -> Phase:
        return ph["latency"]

    def per_page(p: Phase, kinds: tuple[str, ...]) -> float:
        by_kind = records_by_kind(p)
        return sum(by_kind[k] for k in kinds) / p.pages

    def usage_per_page(p: Phase, field: int, kinds: tuple[str, ...]) -> float | None:
        if not p.log_usage:
            return None
        by_kind = usage_by_kind(p, field)
        return sum(by_kind[k] for k in kinds) / p.pages

    def scan_rate(s: ScanRun | None) -> float | None:
        return s.rate or None if s is not None else None

    Get = Callable[[dict[str, Phase], ScanRun | None], float | str | None]
    specs: list[tuple[str, Get, str, bool]] = [
        ("table design (workers' /health)", lambda ph, s: tput(ph).design, "{}", False),
        ("stream pages/s (throughput run)", lambda ph, s: tput(ph).rate, "{:.1f}", True),
    ]
    if any(scans.get(lab) for lab in labels):
        specs += [
            ("scan pages/s (wall clock, same events)", lambda ph, s: scan_rate(s), "{:.1f}", True),
            ("stream pages/s / scan pages/s", lambda ph, s: tput(ph).rate / scan_rate(s), "{:.2f}", True),
            ("(scan pages/s by its own clock, without start-up)", lambda ph, s: s.own_rate if s else None,
             "{:.1f}", True),
        ]
    specs += [
        ("decision latency p50, ms (paced run)", lambda ph, s: percentile(lat(ph).latencies_ms, 0.5), "{:.0f}", True),
        ("decision latency p99, ms (paced run)", lambda ph, s: percentile(lat(ph).latencies_ms, 0.99), "{:.0f}",
         True),
        ("(paced at, pages/s)", lambda ph, s: lat(ph).rate_target, "{:.1f}", True),
    ]
    for run, get_phase in (("throughput run", tput), ("paced run", lat)):
        specs += [
            (f"Kafka records per page, all topics ({run})", lambda ph, s, g=get_phase: per_page(g(ph), KINDS),
             "{:.2f}", True),
            ("  excluding the input topic", lambda ph, s, g=get_phase: per_page(g(ph), KINDS[1:]), "{:.2f}", True),
            ("  internal topics (gather, probes, hosts)", lambda ph, s, g=get_phase: per_page(g(ph), ("internal",)),
             "{:.2f}", True),
            ("  changelogs", lambda ph, s, g=get_phase: per_page(g(ph), ("changelog",)), "{:.2f}", True),
            ("  outputs (decisions, host signals, rejected)",
             lambda ph, s, g=get_phase: per_page(g(ph), ("output",)), "{:.2f}", True),
        ]
        specs += [  # none when the broker's JVM could not be attached to (`stream_broker`)
            (f"Kafka requests per page the broker served ({run})",
             lambda ph, s, g=get_phase: broker_per_page(g(ph)), "{:.3f}", True),
            ("  Produce", lambda ph, s, g=get_phase: broker_per_page(g(ph), ("Produce",)), "{:.3f}", True),
            ("  Fetch (consumers)", lambda ph, s, g=get_phase: broker_per_page(g(ph), ("FetchConsumer",)), "{:.3f}",
             True),
            ("broker request-handler + network-thread CPU ms per page", lambda ph, s, g=get_phase:
             broker_thread_ms_per_page(g(ph), ("request-handlers", "network-threads")), "{:.2f}", True),
        ]
        specs += [  # none with --broker: no log directory to read
            (f"Kafka bytes per page on the broker's disk ({run})",
             lambda ph, s, g=get_phase: usage_per_page(g(ph), 0, KINDS), "{:.0f}", True),
            ("  changelogs", lambda ph, s, g=get_phase: usage_per_page(g(ph), 0, ("changelog",)), "{:.0f}", True),
            ("  internal topics", lambda ph, s, g=get_phase: usage_per_page(g(ph), 0, ("internal",)), "{:.0f}",
             True),
            (f"Kafka record batches per page ({run})",
             lambda ph, s, g=get_phase: usage_per_page(g(ph), 1, KINDS), "{:.2f}", True),
            ("  changelogs", lambda ph, s, g=get_phase: usage_per_page(g(ph), 1, ("changelog",)), "{:.2f}", True),
        ]
    specs += [
        ("RSS per worker at the end, MiB (mean, throughput run)",
         lambda ph, s: statistics.mean(m["rss"] for m in tput(ph).memory) / 2**20, "{:.0f}", True),
        ("peak RSS per worker, MiB (max, throughput run)", lambda ph, s: max(tput(ph).peak_rss) / 2**20, "{:.0f}",
         True),
        ("worker CPU ms per page, all processes (throughput run)", lambda ph, s: worker_ms(tput(ph)), "{:.1f}",
         True),
        ("event-loop CPU ms per page, all workers (throughput run)", lambda ph, s: loop_ms(tput(ph)), "{:.1f}",
         True),
        ("index processes' CPU ms per page, all workers (throughput run)", lambda ph, s: index_ms(tput(ph)),
         "{:.2f}", True),
        ("worker CPU ms per page, all processes (paced run)", lambda ph, s: worker_ms(lat(ph)), "{:.1f}", True),
        ("event-loop CPU ms per page, all workers (paced run)", lambda ph, s: loop_ms(lat(ph)), "{:.1f}", True),
    ]
    if any(scans.get(lab) for lab in labels):
        specs.append(("scan CPU ms per page, all processes", lambda ph, s: s.cpu_s / s.pages * 1000 if s else None,
                      "{:.1f}", True))
        specs.append(("URLs whose final decision differs from scan's: verdict / duplicate_of, same chain end / "
                      "other end (throughput run)",
                      lambda ph, s: _differ_text(tput(ph).verdicts, s.verdicts) if s and s.verdicts else None,
                      "{}", False))
    specs.append(("CPU whole machine, cores (throughput run)", lambda ph, s: tput(ph).cpu["machine"], "{:.2f}", True))

    def values(lab: str, n: int, get: Get) -> list[float | str | None]:
        out = []
        for rep, r in enumerate(runs.get(lab, [])):
            scan_list = scans.get(lab) or []
            out.append(_value(get, r.get(n, {}), scan_list[rep] if rep < len(scan_list) else None))
        return out

    def show(v: float | str | None, fmt: str) -> str:
        if v is None or (isinstance(v, float) and v != v):
            return "n/a"
        return fmt.format(v)

    rows = []
    for name, get, fmt, ratio in specs:
        row = [name]
        vals = {(lab, n): values(lab, n, get) for lab in labels for n in counts}
        for lab in labels:
            for n in counts:
                row.append(" / ".join(show(v, fmt) for v in vals[lab, n]) or "n/a")
        for lab in labels[1:]:
            for n in counts:
                if not ratio:
                    row.append("")
                    continue
                rs = [a / b for a, b in zip(vals[lab, n], vals[first, n], strict=False)
                      if isinstance(a, float | int) and isinstance(b, float | int) and b and a == a and b == b]
                text = " / ".join(f"{x:.2f}" for x in rs)
                if len(rs) > 1:
                    text += f" (median {statistics.median(rs):.2f})"
                row.append(text or "n/a")
        rows.append(row)
    notes = []
    for lab in labels[1:]:
        for n in counts:
            for rep, (a, b) in enumerate(zip(runs.get(lab, []), runs.get(first, []), strict=False)):
                try:
                    va, vb = a[n]["throughput"].verdicts, b[n]["throughput"].verdicts
                except KeyError:
                    continue
                d = _differ(va, vb)
                notes.append(f"final (verdict, duplicate_of), stream, {n} worker(s), {lab} vs {first}"
                             + (f" (repeat {rep + 1})" if len(runs[lab]) > 1 else "")
                             + f": {'identical' if not d else f'{d} URLs differ'} ({len(vb)} URLs; verdict / "
                             f"duplicate_of with the same chain end / with another: {_differ_text(va, vb)})")
        for rep, (sa, sb) in enumerate(zip(scans.get(lab, []), scans.get(first, []), strict=False)):
            if sa.verdicts and sb.verdicts:
                d = _differ(sa.verdicts, sb.verdicts)
                notes.append(f"final (verdict, duplicate_of), scan, {lab} vs {first}"
                             + (f" (repeat {rep + 1})" if len(scans[lab]) > 1 else "")
                             + f": {'identical' if not d else f'{d} URLs differ'} ({len(sb.verdicts)} URLs; "
                             f"verdict / duplicate_of with the same chain end / with another: "
                             f"{_differ_text(sa.verdicts, sb.verdicts)})")
    return md_table(header, rows), notes


def _python() -> str:
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(REPO))
    except ValueError:
        return str(exe)


def report(
    args: argparse.Namespace,
    argv: list[str],
    events: list[Event],
    runs: Runs,
    scans: Scans,
    codes: list[tuple[str, Path]],
    counts: list[int],
    started: datetime,
    load_before: str,
    wall_s: float,
    failures: list[str],
    states_at_start: dict[str, str] | None = None,
) -> str:
    info = machine_info()
    labels = [lab for lab, _ in codes]
    sources = Counter(e.source for e in events)
    ext = (
        args.extract_processes if args.extract_processes is not None else f"default ({os.cpu_count()}, os.cpu_count())"
    )
    designs = {lab: sorted({p.design for r in runs.get(lab, []) for ph in r.values() for p in ph.values()})
               for lab in labels}
    title = " vs ".join(labels) if len(labels) > 1 else f"{' and '.join(map(str, counts))} worker(s)"
    tables = f"NEARDUP_TABLES={args.tables}" if args.tables else "the default table design (NEARDUP_TABLES unset)"
    out = [
        f"# Streaming benchmark: {title}, {tables}",
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
        f"the benchmark itself from {REPO} at {info['git']}",
    ]
    for lab, path in codes:
        state, start = checkout_state(path), (states_at_start or {}).get(lab)
        if start and start != state:  # others commit while the benchmark runs
            state = f"at the start {start}; at the end {state}"
        out.append(f"- code `{lab}`: {path}, {state}; design on the workers' /health: "
                   f"{', '.join(f'`{d}`' for d in designs[lab]) or 'n/a'}")
    out += [
        f"- input: {len(events)} `pages.fetched` events, {len({e.url for e in events})} URLs: "
        f"{sources.get('crawl', 0)} from `generate_crawl({args.seed}, scale={args.scale})` "
        f"(~3 KB each) and {sources.get('corpus', 0)} real pages of {args.corpus} (~60 KB each, "
        "`MANIFEST.jsonl` order, those with a URL"
        + (f"; {args.corpus_copies} times, the copies under other hosts" if getattr(args, "corpus_copies", 1) > 1
           else "")
        + "), spread evenly through the crawl; the same events for "
        "every code, worker count and phase" + (", and for scan" if args.scan else ""),
        f"- topics: {args.partitions} partitions each (`neardup topics create --partitions "
        f"{args.partitions}`, run from the code's checkout); "
        f"worker settings: defaults (NEARDUP_EXTRACT_PROCESSES {ext})"
        + (f", NEARDUP_TABLES={args.tables}" if args.tables else "")
        + (f", plus {', '.join(f'`{kv}`' for kv in args.worker_env)}" if args.worker_env else "")
        + "; each worker its own NEARDUP_DATA_DIR and NEARDUP_WEB_PORT; every phase on a fresh topic prefix "
        "and app id, whose topics are deleted after it" + (" (not with --keep)" if args.keep else ""),
        f"- each phase starts once every worker answers /health and the group's assignment covering all "
        f"partitions has not changed for {args.ready_settle:.0f} s",
        (f"- {args.warmup} warm-up phase(s) first (throughput and paced in turn, the first code and worker "
         "count), not reported: the broker is still compiling and making its first segments in its first "
         "phases\n" if args.warmup else "")
        + f"- order: {args.repeat} repeat(s); in each, for each code in turn (the codes alternate between "
        "repeats): " + ("a `neardup scan` first, then " if args.scan else "")
        + "every worker count (their order alternating between repeats), throughput then paced phase",
        "",
        "Reproduce (from the repository root):",
        "",
        "```",
        f"{_python()} " + shlex.join(["bench/bench_stream.py", *argv]),
        "```",
        "",
        "It starts its own broker (`deploy/local-kafka start --port 0 --dir <tmp>/kafka "
        "--config file.delete.delay.ms=0`: a phase's topics are deleted after it) and stops it "
        "at the end; `--broker HOST:PORT` uses a running one instead. Per phase it runs, with the code's "
        "checkout as working directory and first on PYTHONPATH:",
        "",
        "```",
        "NEARDUP_BROKER=<bootstrap> NEARDUP_TOPIC_PREFIX=<app>. NEARDUP_APP_ID=<app> "
        f"python -m streams.cli topics create --partitions {args.partitions}",
        "# once per worker N = 1..workers; `python -m streams.cli worker` is what `neardup worker` runs",
        "NEARDUP_BROKER=<bootstrap> NEARDUP_TOPIC_PREFIX=<app>. NEARDUP_APP_ID=<app> "
        "NEARDUP_DATA_DIR=<tmp>/<app>/data-N NEARDUP_WEB_PORT=<free port> python -m streams.cli worker -l info",
    ]
    if args.scan:
        out += [
            "# --scan, once per code and repeat, on a fresh state dir",
            "python -m streams.cli scan <tmp>/events.jsonl --state <tmp>/scan-<code>-<repeat>/state "
            "--out <tmp>/scan-<code>-<repeat>/decisions.jsonl --no-progress",
        ]
    out += [
        "```",
        "",
        "Definitions:",
        "",
        "- **throughput** = pages / (timestamp of the last `dedup.decisions` record - timestamp of the "
        "first published record), everything published at once; the phase ends once every URL's latest "
        f"decision is complete and for its latest fetch, and nothing new came for {args.settle:.0f} s;",
        "- **latency** = timestamp of the first complete decision for the page's URL and fetch time - "
        "timestamp of its published record, publishing at "
        f"{args.paced_fraction:.0%} of the throughput just measured for the same code and worker count;",
        "- **scan pages/s** = events / wall-clock time of the `neardup scan` subprocess (start to exit, "
        "interpreter start-up included), the events written once as JSONL (each event's raw bytes a line), "
        "extraction processes as the workers have them (NEARDUP_EXTRACT_PROCESSES, default the machine's "
        "cores); **stream / scan** = stream pages/s of the throughput phase / scan pages/s of the same code "
        "and repeat; scan's own rate (its loop only) is shown too;",
        "- **Kafka records per page** = end offsets of every topic of the prefix and of the app's own "
        "topics (`{app}-*-changelog`, `{app}-__assignor-__leader`) after the phase, divided by pages "
        f"(ticks included: {args.partitions} per tick interval, also before the first publish); by kind: "
        "input = pages.fetched (1 per page by construction), internal = neardup.gather, neardup.probes, "
        "neardup.hosts and Faust's assignor topic, changelogs = `{app}-*-changelog`, outputs = "
        "dedup.decisions, frontier.host-signals, pages.rejected;",
        "- **Kafka bytes and record batches per page** = the record batches of the same topics' log segments "
        "in the broker's log directory after the phase (`bench/stream_logdir.py` walks their headers: "
        "bytes as stored, compressed where the producer compressed, batch headers included), divided by "
        "pages: what the broker wrote and the batches it took, which records alone do not tell (one batch "
        "may hold one record or a thousand); not measured with `--broker` (no log directory to read);",
        "- **Kafka requests per page** = the requests the broker served during the phase (its own "
        "`kafka.network:type=RequestMetrics,name=RequestsPerSec` counts, read before and after by "
        "`bench/BrokerRequests.java` attached to its JVM), by API, divided by pages: the workers' and also "
        "this script's publisher and decision reader; with the broker's request-handler and network threads' "
        "CPU (the JVM's per-thread CPU time) beside them;",
        "- **RSS** = worker process + its descendants (the extraction pool), from /proc; PSS counts pages "
        "shared after fork once;",
        "- **CPU**, in cores (1.0 = one core for the whole phase), from `/proc/<pid>/task/*/schedstat`: "
        "time on a CPU, and time runnable but waiting for a CPU (other jobs had it). The *event-loop "
        "thread* is the worker's main thread, where every agent, the RocksDB calls and the Kafka client "
        "run; a loop that is on a CPU or waiting for one all the time (1.0) is CPU-bound. *CPU ms per "
        "page* (CPU time / pages) depends much less on the other jobs than pages/s does. Scan CPU = user + "
        "system time of the scan process and its pool (getrusage of children).",
        "",
        f"## {' vs '.join(labels)}" if len(labels) > 1 else "## Summary",
        "",
    ]
    table, notes = code_comparison(runs, scans, labels, counts)
    out.append(table)
    if args.repeat > 1:
        out += ["", "Values per repeat, separated by `/`, in repeat order."]
    out += [""] + [f"- {n}" for n in notes]
    if failures:
        out += ["", "Failures:", ""]
        for f in failures:
            out += ["```", f.strip(), "```", ""]
    if any(scans.get(lab) for lab in labels):
        out += ["", "## neardup scan", ""]
        rows = []
        for lab in labels:
            for rep, sc in enumerate(scans.get(lab, [])):
                rows.append([lab, str(rep + 1), f"{sc.wall_s:.1f}", f"{sc.rate:.1f}",
                             f"{sc.own_rate:.1f}" if sc.own_rate is not None else "n/a", f"{sc.cpu_s:.1f}",
                             str(sc.decisions), str(sc.returncode)])
        out.append(md_table(["code", "repeat", "wall s", "pages/s (wall)", "pages/s (scan's own)", "CPU s",
                             "decision lines", "exit"], rows))
        for lab in labels:
            for sc in scans.get(lab, []):
                if sc.error:
                    out += ["", f"scan of `{lab}` failed:", "", "```", sc.error.strip(), "```"]
    for lab in labels:
        results = runs.get(lab, [])
        complete = bool(results) and all(kind in r.get(n, {}) for r in results for n in counts
                                         for kind in ("throughput", "latency"))
        if complete and len(counts) > 1:
            table, notes = comparison(results, counts)
            out += ["", f"## {lab}: {' vs '.join(map(str, counts[1:]))} vs {counts[0]} worker(s)", "", table]
            if len(results) > 1:
                out += ["", "Values per repeat, separated by `/`, in run order (the worker counts alternate)."]
            out += [""] + [f"- {n}" for n in notes]
    for lab in labels:
        for rep, r in enumerate(runs.get(lab, [])):
            for n in counts:
                for kind in ("throughput", "latency"):
                    p = r.get(n, {}).get(kind)
                    if p is None:
                        continue
                    title = f"## {lab}: {n} worker(s), {kind}" + (f" (repeat {rep + 1})" if len(runs[lab]) > 1 else "")
                    again = (
                        f" (attempt {p.attempts}: an earlier one lost a worker to a signal from another job)"
                        if p.attempts > 1
                        else ""
                    )
                    out += [
                        "",
                        title,
                        "",
                        f"App `{p.app}`{again}; design `{p.design}`; workers ready {p.ready_s:.0f} s after start.",
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
