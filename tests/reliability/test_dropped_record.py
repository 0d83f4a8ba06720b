"""A record the worker's consumer fetched and then dropped without a word, as faust-streaming 0.15 can
(`streams.kafka.redelivery`), at the end of a backlog, where no later record of its partition comes to show
the gap: the worker holds the partition fetched to its end and never processes that record. Seen in
CI as a worker on an empty disk that never read the last 16 records of one `pages.fetched` partition.

`NEARDUP_FAULT_DROP_FETCHED` makes the consumer drop one named record once, as Faust drops one. With
the stall check off the record's page is never decided and the group's offset stays before it (the
fault is real); with it on (`NEARDUP_STALL_CHECK_S`) the worker finds the partition holding records
that nothing processes, reads it again from its committed offset and decides the page; G1-G3 hold."""

from __future__ import annotations

import signal
import time
from collections import Counter
from typing import Any

import orjson
import pytest

from neardup_core.testing.synthetic import generate_crawl
from streams.dev import Cluster, ClusterError, all_complete, latest_by_url
from tests.integration.checks import check_g1_g3
from tests.reliability.faults import produce

pytestmark = pytest.mark.timeout(600)


def publish_and_pick(pipeline: Cluster, seed: int) -> tuple[list[dict[str, Any]], int, int, str]:
    """Publishes a crawl; returns it and the partition, offset and URL of a partition's last record whose
    URL no other record carries (its page is decided only if that record is processed)."""
    events = generate_crawl(seed=seed)
    where = produce(pipeline, "pages.fetched", [(e["url"].encode(), orjson.dumps(e)) for e in events])
    once = {u for u, n in Counter(e["url"] for e in events).items() if n == 1}
    last: dict[int, tuple[int, str]] = {}
    for event, (partition, offset) in zip(events, where, strict=True):
        last[partition] = max(last.get(partition, (-1, "")), (offset, event["url"]))
    partition, (offset, url) = next((p, last[p]) for p in sorted(last) if last[p][1] in once)
    return events, partition, offset, url


def record_at(events: list[dict[str, Any]], where: list[tuple[int, int]], offsets: dict[int, int], *,
              among: list[dict[str, Any]]) -> tuple[int, int, str]:
    """A partition whose record at `offsets[partition]` carries a URL no other event `among` carries (decided
    only if that record is processed): the partition, the offset and the URL. `where`: each event's place."""
    once = {u for u, n in Counter(e["url"] for e in among).items() if n == 1}
    for event, (partition, at) in zip(events, where, strict=True):
        if at == offsets.get(partition) and event["url"] in once:
            return partition, at, event["url"]
    raise AssertionError(f"no partition's record at its offset {offsets} has a URL of its own")


def decided_though_dropped(pipeline: Cluster, events: list[dict[str, Any]], partition: int, offset: int,
                           url: str) -> str:
    """Worker `a`, with the stall check every 3 s, drops the record at `offset` of `pages.fetched:partition`
    once; every page, the dropped record's too, must be decided and G1-G3 hold. Returns a's log."""
    pipeline.worker_env = {**pipeline.worker_env, "NEARDUP_STALL_CHECK_S": "3",
                           "NEARDUP_FAULT_DROP_FETCHED": f"pages.fetched:{partition}:{offset}"}
    pipeline.start_worker("a")
    try:
        decisions = pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events}), timeout_s=240)
    except ClusterError as exc:
        raise AssertionError(f"the page of the dropped record {url} was not decided:\n{exc}") from None
    log = pipeline.logs["a"].read_text()
    assert "fetched and dropped" in log
    check_g1_g3(pipeline, events, decisions)
    pipeline.check_alive()
    return log


HELD = "was fetched and not acknowledged, and records after it were: not committed past it"


def test_without_the_stall_check_a_dropped_last_record_is_never_processed(pipeline: Cluster) -> None:
    events, partition, offset, url = publish_and_pick(pipeline, seed=43)
    pipeline.worker_env = {**pipeline.worker_env, "NEARDUP_STALL_CHECK_S": "0",
                           "NEARDUP_FAULT_DROP_FETCHED": f"pages.fetched:{partition}:{offset}"}
    pipeline.start_worker("a")
    others = {e["url"] for e in events} - {url}
    pipeline.read_until("dedup.decisions", all_complete(others), timeout_s=240)
    time.sleep(20)  # several commit intervals and fetches with nothing new
    decisions = pipeline.read_until("dedup.decisions", all_complete(others), timeout_s=60)
    assert "fetched and dropped" in pipeline.logs["a"].read_text()
    assert url not in latest_by_url(decisions), "the dropped record's page was decided: the fault did not happen"
    assert pipeline.group_lag().get(f"{pipeline.topic('pages.fetched')}:{partition}") == 1
    pipeline.check_alive()


