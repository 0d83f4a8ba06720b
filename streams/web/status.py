"""What the worker's status page shows (`/` and `/status.json`), gathered in one place.

Most of it is read from the worker's own Prometheus registry (`streams.web.metrics`), so the page and
`/metrics` cannot disagree: totals, the verdict mix, decision latency quantiles (estimated from the
histogram's buckets as Prometheus' `histogram_quantile` does), pending pages, and per assigned
partition the highwater, position and committed offset. What the metrics do not keep, `Recorder`
keeps in memory, bounded: samples of the counters for recent rates, the latest rejections and their
counts by reason, and the hosts with the highest penalty with their learned rules (each host's current
cumulative signal, recomputed when the hosts agent updates it). All of it is this worker's view: its
partitions, since it started.

`streams.web.status_html` renders the same dictionary as HTML.
"""

from __future__ import annotations

import re
import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from faust.types import AppT

from neardup_core.fingerprint.page import Rejected
from neardup_core.hosts.statistics import penalty, signal_for
from neardup_core.hosts.tracker import HostTracker
from neardup_core.hosts.url_rules import rules_for
from neardup_core.messages import HostSignal
from neardup_core.timefmt import ms_to_rfc3339
from streams.web import metrics

RECENT_S = 60.0
"""The window of the recent rates and the recent latency quantiles."""
SAMPLE_EVERY_S = 5.0
"""How often `Recorder.sample` runs (a timer of the app)."""
TOP_HOSTS = 10
HOSTS_KEPT = 100
"""Hosts kept by penalty; a host below the lowest of a full set is not kept."""
RECENT_REJECTIONS = 20
REASONS_KEPT = 50
"""Distinct reasons counted; later new ones are counted as `OTHER_REASONS`."""
OTHER_REASONS = "(other reasons)"
SHOWN_CHARS = 300
"""Longest reason or key shown of a rejection (the dead-letter topic has the whole event)."""

STARTED = time.time()

_QUOTED = re.compile(r"""(?<!\w)b?(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")  # a repr, not an apostrophe
_NAME = re.compile(r"""b?['"][A-Za-z_][A-Za-z0-9_]*['"]""")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_-])-?\d+(?:\.\d+)?(?![A-Za-z0-9_])")  # not the 8 of UTF-8


def reason_kind(reason: str) -> str:
    """A rejection's reason with the event's own values masked, so that reasons differing only in a
    URL, a size or a date count as one: quoted values become `…` (quoted field names such as `'url'`
    stay) and numbers `N`; at most 120 characters."""
    masked = _QUOTED.sub(lambda m: m.group(0) if _NAME.fullmatch(m.group(0)) else "…", reason)
    return _NUMBER.sub("N", masked)[:120]


@dataclass(frozen=True, slots=True)
class Sample:
    at: float  # time.monotonic()
    pages: float
    decisions: float
    latency: tuple[tuple[float, float], ...]  # the decision histogram's (upper bound, cumulative count)


