"""The worker's agents, wired by `create_app`, in this process and without a broker
(`tests/functional/memory_kafka.py`): pages through fingerprint -> gather -> index -> gather, the
decisions, revisions, dead letters, ticks and host signals they publish."""

from __future__ import annotations

import asyncio
import base64
import multiprocessing
import random
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

import faust
import orjson
import pytest
from faust.transport.producer import ProducerBuffer
from faust.types import TP

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import fingerprint_event
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import probes_for
from neardup_core.testing.oracle import oracle_from_fetches, rule_problems
from neardup_core.testing.synthetic import generate_crawl_with_truth
from neardup_core.timefmt import ms_to_rfc3339
from streams.agents import ALL_PENDING, Agents, FingerprintStage
from streams.app import PRODUCER_BATCH_BYTES, create_app
from streams.kafka import records
from streams.settings import Settings
from streams.state.commit import Take
from streams.state.stores import PrefixRocksStore, scan_partition
from streams.web import metrics
from tests.functional.memory_kafka import MemoryKafka

T = TypeVar("T")
PARTITIONS = 3
PREFIX = "t."
FETCHED, GATHER, PROBES, HOSTS = (f"{PREFIX}{n}" for n in ("pages.fetched", "neardup.gather", "neardup.probes",
                                                            "neardup.hosts"))
DECISIONS, SIGNALS, REJECTED = (f"{PREFIX}{n}" for n in ("dedup.decisions", "frontier.host-signals",
                                                          "pages.rejected"))


