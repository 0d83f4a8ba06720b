"""Prometheus metrics of a worker (served at /metrics on its web port)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from faust.types import TP
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

if TYPE_CHECKING:
    from faust.types import AppT

REGISTRY = CollectorRegistry()
PAGES = Counter("neardup_pages_total", "Fetched-page events read", registry=REGISTRY)
DECISIONS = Counter("neardup_decisions_total", "Decisions published, revisions included", ["verdict"],
                    registry=REGISTRY)
REVISIONS = Counter("neardup_revisions_total", "Decisions that revise an earlier decision of the URL",
                    registry=REGISTRY)
PARTIAL_COPIES = Counter("neardup_partial_copies_total",
                         "URLs whose decision started naming pages they hold (partial_of)",
                         registry=REGISTRY)
"""A counter moves up only: a URL whose `partial_of` empties again (an exact duplicate now) is not taken off."""
BODIES = Counter("neardup_bodies_total",
                 "Fetched pages by what their body cost: extracted, or met before (the memo, or earlier in the batch)",
                 ["how"], registry=REGISTRY)
REJECTS = Counter("neardup_rejects_total", "Events sent to the dead-letter topic", ["stage"], registry=REGISTRY)
PROBES = Counter("neardup_probes_total", "Bucket probes answered", registry=REGISTRY)
PROBE_SECONDS = Histogram("neardup_probe_seconds",
                          "Time to scan and insert one bucket: each partition's index step observes its mean once",
                          registry=REGISTRY,
                          buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25))
DECISION_SECONDS = Histogram("neardup_decision_seconds",
                             "From a fetch reaching the decision stage to its first complete decision",
                             registry=REGISTRY, buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
PENDING = Gauge("neardup_pending_pages", "Pages of this worker waiting for probe answers", registry=REGISTRY)
EXPIRED = Counter("neardup_expired_total",
                  "What the retention (NEARDUP_RETENTION_DAYS) removed: index entries, version records, URL states",
                  ["kind"], registry=REGISTRY)
RESEEKS = Counter("neardup_reseeks_total",
                  "Partitions sought back to fetch again records Faust fetched and did not hand on",
                  registry=REGISTRY)
STALLS = Counter("neardup_stalled_partitions_total",
                 "Stream partitions found holding records nothing processed (fetched and dropped) and read again "
                 "from their committed offset (NEARDUP_STALL_CHECK_S)", registry=REGISTRY)
LAG = Gauge("neardup_consumer_lag",
            "Messages not yet read (highwater minus position), per partition the worker reads: the topics its "
            "agents read and its standby changelogs", ["topic", "partition"], registry=REGISTRY)
ASSIGNED = Gauge("neardup_assigned_partitions",
                 "Partitions of the topics the agents read that this worker is assigned (changelogs left out)",
                 registry=REGISTRY)
PROVISIONAL = Counter("neardup_provisional_decisions_total",
                      "Decisions published provisionally (complete: false): NEARDUP_DECISION_TIMEOUT_S passed first",
                      registry=REGISTRY)


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """Where the consumer is in one assigned partition.

    `role`: `source` (a topic an agent reads), `standby` (a changelog this worker replays into a
    standby table), `changelog` (the changelog of a table partition this worker runs: it writes it,
    and reads it only to recover) or `faust` (Faust's own, the assignor's leader topic). `lag` is
    `highwater - position` where the worker reads the partition all along (sources and standbys; what
    `neardup_consumer_lag` exports), else None, as where an offset is not known yet."""

    topic: str
    partition: int
    role: str
    highwater: int | None
    position: int | None
    committed: int | None

    @property
    def lag(self) -> int | None:
        if self.role not in ("source", "standby") or self.highwater is None or self.position is None:
            return None
        return max(0, self.highwater - self.position)


def role_of(app: AppT, topic: str, partition: int) -> str:
    if topic.endswith("-__assignor-__leader"):
        return "faust"
    if topic.endswith("-changelog"):
        return "standby" if app.assignor.is_standby(TP(topic, partition)) else "changelog"
    return "source"


async def partition_offsets(app: AppT) -> list[PartitionOffsets]:
    """Per assigned partition, sorted: its role, the highwater, the consumer's position and the
    offset Faust last committed (as `/debug/tasks` reads it)."""
    consumer: Any = app.consumer
    out = []
    for tp in sorted(consumer.assignment()):
        try:
            position = await consumer.position(tp)
            highwater = consumer.highwater(tp)
        except Exception:  # the partition may be revoked while we look
            continue
        out.append(PartitionOffsets(tp.topic, tp.partition, role_of(app, tp.topic, tp.partition), highwater,
                                    position, consumer._committed_offset.get(tp)))
    return out


_lag_labels: set[tuple[str, str]] = set()


def export_offsets(offsets: list[PartitionOffsets]) -> None:
    """Sets `neardup_consumer_lag` per partition (dropping partitions no longer assigned, so a revoked
    partition does not keep its last lag) and `neardup_assigned_partitions`."""
    seen = {(o.topic, str(o.partition)): o.lag for o in offsets if o.lag is not None}
    for labels in _lag_labels - set(seen):
        LAG.remove(*labels)
    for labels, lag in seen.items():
        LAG.labels(*labels).set(lag)
    _lag_labels.clear()
    _lag_labels.update(seen)
    ASSIGNED.set(sum(1 for o in offsets if o.role == "source"))


async def measure_lag(app: AppT) -> None:
    """A timer: the lag per assigned partition and the number of assigned partitions."""
    export_offsets(await partition_offsets(app))