@dataclass
class Recorder:
    """This worker's bounded memory of what the metrics do not keep (one per process: `RECORDER`)."""

    samples: deque[Sample] = field(default_factory=lambda: deque(maxlen=int(RECENT_S / SAMPLE_EVERY_S) + 2))
    rejections: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECENT_REJECTIONS))
    reasons: Counter[tuple[str, str]] = field(default_factory=Counter)
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def rejected(self, rejected: Rejected, *, key: bytes | None, topic: str | None, partition: int | None,
                 offset: int | None) -> None:
        """An event went to the dead letters."""
        kind = reason_kind(rejected.reason)
        if (rejected.stage, kind) not in self.reasons and len(self.reasons) >= REASONS_KEPT:
            kind = OTHER_REASONS
        self.reasons[(rejected.stage, kind)] += 1
        self.rejections.appendleft({
            "at": ms_to_rfc3339(int(time.time() * 1000)), "stage": rejected.stage,
            "reason": rejected.reason[:SHOWN_CHARS],
            "key": key.decode("utf-8", "replace")[:SHOWN_CHARS] if key is not None else None,
            "topic": topic, "partition": partition, "offset": offset})

    def hosts_updated(self, tracker: HostTracker, hosts: Iterable[str], sent: Iterable[HostSignal]) -> None:
        """The hosts agent changed these hosts' counts and sent these signals: keep each host's current
        cumulative signal while it ranks among the `HOSTS_KEPT` highest penalties."""
        reasons = {s.host: s.reason for s in sent}
        for host in set(hosts) | set(reasons):
            state = tracker.host(host)
            if state is None:
                continue
            value = penalty(state, tracker.policy)
            kept = self.hosts.get(host)
            if kept is None and len(self.hosts) >= HOSTS_KEPT:
                lowest = min(self.hosts, key=lambda h: self._rank(self.hosts[h]))
                if self._rank(self.hosts[lowest]) >= (value, state.pages):
                    continue
                del self.hosts[lowest]
            signal = signal_for(state, rules=rules_for(tracker.rules(host)), policy=tracker.policy)
            entry = {k: getattr(signal, k) for k in ("host", "pages", "exact_duplicates", "near_duplicates",
                                                      "same_host_duplicates", "partial_copies", "dup_ratio",
                                                      "penalty", "budget_factor", "url_rules")}
            entry["last_signal"] = reasons.get(host, kept["last_signal"] if kept else None)
            self.hosts[host] = entry

    @staticmethod
    def _rank(entry: dict[str, Any]) -> tuple[float, int]:
        return entry["penalty"], entry["pages"]

    def top_hosts(self, n: int = TOP_HOSTS) -> list[dict[str, Any]]:
        return sorted(self.hosts.values(), key=lambda e: (-e["penalty"], -e["pages"], e["host"]))[:n]

    def sample(self, samples: dict[str, dict[tuple[tuple[str, str], ...], float]] | None = None) -> Sample:
        """Keep the counters' values now (a timer every `SAMPLE_EVERY_S`); returns the sample."""
        s = _sample(samples if samples is not None else read_registry())
        self.samples.append(s)
        return s

    def window_start(self, now: Sample) -> Sample | None:
        """The oldest sample at most `RECENT_S` before `now` (None when there is none)."""
        for s in self.samples:
            if now.at - s.at <= RECENT_S + SAMPLE_EVERY_S / 2 and s.at < now.at:
                return s
        return None


RECORDER = Recorder()


async def sample_counters() -> None:
    """The app's timer: one `Recorder.sample`."""
    RECORDER.sample()


# --- reading the registry ----------------------------------------------------------------------------


Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def read_registry() -> Samples:
    """Every sample the worker's registry exports: name -> (sorted labels -> value)."""
    out: Samples = {}
    for family in metrics.REGISTRY.collect():
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def _total(samples: Samples, name: str) -> float:
    return sum(samples.get(name, {}).values())


