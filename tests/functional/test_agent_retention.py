"""Retention in the worker's agents, in process (`tests/functional/memory_kafka.py`): the sweep's deletes
of expired index entries, version records and URL states travel in the tables' changelog records, so
replaying the changelogs (what recovery and standbys do) rebuilds the tables without them."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

from neardup_core.dedup.retention import URL_EXPIRY
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import fingerprint_event
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import probes_for
from neardup_core.index.keys import EXPIRY_HEADER, version_record_key
from neardup_core.store.memory import MemoryStore
from streams.kafka import records
from streams.web import metrics
from tests.functional.memory_kafka import MemoryKafka
from tests.functional.test_agents import PARTITIONS, agents_of, article, in_memory, latest, publish, settings_for

OLD = "2026-11-01T08:00:00Z"
NEW = "2026-11-05T08:00:00Z"  # four days later; the window is one day
LATE_URL = "https://late.example/story"


def urls_in_every_partition(prefix: str) -> list[str]:
    """One URL per gather partition, so every partition's clock moves."""
    out: dict[int, str] = {}
    i = 0
    while len(out) < PARTITIONS:
        url = f"{prefix}{i}"
        out.setdefault(records.partition_of(url_identity(url).encode(), PARTITIONS), url)
        i += 1
    return list(out.values())


def replayed(kafka: MemoryKafka, topic: str) -> dict[int, MemoryStore]:
    """Each partition of a table rebuilt from its changelog alone, in order, as recovery applies it."""
    stores: dict[int, MemoryStore] = defaultdict(MemoryStore)
    for record in kafka.records(topic):
        assert record.key is not None, "every changelog record is keyed by its state key"
        stores[record.partition].write_many([(record.key, record.value)])
    return stores


def deleted(kafka: MemoryKafka, topic: str) -> set[bytes]:
    return {r.key for r in kafka.records(topic) if r.key is not None and r.value is None}


def test_expired_versions_and_url_states_leave_the_tables_through_their_changelogs(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, retention_days=1.0)
    old_urls = urls_in_every_partition("https://old.example/story/")
    new_urls = urls_in_every_partition("https://new.example/s")

    async def scenario(kafka: MemoryKafka) -> tuple[dict[str, dict[str, Any]], dict[str, set[bytes]]]:
        for url in old_urls:
            publish(kafka, article(url, fetched_at=OLD))
        await kafka.run()
        for url in new_urls:
            publish(kafka, article(url, fetched_at=NEW))
        await kafka.run()
        publish(kafka, article(LATE_URL, fetched_at=OLD))  # older than the window when it arrives
        await kafka.run()
        tables = agents_of(kafka).tables
        live = {name: {key for p in range(PARTITIONS) for key, _ in replayed(kafka, topic(kafka, name))[p].items()
                       if table.get(key) is not None}
                for name, table in (("urls", tables.urls), ("index", tables.index))}
        return latest(kafka), live

    def topic(kafka: MemoryKafka, table: str) -> str:
        [name] = [t for t in kafka.log.topics if t.endswith("-changelog") and f"-{table}" in t]
        return name

    expired_before = metrics.REGISTRY.get_sample_value("neardup_expired_total", {"kind": "version"}) or 0.0
    kafka_box: list[MemoryKafka] = []

    async def run(kafka: MemoryKafka) -> Any:
        kafka_box.append(kafka)
        return await scenario(kafka)

    decided, live = in_memory(settings, run)
    kafka = kafka_box[0]
    old_fetches = [fingerprint_event(orjson.dumps(article(u, fetched_at=OLD)), settings=settings.core)
                   for u in old_urls]
    assert all(isinstance(f, Fetch) and f.version is not None for f in old_fetches)
    old_versions = [f.version for f in old_fetches if isinstance(f, Fetch) and f.version is not None]
    old_keys = {version_record_key(v.version_id) for v in old_versions} | \
        {p.entry_key for v in old_versions for p in probes_for(settings.core.design, v)}

    # the deletes are in the changelogs: every old entry and record, every old URL state
    index_topic, urls_topic = topic(kafka, "index"), topic(kafka, "urls")
    assert old_keys <= deleted(kafka, index_topic)
    assert {url_identity(u).encode() for u in old_urls} <= deleted(kafka, urls_topic)
    # replaying the changelogs rebuilds the tables without them, equal to the live tables
    index_replayed = replayed(kafka, index_topic)
    urls_replayed = replayed(kafka, urls_topic)
    assert not any(key in store._data for store in index_replayed.values() for key in old_keys)
    assert not any(url_identity(u).encode() in store._data for store in urls_replayed.values() for u in old_urls)
    assert {key for s in urls_replayed.values() for key, _ in s.items()} == live["urls"]
    assert {key for s in index_replayed.values() for key, _ in s.items()} == live["index"]
    assert all(any(k.startswith(EXPIRY_HEADER) for k in s._data) for s in index_replayed.values())
    assert all(any(k[:1] == URL_EXPIRY for k in s._data) for s in urls_replayed.values())
    # the new pages were decided as if the old copies never existed: the best of them is unique
    assert all(decided[u]["duplicate_of"] in (None, *new_urls) for u in new_urls)
    assert sorted(decided[u]["verdict"] for u in new_urls) == ["exact_duplicate"] * (len(new_urls) - 1) + ["unique"]
    # a fetch older than the window when it arrives still gets its decision (its answers come later)
    late = decided[LATE_URL]
    assert (late["verdict"], late["complete"]) == ("exact_duplicate", True) and late["duplicate_of"] in new_urls
    expired_after = metrics.REGISTRY.get_sample_value("neardup_expired_total", {"kind": "version"}) or 0.0
    assert expired_after - expired_before >= len(old_versions)
