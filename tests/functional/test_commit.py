"""The commit protocol of a take (`streams.state.commit`), in process (`tests/functional/memory_kafka.py`): nothing
reaches a partition's RocksDB before its changelog records are acknowledged, the local write carries the
changelog offset and the writer's generation, recovery skips a stalled writer's records, and a record
the worker cannot process becomes one dead letter while the rest of its take is decided."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import orjson
import pytest
from faust.types import TP, Message

from streams.state.commit import Take
from streams.state.stores import (
    GENERATION_HEADER,
    GENERATION_KEY,
    PrefixRocksStore,
    generation_bytes,
    record_generation,
)
from tests.functional.memory_kafka import MemoryKafka
from tests.functional.test_agents import (
    GATHER,
    PROBES,
    REJECTED,
    agents_of,
    article,
    in_memory,
    latest,
    publish,
    settings_for,
)


class Refused(Exception):
    pass


def store_of(kafka: MemoryKafka) -> PrefixRocksStore:
    return cast(PrefixRocksStore, agents_of(kafka).tables.urls.data)


def test_a_take_reaches_rocksdb_only_after_its_changelog_is_acknowledged(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario(kafka: MemoryKafka) -> None:
        app, urls = kafka.app, agents_of(kafka).tables.urls
        db = store_of(kafka).partition_db(1)
        changelog = urls.changelog_topic.get_topic_name()
        send = app.producer.send

        async def refusing(topic: str, *args: Any, **kwargs: Any) -> Any:
            if topic != changelog:
                return await send(topic, *args, **kwargs)
            refused: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            refused.set_exception(Refused("the broker refused the changelog record"))
            return refused

        # 1. the broker refuses the changelog: commit raises, the partition's RocksDB is untouched
        take = Take.begin(app)
        take.writes(urls, 1).put(b"https://a.example/", b"state a")
        take.writes(urls, 1).put(b"https://b.example/", b"state b")
        assert take.writes(urls, 1).get(b"https://a.example/") == b"state a"  # reads see the take's writes
        monkeypatch.setattr(app.producer, "send", refusing)
        with pytest.raises(Refused):
            await take.commit()
        assert db.get(b"https://a.example/") is None and db.get(store_of(kafka).offset_key) is None

        # 2. acknowledged: the writes, the changelog offset reached and the generation, in RocksDB
        monkeypatch.setattr(app.producer, "send", send)
        app.consumer_generation_id = 7
        take = Take.begin(app)
        take.writes(urls, 1).put(b"https://a.example/", b"state a")
        take.writes(urls, 1).put(b"https://b.example/", b"state b")
        take.writes(urls, 1).delete(b"https://gone.example/")
        await take.commit()
        records = [r for r in kafka.records(changelog) if r.partition == 1]
        assert [(r.key, r.value) for r in records] == [(b"https://a.example/", b"state a"),
                                                       (b"https://b.example/", b"state b"),
                                                       (b"https://gone.example/", None)]  # keyed by state key
        assert db.get(b"https://a.example/") == b"state a"
        assert db.get(store_of(kafka).offset_key) == str(records[-1].offset).encode()
        assert store_of(kafka).generation(1) == 7

        # 3. the group moved on during a take: commit refuses to write the local state
        take = Take.begin(app)
        take.writes(urls, 1).put(b"https://c.example/", b"state c")
        app.consumer_generation_id = 8
        with pytest.raises(RuntimeError, match="generation 7 to 8"):
            await take.commit()
        assert db.get(b"https://c.example/") is None

    in_memory(settings_for(tmp_path), scenario)


def changelog_event(partition: int, offset: int, key: bytes, value: bytes | None, generation: int | None) -> Any:
    headers = [(GENERATION_HEADER, generation_bytes(generation))] if generation is not None else []
    message = Message("app-urls-changelog", partition, offset, 0.0, 0, headers, key, value, None,
                      tp=TP("app-urls-changelog", partition))
    return SimpleNamespace(message=message)


def test_recovery_skips_the_records_of_a_stalled_writer_after_its_successors(tmp_path: Path) -> None:
    async def scenario(kafka: MemoryKafka) -> None:
        store = store_of(kafka)
        db = store.partition_db(2)
        events = [changelog_event(2, 0, b"k1", b"old owner", 5),
                  changelog_event(2, 1, b"k2", b"old owner", 5),
                  changelog_event(2, 2, b"k1", b"new owner", 6),
                  changelog_event(2, 3, b"k2", b"stalled old owner", 5),  # after the new owner's: skipped
                  changelog_event(2, 4, b"k3", b"no header", None),
                  changelog_event(2, 5, b"k2", None, 6)]
        store.apply_changelog_batch(events[:3], lambda k: k, lambda v: v)
        assert store.generation(2) == 6
        store.apply_changelog_batch(events[3:], lambda k: k, lambda v: v)  # a later batch still knows generation 6
        assert (db.get(b"k1"), db.get(b"k2"), db.get(b"k3")) == (b"new owner", None, b"no header")
        assert db.get(store.offset_key) == b"5" and db.get(GENERATION_KEY) == (6).to_bytes(8, "big")
        assert record_generation(events[0].message.headers) == 5 and record_generation([]) is None
        assert [record_generation([(GENERATION_HEADER, generation_bytes(g))]) for g in (0, 255, 256, 70_000)] \
            == [0, 255, 256, 70_000]
        assert [k for k, _ in store.scan(2, b"", b"\xff" * 40)] == [b"k1", b"k3"]  # bookkeeping keys not scanned

    in_memory(settings_for(tmp_path), scenario)


@pytest.mark.parametrize("index_processes", [0, 1])
def test_an_unreadable_internal_record_is_one_dead_letter_and_the_rest_of_its_take_is_decided(
        tmp_path: Path, index_processes: int) -> None:
    urls = [f"https://news.example/story/{i}" for i in range(6)]

    async def scenario(kafka: MemoryKafka) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
        bad_gather = kafka.send(GATHER, b"\x93not msgpack at all", partition=0)
        bad_probes = kafka.send(PROBES, b"\x92\x03\x91\x95\x01", partition=1)  # a probe of the wrong shape
        for url in urls:
            publish(kafka, article(url))
        await kafka.run()
        dead = [orjson.loads(r.value) for r in kafka.records(REJECTED) if r.value is not None]
        assert {(d["topic"], d["partition"], d["offset"]) for d in dead} == {
            (bad_gather.topic, 0, bad_gather.offset), (bad_probes.topic, 1, bad_probes.offset)}
        return latest(kafka), dead

    decided, dead = in_memory(settings_for(tmp_path, index_processes=index_processes), scenario)
    assert set(decided) == set(urls)
    assert sorted(d["verdict"] for d in decided.values()) == ["exact_duplicate"] * 5 + ["unique"]
    assert {d["stage"] for d in dead} == {"gather", "index"}
