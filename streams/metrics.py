"""Prometheus metrics of a worker (served at /metrics on its web port)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

if TYPE_CHECKING:
    from faust.types import AppT

REGISTRY = CollectorRegistry()
PAGES = Counter("neardup_pages_total", "Fetched-page events read", registry=REGISTRY)
DECISIONS = Counter("neardup_decisions_total", "Decisions published, revisions included", ["verdict"],
                    registry=REGISTRY)
REVISIONS = Counter("neardup_revisions_total", "Decisions that revise an earlier decision of the URL",
                    registry=REGISTRY)
REJECTS = Counter("neardup_rejects_total", "Events sent to the dead-letter topic", ["stage"], registry=REGISTRY)
PROBES = Counter("neardup_probes_total", "Bucket probes answered", registry=REGISTRY)
PROBE_SECONDS = Histogram("neardup_probe_seconds", "Time to scan and insert one bucket", registry=REGISTRY,
                          buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25))
DECISION_SECONDS = Histogram("neardup_decision_seconds",
                             "From a fetch reaching the decision stage to its first complete decision",
                             registry=REGISTRY, buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
PENDING = Gauge("neardup_pending_pages", "Pages of this worker waiting for probe answers", registry=REGISTRY)
RESEEKS = Counter("neardup_reseeks_total",
                  "Partitions sought back to fetch again records Faust fetched and did not hand on",
                  registry=REGISTRY)
LAG = Gauge("neardup_consumer_lag", "Messages not yet read, per topic partition", ["topic", "partition"],
            registry=REGISTRY)


async def measure_lag(app: AppT) -> None:
    """A timer: per assigned partition, the highwater minus the consumer's position."""
    consumer = app.consumer
    for tp in consumer.assignment():
        try:
            position = await consumer.position(tp)
            highwater = consumer.highwater(tp)
        except Exception:  # the partition may be revoked while we look
            continue
        if position is not None and highwater is not None:
            LAG.labels(tp.topic, str(tp.partition)).set(max(0, highwater - position))