def test_the_stall_check_reads_a_dropped_last_record_again(pipeline: Cluster) -> None:
    events, partition, offset, url = publish_and_pick(pipeline, seed=43)
    log = decided_though_dropped(pipeline, events, partition, offset, url)
    assert f"{pipeline.topic('pages.fetched')}:{partition} holds records" in log
    assert pipeline.metric("a", "neardup_stalled_partitions_total") >= 1


def test_a_dropped_first_record_of_a_new_group_is_read_again(pipeline: Cluster) -> None:
    """The first record of a partition the group has never committed, dropped, and the records after it
    handed on: Faust's commit takes the run of acknowledged offsets that follows as the new offset when
    nothing was committed before (`Consumer._new_offset`), so the group would commit past the record and
    no later look would see it. Expected: the page is decided."""
    events = generate_crawl(seed=47)
    where = produce(pipeline, "pages.fetched", [(e["url"].encode(), orjson.dumps(e)) for e in events])
    partition, offset, url = record_at(events, where, {p: 0 for p, _ in where}, among=events)
    assert f"record {offset} {HELD}" in decided_though_dropped(pipeline, events, partition, offset, url)


def test_a_dropped_record_at_the_committed_offset_is_read_again(pipeline: Cluster) -> None:
    """A worker restarted over a backlog drops the record at its partition's committed offset, the first it
    reads there, and hands on the ones after it: Faust's commit lets one record before the acknowledged run
    pass (`min(acked) - committed > 1`), so the group would commit past it. Expected: the page is decided."""
    events = generate_crawl(seed=53)
    half = len(events) // 2
    produce(pipeline, "pages.fetched", [(e["url"].encode(), orjson.dumps(e)) for e in events[:half]])
    pipeline.start_worker("a")
    pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events[:half]}), timeout_s=240)
    time.sleep(5)  # the commit interval: the group's offsets reach the end of the first half
    pipeline.kill_worker("a", signal.SIGTERM)
    rest = produce(pipeline, "pages.fetched", [(e["url"].encode(), orjson.dumps(e)) for e in events[half:]])
    fetched = pipeline.topic("pages.fetched") + ":"
    committed = {int(tp[len(fetched):]): c for tp, (c, _) in pipeline.uncommitted().items() if tp.startswith(fetched)}
    partition, offset, url = record_at(events[half:], rest, committed, among=events)
    assert f"record {offset} {HELD}" in decided_though_dropped(pipeline, events, partition, offset, url)


def test_transaction_markers_in_the_input_are_committed_over(pipeline: Cluster) -> None:
    """A crawler that writes `pages.fetched` in transactions leaves a marker after each one, an offset no
    fetch returns: the consumer's hold on unacknowledged records (`unacked_head`) must not take a marker
    for one. Every page is decided and the group commits every partition to its end."""
    from confluent_kafka import Producer

    events = generate_crawl(seed=59)
    producer = Producer({**pipeline.settings.confluent_config(), "transactional.id": f"{pipeline.app_id}-crawler"})
    producer.init_transactions(60)
    chunk = 20
    for start in range(0, len(events), chunk):
        producer.begin_transaction()
        for e in events[start:start + chunk]:
            producer.produce(pipeline.topic("pages.fetched"), key=e["url"].encode(), value=orjson.dumps(e))
        producer.commit_transaction(60)
    pipeline.start_worker("a")
    try:
        decisions = pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events}), timeout_s=240)
    except ClusterError as exc:
        raise AssertionError(f"not every page of a transactional input was decided:\n{exc}") from None
    check_g1_g3(pipeline, events, decisions)
    fetched = pipeline.topic("pages.fetched") + ":"
    deadline = time.monotonic() + 60
    while (behind := {tp: n for tp, n in pipeline.group_lag().items() if tp.startswith(fetched) and n > 1}) \
            and time.monotonic() < deadline:
        time.sleep(2)
    assert not behind, f"records of pages.fetched left uncommitted after a transactional input: {behind}"
    assert HELD not in pipeline.logs["a"].read_text()
    pipeline.check_alive()
