"""A record the worker's consumer fetched and then dropped without a word, as faust-streaming 0.15 can
(`streams.redelivery`), at the end of a backlog, where no later record of its partition comes to show
the gap: the worker holds the partition fetched to its end and never processes that record. Seen in
CI as a worker on an empty disk that never read the last 16 records of one `pages.fetched` partition.

`NEARDUP_FAULT_DROP_FETCHED` makes the consumer drop one named record once, as Faust drops one. With
the stall check off the record's page is never decided and the group's offset stays before it (the
fault is real); with it on (`NEARDUP_STALL_CHECK_S`) the worker finds the partition holding records
that nothing processes, reads it again from its committed offset and decides the page; G1-G3 hold."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import orjson
import pytest

from neardup_core.testing.synthetic import generate_crawl
from streams.devcluster import Cluster, ClusterError, all_complete, latest_by_url
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
    pipeline.worker_env = {**pipeline.worker_env, "NEARDUP_STALL_CHECK_S": "3",
                           "NEARDUP_FAULT_DROP_FETCHED": f"pages.fetched:{partition}:{offset}"}
    pipeline.start_worker("a")
    try:
        decisions = pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events}), timeout_s=240)
    except ClusterError as exc:
        raise AssertionError(f"the page of the dropped record {url} was not decided:\n{exc}") from None
    log = pipeline.logs["a"].read_text()
    assert "fetched and dropped" in log
    assert f"{pipeline.topic('pages.fetched')}:{partition} holds records" in log
    assert pipeline.metric("a", "neardup_stalled_partitions_total") >= 1
    check_g1_g3(pipeline, events, decisions)
    pipeline.check_alive()
