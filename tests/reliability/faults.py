"""What the commit-protocol tests (issue 21) inject and read from outside the worker: records written
where and as a worker would not write them, with their offsets; a topic's config changed at the broker
(a broker that refuses a worker's sends); the worker's extraction-pool processes, to kill one; real
corpus pages as `pages.fetched` events."""

from __future__ import annotations

import base64
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from neardup_core.hosts.urls import url_identity
from neardup_core.testing.corpus import corpus_dir, has_corpus, page_bytes, read_manifest
from neardup_core.testing.synthetic import CRAWL_START
from streams.dev import Cluster, ClusterError

PRODUCER_LIMIT = 1_000_000
"""What every record a worker sends must stay under (key and value): aiokafka's `max_request_size`
is 1,048,576 bytes and the broker's `message.max.bytes` 1,048,588, both with the record's overhead."""


def produce(cluster: Cluster, topic: str, records: list[tuple[bytes | None, bytes]], *,
            partition: int | None = None) -> list[tuple[int, int]]:
    """Writes `(key, value)` records to the app's `topic` (its full name is `cluster.topic(topic)`), to
    `partition` or by key, and returns each one's `(partition, offset)` once all are delivered."""
    from confluent_kafka import Producer

    producer = Producer({**cluster.settings.confluent_config(), "linger.ms": 10,
                         "message.max.bytes": 20_000_000})
    where: list[tuple[int, int] | None] = [None] * len(records)
    errors: list[str] = []

    def delivered(i: int) -> Any:
        def report(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                where[i] = (msg.partition(), msg.offset())
        return report

    name = cluster.topic(topic)
    for i, (key, value) in enumerate(records):
        extra = {} if partition is None else {"partition": partition}
        producer.produce(name, value=value, key=key, on_delivery=delivered(i), **extra)
        producer.poll(0)
    left = producer.flush(60)
    if left or errors or None in where:
        raise ClusterError(f"writing to {name}: {left} undelivered, errors {errors[:3]}")
    return [w for w in where if w is not None]


def changelog_topics(cluster: Cluster) -> list[str]:
    """The full names of the app's table changelog topics, of the design its workers run (partial copies
    on or off, as their environment says: the index's name has the containment tables)."""
    import dataclasses

    from streams.kafka.topics import changelog_specs

    partial = cluster.worker_env.get("NEARDUP_PARTIAL_COPIES", "0") not in ("", "0", "false", "no", "off")
    return [spec.name for spec in changelog_specs(dataclasses.replace(cluster.settings, partial_copies=partial))]


def alter_topic_config(cluster: Cluster, topic: str, config: dict[str, str | None], *, full_name: bool = False) -> None:
    """Sets (a value) or removes (None: back to the broker's default) configs of the app's `topic`
    (`cluster.topic(topic)`, or `topic` itself with `full_name`) at the broker, as an operator would
    with `kafka-configs --alter`, and waits until the broker describes them so."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient(cluster.settings.confluent_config())
    name = topic if full_name else cluster.topic(topic)
    entries = [ConfigEntry(k, v if v is not None else "",
                           incremental_operation=AlterConfigOpType.SET if v is not None else AlterConfigOpType.DELETE)
               for k, v in config.items()]
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, name)])
        current = next(iter(described.values())).result(timeout=30)
        if all(v is None or current[k].value == v for k, v in config.items()):
            return
        time.sleep(0.2)
    raise ClusterError(f"the broker does not show {config} on {name} after 30 s")


def children(pid: int) -> list[int]:
    """The child processes of `pid` (Linux: /proc/PID/task/*/children)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return sorted(set(out))


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def cpu_ticks(pid: int) -> int:
    """User + system clock ticks `pid` has used (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def extraction_processes(worker_pid: int) -> list[int]:
    """The worker's extraction-pool processes: its children forked from it (`streams.processes.pool`: a fork
    keeps the worker's command line), not the index process or a resource tracker, which are started
    as new interpreters (`-c 'from multiprocessing...'`)."""
    mine = cmdline(worker_pid)
    return [c for c in children(worker_pid) if mine and cmdline(c) == mine]


CORPUS = corpus_dir()


def corpus_events(limit: int, *, skip: int = 0) -> list[dict[str, Any]]:
    """Up to `limit` real pages of the shared corpus (after the first `skip` usable ones) as
    `pages.fetched` events: the manifest's URL (one page per URL identity), the fetched bytes as
    `body_b64`, a second apart. Skips the test when the corpus is absent."""
    if not has_corpus(CORPUS):
        pytest.skip(f"the real-web corpus is absent: no MANIFEST.jsonl at {CORPUS} "
                    "(../shared/corpus relative to the repository root, or $NEARDUP_CORPUS)")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    usable = 0
    start = CRAWL_START + timedelta(days=1)
    for page in read_manifest(CORPUS):
        if not page.url or not (CORPUS / page.path).exists() or url_identity(page.url) in seen:
            continue
        seen.add(url_identity(page.url))
        usable += 1
        if usable <= skip:
            continue
        at = start + timedelta(seconds=len(out))
        out.append({"url": page.url, "body_b64": base64.b64encode(page_bytes(CORPUS, page.path)).decode(),
                    "fetched_at": at.isoformat().replace("+00:00", "Z"), "status": 200,
                    "content_type": "text/html"})
        if len(out) >= limit:
            break
    return out


def mirror_of(event: dict[str, Any], n: int, *, later_s: int = 86_400) -> dict[str, Any]:
    """The same fetched bytes under a worse-ranked URL (DESIGN.md, "The decision rule"): plain http,
    more path segments and a longer URL than any page of the crawl or the corpus, the same importance
    or less, fetched a day later. The stream must decide it a duplicate of a better-ranked page."""
    from neardup_core.timefmt import ms_to_rfc3339, rfc3339_to_ms

    copy = dict(event)
    tail = event["url"].split("://", 1)[1].replace("/", "-").replace("?", "-")[:80]
    copy["url"] = f"http://mirror.example/archive/copies/of/the/web/{n:05d}/{tail}/index.html"
    copy["fetched_at"] = ms_to_rfc3339(rfc3339_to_ms(event["fetched_at"]) + later_s * 1000)
    if "importance" in event:
        copy["importance"] = min(float(event["importance"]), 0.0)
    return copy