def settings_for(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(**{"broker": "127.0.0.1:9", "topic_prefix": PREFIX, "app_id": "neardup-agents-test",
                       "data_dir": tmp_path / "data", "extract_processes": 0, "batch_wait_s": 0.02, **overrides})


def in_memory(settings: Settings, scenario: Callable[[MemoryKafka], Awaitable[T]],
              partitions: int = PARTITIONS) -> T:
    """Run `scenario` against a fresh app's agents; its result."""

    async def main() -> T:
        kafka = MemoryKafka(create_app(settings, partitions), partitions)
        agents_of(kafka).fail = raise_failure  # not the worker's stop: this process is pytest
        async with kafka.running():
            return await scenario(kafka)

    return asyncio.run(main())


def raise_failure(what: str, exc: BaseException) -> NoReturn:
    raise AssertionError(f"{what} failed: {exc!r}") from exc


def agents_of(kafka: MemoryKafka) -> Agents:
    """The `Agents` whose methods the app runs."""
    owner = kafka.app.agents["streams.agents.gather"].fun.__self__  # type: ignore[attr-defined]
    assert isinstance(owner, Agents)
    return owner


def publish(kafka: MemoryKafka, event: dict[str, Any] | bytes, *, key: bytes | None = None,
            timestamp: float | None = 1_780_000_000.0) -> None:
    """A crawler's record on pages.fetched, keyed by URL unless `key` says otherwise."""
    raw = event if isinstance(event, bytes) else orjson.dumps(event)
    if key is None and isinstance(event, dict):
        key = str(event["url"]).encode()
    kafka.send(FETCHED, raw, key=key, timestamp=timestamp)


def decisions(kafka: MemoryKafka) -> list[dict[str, Any]]:
    return [orjson.loads(r.value) for r in kafka.records(DECISIONS) if r.value is not None]


def latest(kafka: MemoryKafka) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for d in decisions(kafka):
        if d["url"] not in out or d["revision"] >= out[d["url"]]["revision"]:
            out[d["url"]] = d
    return out


def waiting_pages(agents: Agents) -> int:
    """Pages with a pending deadline, over every partition of the urls table."""
    return sum(1 for p in range(PARTITIONS) for _ in scan_partition(agents.tables.urls, p, *ALL_PENDING))


def metric_values() -> dict[str, float]:
    """The worker's counters now (the registry is the process's, shared by the tests)."""
    names = [("neardup_pages_total", {}), ("neardup_probes_total", {}), ("neardup_revisions_total", {}),
             ("neardup_decisions_total", {"verdict": "unique"}), ("neardup_rejects_total", {"stage": "validate"}),
             ("neardup_decision_seconds_count", {})]
    return {name: metrics.REGISTRY.get_sample_value(name, labels) or 0.0 for name, labels in names}


ARTICLE = next(e for e, t in zip(*generate_crawl_with_truth(seed=5), strict=True) if t.kind == "original")


def article(url: str, **fields: Any) -> dict[str, Any]:
    """An event with the body of a generated news article, at `url`."""
    return {"url": url, "body": ARTICLE["body"], "fetched_at": "2026-11-03T08:00:00Z",
            "content_type": "text/html; charset=utf-8", **fields}


def test_create_app_wires_without_a_broker_and_leaves_faust_classes_alone(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def no_admin(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("create_app asked the broker")

    monkeypatch.setattr("confluent_kafka.admin.AdminClient", no_admin)
    settings = settings_for(tmp_path)
    app = create_app(settings, 5)  # (and nothing listens on 127.0.0.1:9)
    assert ProducerBuffer.max_messages == 100
    assert app.producer.buffer.max_messages == 100  # no table writes through Faust's send_soon buffer
    assert app.conf.producer_max_batch_size == PRODUCER_BATCH_BYTES
    by_topic = {a.channel.get_topic_name(): a for a in app.agents.values()}  # type: ignore[attr-defined]
    assert set(by_topic) == {FETCHED, GATHER, PROBES, HOSTS}
    assert all(a.concurrency == 1 for a in by_topic.values())
    tables = {name: cast(faust.Table, table) for name, table in app.tables.items()}
    assert set(tables) == {"urls", "hosts", f"index-{settings.core.design.name}"}
    index = tables[f"index-{settings.core.design.name}"].data
    assert isinstance(index, PrefixRocksStore) and index.prefix_bytes == settings.core.design.prefix_bytes
    for name in ("urls", "hosts"):  # every table is written by the commit protocol's store
        store = tables[name].data
        assert isinstance(store, PrefixRocksStore) and not store.prefix_bytes
    assert {t.partitions for t in tables.values()} == {5}


def test_the_web_views_serve_metrics_and_health(tmp_path: Path) -> None:
    class Consumer:
        def assignment(self) -> set[TP]:
            return {TP(GATHER, 1), TP(FETCHED, 0)}

    async def views() -> tuple[Any, Any, Any, Any]:
        app = create_app(settings_for(tmp_path), 5)
        app.consumer = Consumer()  # type: ignore[assignment]  # what a started worker's consumer says
        recovering = await app.web.views["/health"].get(None)
        app.tables.recovery.completed.set()  # what Faust does when the tables are recovered
        return (await app.web.views["/metrics"].get(None), recovering, await app.web.views["/health"].get(None),
                await app.web.views["/live"].get(None))

    metrics_page, recovering, health_page, live = asyncio.run(views())
    assert metrics_page.content_type == "text/plain" and b"neardup_pages_total" in metrics_page.body
    assert recovering.status == 503 and orjson.loads(recovering.body)["status"] == "recovering"
    assert health_page.status == 200 and live.status == 200
    health = orjson.loads(health_page.body)
    settings = settings_for(tmp_path)
    assert health == {"status": "ok", "ready": True, "app_id": settings.app_id, "design": settings.core.design.name,
                      "k": 3, "partitions": 5, "assigned": [f"{GATHER}:1", f"{FETCHED}:0"]}  # sorted


def test_a_page_goes_through_every_agent_and_is_decided_unique(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    event = article("https://news.example/story")

    async def scenario(kafka: MemoryKafka) -> MemoryKafka:
        publish(kafka, event)
        await kafka.run()
        return kafka

    before = metric_values()
    kafka = in_memory(settings, scenario)
    fetch = fingerprint_event(orjson.dumps(event), settings=settings.core)
    assert isinstance(fetch, Fetch) and fetch.simhash is not None and fetch.version is not None
    probe_records = kafka.records(PROBES)
    probes = [p for r in probe_records for p in records.decode_probes(r.value or b"")]
    assert sorted(p.lo for p in probes) == sorted(p.lo for p in probes_for(settings.core.design, fetch.version))
    assert all(records.partition_of(p.lo, PARTITIONS) == r.partition for r in probe_records
               for p in records.decode_probes(r.value or b""))
    assert len(probe_records) == len({records.partition_of(p.lo, PARTITIONS) for p in probes}), \
        "one probe record per index partition, whatever the number of tables"
    gathered = [records.decode_gather(r.value) for r in kafka.records(GATHER) if r.value]
    # the fetch, then the answers: in one record when the index step took the probe records together,
    # at most one record per index partition; one answer per take of the index agent (the partitions'
    # answers about the page put together), at most one per index partition
    assert 2 <= len(gathered) <= 1 + len(probe_records)
    assert 1 <= sum(len(g) for g in gathered[1:]) <= len(probe_records)
    assert {r.partition for r in kafka.records(GATHER)} == {kafka.log.partition_for(event["url"].encode())}
    [decision] = decisions(kafka)
    assert decision["url"] == event["url"] and decision["host"] == "news.example"
    assert (decision["verdict"], decision["duplicate_of"], decision["distance"]) == ("unique", None, None)
    assert (decision["revision"], decision["complete"]) == (1, True)
    assert decision["fetched_at"] == "2026-11-03T08:00:00.000Z"
    assert decision["text_sha256"] == fetch.text_sha256 and decision["body_sha256"] == fetch.body_sha256
    assert [r.key for r in kafka.records(DECISIONS)] == [event["url"].encode()]
    [change] = kafka.records(HOSTS)
    assert change.partition == records.partition_of(b"news.example", PARTITIONS)
    [(host_decision, previous)] = records.decode_host_changes(change.value or b"")
    assert host_decision.to_json() == kafka.records(DECISIONS)[0].value and previous is None
    assert not kafka.records(REJECTED)
    after = metric_values()
    assert {name: after[name] - before[name] for name in after} == {
        "neardup_pages_total": 1, "neardup_probes_total": len(probes), "neardup_decisions_total": 1,
        "neardup_revisions_total": 0, "neardup_rejects_total": 0, "neardup_decision_seconds_count": 1}


def test_the_same_body_at_a_worse_url_is_an_exact_duplicate_of_the_first(tmp_path: Path) -> None:
    best, worse = "https://news.example/story", "http://news.example/a/b/story?ref=feed"

    async def scenario(kafka: MemoryKafka) -> dict[str, dict[str, Any]]:
        publish(kafka, article(best))
        await kafka.run()
        publish(kafka, article(worse))
        await kafka.run()
        return latest(kafka)

    got = in_memory(settings_for(tmp_path), scenario)
    assert (got[best]["verdict"], got[best]["duplicate_of"]) == ("unique", None)
    assert (got[worse]["verdict"], got[worse]["duplicate_of"], got[worse]["distance"]) == \
        ("exact_duplicate", best, 0)
    assert got[worse]["revision"] == 1 and got[worse]["complete"]


def test_a_better_url_arriving_later_revises_the_first_decision(tmp_path: Path) -> None:
    best, worse = "https://news.example/story", "http://news.example/a/b/story?ref=feed"

    async def scenario(kafka: MemoryKafka) -> list[dict[str, Any]]:
        publish(kafka, article(worse))
        await kafka.run()
        publish(kafka, article(best))
        await kafka.run()
        return decisions(kafka)

    out = in_memory(settings_for(tmp_path), scenario)
    of_worse = [(d["verdict"], d["duplicate_of"], d["revision"]) for d in out if d["url"] == worse]
    assert of_worse == [("unique", None, 1), ("exact_duplicate", best, 2)]
    assert [(d["verdict"], d["revision"]) for d in out if d["url"] == best] == [("unique", 1)]


def test_a_malformed_event_is_rejected_with_its_reason_stage_and_bytes(tmp_path: Path) -> None:
    bad = b'{"url": "https://bad.example/x", "body": '
    too_big = orjson.dumps({"url": "https://bad.example/big", "body": "x" * 6000})

    good = article("https://news.example/story")

    async def scenario(kafka: MemoryKafka) -> MemoryKafka:
        kafka.send(FETCHED, orjson.dumps(good), key=good["url"].encode(), partition=1)
        kafka.send(FETCHED, bad, key=b"https://bad.example/x", partition=1)  # offset 1 of partition 1
        kafka.send(FETCHED, too_big, key=b"https://bad.example/big", partition=2)
        publish(kafka, article("https://news.example/after"))  # the agent goes on
        await kafka.run()
        return kafka

    kafka = in_memory(settings_for(tmp_path, max_body_bytes=5000), scenario)
    rejected = {r.key: orjson.loads(r.value) for r in kafka.records(REJECTED) if r.value}
    assert set(rejected) == {b"https://bad.example/x", b"https://bad.example/big"}
    notjson = rejected[b"https://bad.example/x"]
    assert "not JSON" in notjson["error"] and notjson["stage"] == "validate"
    assert (notjson["topic"], notjson["partition"], notjson["offset"]) == (FETCHED, 1, 1)
    assert base64.b64decode(notjson["raw_b64"]) == bad
    big = rejected[b"https://bad.example/big"]
    assert "cap" in big["error"] and big["stage"] == "validate"
    assert (big["topic"], big["partition"], big["offset"]) == (FETCHED, 2, 0)
    assert base64.b64decode(big["raw_b64"]) == too_big
    got = latest(kafka)
    assert set(got) == {good["url"], "https://news.example/after"}, "no decision for a rejected event"
    assert sorted((d["verdict"], d["duplicate_of"]) for d in got.values()) == \
        [("exact_duplicate", "https://news.example/after"), ("unique", None)]  # the same body; the URL decides


def test_an_event_without_fetched_at_is_decided_at_its_record_timestamp(tmp_path: Path) -> None:
    event = article("https://news.example/story")
    del event["fetched_at"]

    async def scenario(kafka: MemoryKafka) -> dict[str, dict[str, Any]]:
        publish(kafka, event, timestamp=1_780_000_123.456)
        await kafka.run()
        return latest(kafka)

    got = in_memory(settings_for(tmp_path), scenario)
    assert got[event["url"]]["fetched_at"] == ms_to_rfc3339(1_780_000_123_456) == "2026-05-28T20:28:43.456Z"
    assert got[event["url"]]["verdict"] == "unique"


def test_a_tick_past_the_deadline_decides_provisionally_and_late_answers_complete_it(tmp_path: Path) -> None:
    event = article("https://news.example/story")

    async def scenario(kafka: MemoryKafka) -> tuple[list[dict[str, Any]], int, list[dict[str, Any]], int]:
        agents = agents_of(kafka)
        publish(kafka, event)
        await kafka.run(hold=[PROBES])  # the probes wait; the page waits for their answers
        assert not decisions(kafka) and waiting_pages(agents) == 1
        await asyncio.sleep(0.05)  # past the deadline (decision timeout 10 ms)
        await agents.send_ticks()
        ticks = [r.partition for r in kafka.records(GATHER) if all(isinstance(m, int) for m in
                                                                     records.decode_gather(r.value or b""))]
        await kafka.run(hold=[PROBES])
        provisional = decisions(kafka)
        waiting = waiting_pages(agents)
        await kafka.run()  # the answers come after all
        return provisional, waiting, decisions(kafka), len(ticks) if sorted(ticks) == [0, 1, 2] else -1

    provisional, waiting, final, ticks = in_memory(settings_for(tmp_path, decision_timeout_s=0.01), scenario)
    assert ticks == PARTITIONS, "one tick per gather partition"
    assert [(d["verdict"], d["complete"], d["revision"]) for d in provisional] == [("unique", False, 1)]
    assert waiting == 0
    assert [(d["verdict"], d["complete"], d["revision"]) for d in final] == \
        [("unique", False, 1), ("unique", True, 2)]



def test_pending_pages_counts_every_gather_partition_of_the_worker(tmp_path: Path) -> None:
    """`neardup_pending_pages` is the pages waiting in all the worker's gather partitions, not the count of
    whichever partition ticked last."""
    urls = [f"https://news{i}.example/story" for i in range(8)]

    async def scenario(kafka: MemoryKafka) -> tuple[int, set[int], float]:
        agents = agents_of(kafka)
        for url in urls:
            publish(kafka, article(url))
        await kafka.run(hold=[PROBES])  # the probes wait; every page waits for its answers
        await agents.send_ticks()
        await kafka.run(hold=[PROBES])
        gauge = metrics.REGISTRY.get_sample_value("neardup_pending_pages") or 0.0
        parts = {agents.partition_of(url_identity(u).encode()) for u in urls}
        return waiting_pages(agents), parts, gauge

    waiting, parts, gauge = in_memory(settings_for(tmp_path), scenario)
    assert waiting == len(urls) and len(parts) >= 2  # the pages wait in more than one partition
    assert gauge == waiting


def test_a_trap_host_gets_a_signal_with_its_penalty(tmp_path: Path) -> None:
    urls = [f"https://trap.example/calendar?day={i}&sid={i * 7919 % 1000}" for i in range(40)]

    async def scenario(kafka: MemoryKafka) -> list[dict[str, Any]]:
        for url in urls:
            publish(kafka, article(url))
        await kafka.run()
        return [orjson.loads(r.value) for r in kafka.records(SIGNALS) if r.value]

    signals = in_memory(settings_for(tmp_path), scenario)
    assert signals and {s["host"] for s in signals} == {"trap.example"}
    first = signals[0]  # sent when the penalty reached the policy's threshold
    assert first["penalty"] >= settings_for(tmp_path).core.host_policy.up and first["budget_factor"] < 1
    assert first["same_host_duplicates"] == first["exact_duplicates"] == first["pages"] - 1
    assert {(r["kind"], r["param"]) for r in first["url_rules"]} >= {("ignore_query_param", "sid")}


@pytest.mark.parametrize(("seed", "minhash", "index_processes"),
                         [(1, False, 1), (2, False, 2), (1, True, 1), (2, True, 2), (3, True, 0)])
def test_a_shuffled_crawl_over_three_partitions_is_decided_as_the_oracle_decides(tmp_path: Path, seed: int,
                                                                                 minhash: bool,
                                                                                 index_processes: int) -> None:
    """With the index step in one or two processes (reading replicas) and in the event loop (the table)."""
    events, truth = generate_crawl_with_truth(seed=11)
    rng = random.Random(seed)
    sample = rng.sample(events, 70)

    async def scenario(kafka: MemoryKafka) -> dict[str, dict[str, Any]]:
        for i in range(0, len(sample), 20):  # in a few waves, so some pages meet others in flight
            for event in sample[i:i + 20]:
                publish(kafka, event)
            await kafka.run()
        return latest(kafka)

    got = in_memory(settings_for(tmp_path, minhash=minhash, index_processes=index_processes), scenario)
    settings = settings_for(tmp_path, minhash=minhash)
    lsh = settings.core.design.lsh
    assert (lsh is not None) == minhash
    fetches = [f for e in sample if isinstance(f := fingerprint_event(orjson.dumps(e), settings=settings.core),
                                                 Fetch)]
    expected = oracle_from_fetches(fetches, settings.k, lsh)
    assert rule_problems({u: (d["verdict"], d["duplicate_of"], d["distance"], d["jaccard"])
                          for u, d in got.items()}, fetches, settings.k, lsh=lsh) == []
    assert {v for v, _, _ in expected.values()} >= {"unique", "exact_duplicate", "near_duplicate"}
    assert all(d["complete"] for d in got.values())


def test_the_fingerprint_agent_uses_a_process_pool_while_it_runs(tmp_path: Path) -> None:
    event = article("https://news.example/story")

    async def scenario(kafka: MemoryKafka) -> tuple[dict[str, dict[str, Any]], int]:
        publish(kafka, event)
        await kafka.run()
        return latest(kafka), len(multiprocessing.active_children())

    got, children = in_memory(settings_for(tmp_path, extract_processes=1, index_processes=0), scenario)
    assert got[event["url"]]["verdict"] == "unique"
    assert children == 1
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not multiprocessing.active_children(), "the pool is shut down with the agent"


def test_the_index_step_runs_in_its_own_process_on_a_replica_that_follows_every_write(tmp_path: Path) -> None:
    """Copies published one at a time: each take's probes are looked up in the index process after
    the writes of the takes before were applied to the table, so every copy finds the first."""
    url = "https://news.example/story"
    event = article(url)
    copies = [{**event, "url": f"https://mirror{i}.example/story"} for i in range(4)]

    async def scenario(kafka: MemoryKafka) -> tuple[dict[str, dict[str, Any]], list[str]]:
        names = []
        for e in [event, *copies]:
            publish(kafka, e)
            await kafka.run()
            names += [p.name for p in multiprocessing.active_children()]
        return latest(kafka), names

    got, children = in_memory(settings_for(tmp_path, index_processes=1), scenario)
    verdicts = sorted(got[e["url"]]["verdict"] for e in [event, *copies])
    assert verdicts == ["exact_duplicate"] * 4 + ["unique"], got
    assert children and len(set(children)) == 1, "one index process (as asked), kept between takes"
    replicas = list((tmp_path / "data").rglob("*.db.replica"))
    assert replicas, "the index process read the partitions as RocksDB secondaries"
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not multiprocessing.active_children(), "the index process stops with the agent"


def test_sends_go_out_at_once_even_when_faust_would_publish_on_commit(tmp_path: Path) -> None:
    """With Faust's `stream_publish_on_commit`, a send without `force=True` waits for the commit of
    its source offset (a commit interval per hop; here, where nothing commits, for ever)."""
    event = article("https://news.example/story")

    async def scenario(kafka: MemoryKafka) -> MemoryKafka:
        kafka.app.conf.stream_publish_on_commit = True  # before the first send reads it
        publish(kafka, event)
        publish(kafka, b"{not json", key=b"https://bad.example/")
        await kafka.run()
        return kafka

    kafka = in_memory(settings_for(tmp_path), scenario)
    got = latest(kafka)
    assert (got[event["url"]]["verdict"], got[event["url"]]["complete"]) == ("unique", True)
    assert [d.host for r in kafka.records(HOSTS) for d, _ in records.decode_host_changes(r.value or b"")] == \
        ["news.example"]
    assert [r.key for r in kafka.records(REJECTED)] == [b"https://bad.example/"]


def test_a_batch_is_acknowledged_after_its_commit_while_the_next_is_extracted(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The fingerprint agent extracts batch 2 while batch 1's outputs are committed, and batch 1's
    records are acknowledged (their offsets free to commit) only once its commit returned."""
    token = random.randrange(1 << 60)  # bodies no earlier test left in the fingerprint memo
    first, second = (article(url, body=f"{ARTICLE['body']}<p>{name} {token}</p>")
                     for url, name in (("https://news.example/one", "one"), ("https://other.example/two", "two")))
    release = asyncio.Event()
    extracted: list[int] = []
    finished: list[list[faust.types.EventT]] = []
    commit, jobs, finish = Take.commit, FingerprintStage._fingerprint_jobs, FingerprintStage._finish_batch

    async def held_commit(self: Take) -> None:
        if any(name.endswith("neardup.gather") for name, _ in self.outputs) and not release.is_set():
            await release.wait()  # the first fingerprint batch's commit, until the test lets it go
        await commit(self)

    async def counted_jobs(self: FingerprintStage, batch: list[Any]) -> list[Any]:
        extracted.append(len(batch))
        return await jobs(self, batch)

    async def recorded_finish(self: FingerprintStage, take: Take, events: Any, *args: Any) -> None:
        finished.append(list(events))
        await finish(self, take, events, *args)

    monkeypatch.setattr(Take, "commit", held_commit)
    monkeypatch.setattr(FingerprintStage, "_fingerprint_jobs", counted_jobs)
    monkeypatch.setattr(FingerprintStage, "_finish_batch", recorded_finish)

    async def scenario(kafka: MemoryKafka) -> tuple[list[bool], list[int], list[bool], dict[str, dict[str, Any]]]:
        publish(kafka, first)
        publish(kafka, second)  # with batch_max 1, the second batch
        running = asyncio.ensure_future(kafka.run())
        deadline = time.monotonic() + 10
        while (len(extracted) < 2 or not finished) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        held = [e.message.acked for e in finished[0]]
        counts = list(extracted)
        release.set()
        await running
        return held, counts, [e.message.acked for e in finished[0]], latest(kafka)

    held, counts, acked, got = in_memory(settings_for(tmp_path, batch_max=1), scenario)
    assert counts == [1, 1], "batch 2 was extracted while batch 1's commit was held"
    assert held == [False], "batch 1 acknowledged before its commit returned"
    assert acked == [True]
    assert got[first["url"]]["complete"] and got[second["url"]]["complete"]
