"""The broker's own count of the requests it served, by API, and its threads' CPU, read before and after
a phase (`BrokerRequests.java`, attached to the broker's JVM): Kafka's cost in requests, which records
and batches on disk do not show (a fetch that returns nothing is a request too, and each one lists every
partition the consumer reads)."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

TOOL = Path(__file__).with_name("BrokerRequests.java")


@dataclass
class BrokerCounts:
    requests: Counter[str] = field(default_factory=Counter)
    thread_cpu_ms: Counter[str] = field(default_factory=Counter)

    def __sub__(self, other: BrokerCounts) -> BrokerCounts:
        return BrokerCounts(
            Counter({k: v - other.requests.get(k, 0) for k, v in self.requests.items()}),
            Counter({k: v - other.thread_cpu_ms.get(k, 0) for k, v in self.thread_cpu_ms.items()}),
        )


def broker_counts(broker_pid: int | None) -> BrokerCounts | None:
    """The broker's counters now, or None without a broker pid, a JDK's `java`, or when the attach fails
    (a broker of another user, attach disabled)."""
    java = shutil.which("java")
    if broker_pid is None or java is None:
        return None
    try:
        done = subprocess.run([java, str(TOOL), str(broker_pid)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    out = BrokerCounts()
    for line in done.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        name, _, value = rest.rpartition(" ")
        if kind == "requests" and name != "Fetch":  # Fetch is FetchConsumer + FetchFollower, counted again
            out.requests[name] += int(value)
        elif kind == "thread-cpu-ms":
            out.thread_cpu_ms[name] += int(value)
    return out


def phase_counts(before: BrokerCounts | None, after: BrokerCounts | None) -> BrokerCounts | None:
    return after - before if before is not None and after is not None else None


MAIN_APIS = ("Produce", "FetchConsumer", "ListOffsets", "OffsetFetch", "OffsetCommit", "Metadata")
"""The APIs the report names one by one; the rest are summed as "other"."""
