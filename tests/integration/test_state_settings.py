"""The settings of the state on a real broker: the first worker of an app id records them in
`{app_id}-settings`; a worker of the same app id with another table design refuses to start (exit code 2,
one line naming the setting) before it makes a changelog or joins the group, while the first keeps deciding;
a restart with the same settings starts; workers racing to record agree on one record."""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from neardup_core.testing.synthetic import generate_crawl
from streams.dev import Cluster, all_complete
from streams.kafka.admin import StateSettingsDiffer, check_state_settings
from streams.settings import Settings
from tests.integration.checks import WORKER_ENV

pytestmark = pytest.mark.timeout(900)


def settings_records(bootstrap: str, app_id: str) -> list[bytes]:
    """The values of `{app_id}-settings`, from its start."""
    topic = f"{app_id}-settings"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{app_id}-test-reader",
                         "enable.auto.commit": False})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[bytes] = []
        while len(out) < high:
            msg = consumer.poll(10)
            assert msg is not None and not msg.error(), msg and msg.error()
            out.append(msg.value() or b"")
        return out
    finally:
        consumer.close()


def test_a_worker_of_another_design_refuses_to_join_and_the_first_keeps_deciding(
        pipeline: Cluster, kafka_bootstrap: str) -> None:
    events = generate_crawl(seed=21)
    third = len(events) // 3
    first, later, last = events[:third], events[third: 2 * third], events[2 * third:]
    pipeline.start_worker("a")  # NEARDUP_EXPECTED_PAGES 10^6: table design k3-b5-t10-l20x4-j75-p48-c50-s16
    pipeline.wait_balanced(["a"])
    pipeline.publish(first)
    pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in first}))

    other = Cluster(kafka_bootstrap, pipeline.prefix, pipeline.workdir,
                    worker_env={**WORKER_ENV, "NEARDUP_EXPECTED_PAGES": "1000"})  # k3-b4-t4-l20x4-j75-p48-c50-s16
    try:
        returncode = other.start_worker("b").wait(timeout=180)
    finally:
        other.stop_all()  # on the code before this check it runs, and would outlive the test
    log = other.logs["b"].read_text(errors="replace")
    assert returncode == 2, log
    refusals = [line for line in log.splitlines() if line.startswith("neardup worker: refusing to start")]
    assert len(refusals) == 1, log
    state_design, other_design = (Settings(partial_copies=True, expected_pages=n).core.design.name
                                  for n in (10**6, 1000))
    assert (state_design, other_design) == (  # WORKER_ENV
        "k3-b5-t10-l20x4-j75-p48-c50-s16", "k3-b4-t4-l20x4-j75-p48-c50-s16")
    assert (f"the table design is {state_design} in the state, {other_design} here "
            "(NEARDUP_EXPECTED_PAGES 1000000 there, 1000 here)") in refusals[0], refusals[0]
    assert "NEARDUP_APP_ID" in refusals[0]
    topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=20).topics
    assert f"{pipeline.app_id}-index-{other_design}-changelog" not in topics, "the refused worker made none"
    assert len(settings_records(kafka_bootstrap, pipeline.app_id)) == 1, "only the first worker recorded"

    pipeline.check_alive()
    pipeline.publish(later)  # published after the refusal: the first worker decides it
    pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in first + later}))

    pipeline.kill_worker("a", signal.SIGTERM)
    pipeline.start_worker("a")  # the same settings: it starts and decides again
    pipeline.wait_balanced(["a"])
    pipeline.publish(last)
    pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events}))
    assert len(settings_records(kafka_bootstrap, pipeline.app_id)) == 1, "a restart appends nothing"


def test_workers_starting_together_agree_on_the_first_record(kafka_bootstrap: str, unique_prefix: str) -> None:
    """Six workers' checks at once, three of each design, on an app id without a record: all append, all read
    the same first record, so the three of its design start and the three others refuse."""
    designs = [Settings(broker=kafka_bootstrap, app_id=unique_prefix, expected_pages=pages)
               for pages in (1000, 1_000_000) * 3]

    def check(settings: Settings) -> str:
        try:
            return str(check_state_settings(settings)["settings"]["design"])
        except StateSettingsDiffer as exc:
            return f"refused: {exc}"

    with ThreadPoolExecutor(len(designs)) as pool:
        outcomes = list(pool.map(check, designs))
    started = [o for o in outcomes if not o.startswith("refused")]
    assert len(started) == 3 and len(set(started)) == 1, outcomes
    winner = started[0]
    assert all(o.startswith("refused") for s, o in zip(designs, outcomes, strict=True)
               if s.core.design.name != winner), outcomes
    records = settings_records(kafka_bootstrap, unique_prefix)
    assert 1 <= len(records) <= 6 and f'"design": "{winner}"'.encode() in records[0]
    topic = f"{unique_prefix}-settings"  # made by the first of the checks: one partition, nothing deleted
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    assert len(admin.list_topics(timeout=20).topics[topic].partitions) == 1
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=20)
    assert {name: configs[name].value for name in ("cleanup.policy", "retention.ms", "retention.bytes")} == {
        "cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}


def test_an_index_from_before_the_record_keeps_its_design(kafka_bootstrap: str, unique_prefix: str,
                                                          tmp_path: Path) -> None:
    """An app id with no recorded settings whose changelog of another design holds records (an index built
    before the settings were recorded) refuses a worker of a new design instead of recording it."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    old = f"{unique_prefix}-index-k3-b5-t10-l20x4-j75-changelog"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(old, 2, 1, config={"cleanup.policy": "compact"})])[old].result(timeout=60)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(old, key=b"k", value=b"v", partition=1)
    assert producer.flush(30) == 0
    with pytest.raises(StateSettingsDiffer, match=r"holds an index of table design k3-b5-t10-l20x4-j75 "
                                                  r"\(.*, 1 records\) and no recorded settings"):
        check_state_settings(Settings(broker=kafka_bootstrap, app_id=unique_prefix, expected_pages=1000))
    check_state_settings(Settings(broker=kafka_bootstrap, app_id=unique_prefix))  # the design of that index