def _by(samples: Samples, name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, value in samples.get(name, {}).items():
        key = dict(labels).get(label, "")
        out[key] = out.get(key, 0.0) + value
    return out


def _buckets(samples: Samples, name: str) -> tuple[tuple[float, float], ...]:
    bounds = [(float(dict(labels)["le"]), value) for labels, value in samples.get(f"{name}_bucket", {}).items()]
    return tuple(sorted(bounds))


def _sample(samples: Samples) -> Sample:
    return Sample(time.monotonic(), _total(samples, "neardup_pages_total"),
                  _total(samples, "neardup_decisions_total"), _buckets(samples, "neardup_decision_seconds"))


def histogram_quantile(q: float, buckets: tuple[tuple[float, float], ...]) -> float | None:
    """The q-quantile of a histogram given as (upper bound, cumulative count), sorted, ending in +Inf:
    linear within the bucket it falls in, as Prometheus' `histogram_quantile`; the highest finite bound
    when it falls in +Inf; None without observations."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound


def _latency(buckets: tuple[tuple[float, float], ...], total_s: float | None) -> dict[str, Any]:
    count = buckets[-1][1] if buckets else 0.0
    out: dict[str, Any] = {"count": int(count), "p50_s": _round(histogram_quantile(0.5, buckets)),
                           "p99_s": _round(histogram_quantile(0.99, buckets))}
    if total_s is not None:
        out["mean_s"] = _round(total_s / count) if count else None
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


# --- the status ----------------------------------------------------------------------------------------


def gather(samples: Samples, offsets: list[metrics.PartitionOffsets], *, worker: dict[str, Any],
           recorder: Recorder = RECORDER) -> dict[str, Any]:
    """The status page's data: from `samples` (the registry, read once), the consumer's `offsets` and
    the recorder; `worker` says what the worker is (app id, design, readiness)."""
    now = _sample(samples)
    start = recorder.window_start(now)
    throughput: dict[str, Any] = {"window_s": None, "pages_per_s": None, "decisions_per_s": None}
    recent: dict[str, Any] = {"count": 0, "p50_s": None, "p99_s": None}
    if start is not None:
        dt = now.at - start.at
        throughput = {"window_s": round(dt, 1), "pages_per_s": round((now.pages - start.pages) / dt, 2),
                      "decisions_per_s": round((now.decisions - start.decisions) / dt, 2)}
        earlier = dict(start.latency)
        recent = _latency(tuple((b, c - earlier.get(b, 0.0)) for b, c in now.latency), None)
    decisions = _total(samples, "neardup_decisions_total")
    revisions = _total(samples, "neardup_revisions_total")
    by_stage = _by(samples, "neardup_rejects_total", "stage")
    partitions = [{"topic": o.topic, "partition": o.partition, "role": o.role, "highwater": o.highwater,
                   "position": o.position, "committed": o.committed, "lag": o.lag} for o in offsets]
    return {
        "worker": {**worker, "uptime_s": round(time.time() - STARTED, 1),
                   "generated_at": ms_to_rfc3339(int(time.time() * 1000))},
        "totals": {
            "pages": int(_total(samples, "neardup_pages_total")),
            "urls_decided": int(decisions - revisions),
            "decisions": int(decisions),
            "revisions": int(revisions),
            "provisional": int(_total(samples, "neardup_provisional_decisions_total")),
            "rejected": int(sum(by_stage.values())),
            "probes": int(_total(samples, "neardup_probes_total")),
            "reseeks": int(_total(samples, "neardup_reseeks_total")),
            "partial_copies": int(_total(samples, "neardup_partial_copies_total")),
        },
        "throughput": throughput,
        "verdicts": {v: int(n) for v, n in sorted(_by(samples, "neardup_decisions_total", "verdict").items())},
        "latency": {"since_start": _latency(_buckets(samples, "neardup_decision_seconds"),
                                            _total(samples, "neardup_decision_seconds_sum")),
                    "recent": recent},
        "pending_pages": int(_total(samples, "neardup_pending_pages")),
        "assigned_partitions": sum(1 for o in offsets if o.role == "source"),
        "lag": sum(o.lag or 0 for o in offsets if o.role == "source"),
        "partitions": partitions,
        "hosts": recorder.top_hosts(),
        "rejections": {
            "by_stage": {s: int(n) for s, n in sorted(by_stage.items())},
            "by_reason": [{"stage": stage, "reason": kind, "count": n}
                          for (stage, kind), n in sorted(recorder.reasons.items(), key=lambda x: (-x[1], x[0]))],
            "recent": list(recorder.rejections),
        },
    }


async def status(app: AppT, worker: dict[str, Any]) -> dict[str, Any]:
    """The status of the running worker; also refreshes the lag gauges from the offsets it read."""
    offsets = await metrics.partition_offsets(app)
    metrics.export_offsets(offsets)
    return gather(read_registry(), offsets, worker=worker)
