"""The broker under the integration tests: a real Kafka, checked with confluent-kafka.

These guard the assumptions the Faust app makes of the broker (deploy/local-kafka or NEARDUP_TEST_BROKER):
topics can be created and read back in order, compacted topics (dedup.decisions, host signals, table
changelogs) are really compacted, transactions work on a single node, and the local broker carries the
single-node settings Faust needs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from streams.dev import LOCAL_KAFKA

if TYPE_CHECKING:
    from streams.dev import Broker

pytestmark = pytest.mark.timeout(300)


@dataclass(frozen=True)
class Record:
    key: str
    value: str
    partition: int
    offset: int


def record(msg: Message) -> Record:
    key, value, partition, offset = msg.key(), msg.value(), msg.partition(), msg.offset()
    assert key is not None and value is not None and partition is not None and offset is not None
    return Record(key.decode(), value.decode(), partition, offset)


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None,
                 ) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
    admin.create_topics([new], operation_timeout=30)[name].result(timeout=60)


def produce(bootstrap: str, topic: str, records: list[tuple[str, str]]) -> list[Record]:
    """Sends `records` (key, value) and returns their delivery reports; fails on any delivery error."""
    reports: list[Record] = []
    errors: list[KafkaError] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(err)
        else:
            reports.append(record(msg))

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for key, value in records:
        producer.produce(topic, key=key.encode(), value=value.encode(), on_delivery=delivered)
    assert producer.flush(60) == 0, "messages still in flight after 60 s"
    assert errors == []
    return reports


def consume(bootstrap: str, topic: str, group: str, expected: int, timeout: float = 60,
            config: dict[str, str] | None = None) -> list[Record]:
    """Subscribes as a new group from the earliest offset and returns the first `expected` messages,
    checking that no more follow."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, **(config or {})})
    consumer.subscribe([topic])
    got: list[Record] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append(record(msg))
        extra = consumer.poll(1.0)
        assert extra is None, f"an unexpected extra message: {extra.value()!r}"
    finally:
        consumer.close()
    return got


def read_partition(bootstrap: str, topic: str, partition: int = 0) -> list[Record]:
    """Every message currently in one partition, from its start to its high watermark (no group)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        got: list[Record] = []
        deadline = time.monotonic() + 30
        while high > low and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            got.append(record(msg))
            if got[-1].offset >= high - 1:
                break
        return got
    finally:
        consumer.close()


def test_produce_and_consume_round_trip(kafka_bootstrap: str, unique_prefix: str) -> None:
    topic = f"{unique_prefix}.pages"
    create_topic(kafka_bootstrap, topic, partitions=3)
    metadata = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(topic, timeout=30)
    assert sorted(metadata.topics[topic].partitions) == [0, 1, 2]

    n = 300
    sent = [(f"https://host{i % 7}.example/page/{i}", json.dumps({"seq": i, "body": "x" * (i % 50)}))
            for i in range(n)]
    reports = produce(kafka_bootstrap, topic, sent)
    assert len(reports) == n
    partition_of = {r.key: r.partition for r in reports}
    assert set(partition_of.values()) == {0, 1, 2}

    got = consume(kafka_bootstrap, topic, group=unique_prefix, expected=n)

    assert sorted((r.key, r.value) for r in got) == sorted(sent)
    by_partition: dict[int, list[Record]] = defaultdict(list)
    for r in got:
        assert r.partition == partition_of[r.key]
        by_partition[r.partition].append(r)
    for records in by_partition.values():
        # one producer, so each partition holds its messages in send order at offsets 0, 1, 2, ...
        assert [r.offset for r in records] == list(range(len(records)))
        seqs = [json.loads(r.value)["seq"] for r in records]
        assert seqs == sorted(seqs)


def test_compacted_topic_config_is_created_and_described(kafka_bootstrap: str, unique_prefix: str) -> None:
    topic = f"{unique_prefix}.decisions"
    wanted = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100",
              "delete.retention.ms": "1000"}
    create_topic(kafka_bootstrap, topic, partitions=2, config=wanted)

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)

    for name, value in wanted.items():
        assert entries[name].value == value
        assert entries[name].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value  # untouched: a default


def test_compaction_keeps_the_latest_value_of_each_key(kafka_bootstrap: str, unique_prefix: str) -> None:
    topic = f"{unique_prefix}.hosts"
    config = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100",
              "delete.retention.ms": "100"}
    create_topic(kafka_bootstrap, topic, config=config)
    keys, versions = 10, 20
    produce(kafka_bootstrap, topic, [(f"host{k}", f"v{v}") for v in range(versions) for k in range(keys)])
    time.sleep(0.5)
    # the cleaner never touches the active segment: this append rolls it (segment.ms has passed)
    produce(kafka_bootstrap, topic, [("roll", "-")])

    deadline = time.monotonic() + 90
    while True:
        msgs = read_partition(kafka_bootstrap, topic)
        if len(msgs) <= keys + 1 or time.monotonic() > deadline:
            break
        time.sleep(1)

    latest = {r.key: r.value for r in msgs}
    assert len(msgs) == keys + 1, f"not compacted after 90 s: {len(msgs)} of {keys * versions + 1} left"
    assert latest == {**{f"host{k}": f"v{versions - 1}" for k in range(keys)}, "roll": "-"}


def test_transactions_commit_and_abort(kafka_bootstrap: str, unique_prefix: str) -> None:
    topic = f"{unique_prefix}.changelog"
    create_topic(kafka_bootstrap, topic)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"{unique_prefix}-tx",
                         "transaction.timeout.ms": 30000})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, key=f"k{i}".encode(), value=b"committed")
    producer.commit_transaction(60)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, key=f"k{i}".encode(), value=b"aborted")
    producer.abort_transaction(60)

    got = consume(kafka_bootstrap, topic, group=unique_prefix, expected=5,
                  config={"isolation.level": "read_committed"})
    assert [(r.key, r.value) for r in got] == [(f"k{i}", "committed") for i in range(5)]


def test_local_broker_has_the_settings_faust_needs(kafka_broker: Broker, unique_prefix: str) -> None:
    if not kafka_broker.local:
        pytest.skip("checks deploy/local-kafka's settings; NEARDUP_TEST_BROKER is set")
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    expected = {
        "process.roles": "broker,controller",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "true",
        "log.cleaner.enable": "true",
        "log.cleaner.dedupe.buffer.size": "16777216",
        "advertised.listeners": f"PLAINTEXT://{kafka_broker.bootstrap}",
    }
    assert {name: entries[name].value for name in expected} == expected

    # auto.create.topics.enable in action: a first produce to an unknown topic creates it
    topic = f"{unique_prefix}.auto"
    produce(kafka_broker.bootstrap, topic, [("k", "v")])
    got = consume(kafka_broker.bootstrap, topic, group=unique_prefix, expected=1)
    assert [(r.key, r.value) for r in got] == [("k", "v")]


def test_local_kafka_start_on_a_running_dir_reports_it(kafka_broker: Broker) -> None:
    if not kafka_broker.local:
        pytest.skip("needs the broker started by deploy/local-kafka")
    for command in ("start", "status"):
        result = subprocess.run([str(LOCAL_KAFKA), command, "--dir", str(kafka_broker.dir)],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[-1] == kafka_broker.bootstrap
        assert "running" in result.stderr


def test_the_local_broker_runs_the_version_asked_for(kafka_broker: Broker) -> None:
    """NEARDUP_KAFKA_VERSION (unset: the script's default) reaches the JVM: Kafka's own version line says
    so, and asking the running broker's dir for another version is refused rather than answered by it."""
    if not kafka_broker.local:
        pytest.skip("needs the broker started by deploy/local-kafka")
    default = re.search(r'^DEFAULT_VERSION = "(.+)"$', LOCAL_KAFKA.read_text(), re.MULTILINE)
    assert default is not None
    wanted = os.environ.get("NEARDUP_KAFKA_VERSION") or default.group(1)
    assert f"Kafka version: {wanted} " in "\n".join(kafka_broker.started_lines())

    other = "4.1.1" if wanted.startswith("3.") else "3.9.2"
    result = subprocess.run([str(LOCAL_KAFKA), "start", "--dir", str(kafka_broker.dir), "--version", other],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and f"Kafka {wanted} is already running" in result.stderr, result.stderr


def test_local_kafka_refuses_a_version_it_cannot_run() -> None:
    for bad in ("2.8.1", "5.0.0", "4.1", "latest"):
        result = subprocess.run([str(LOCAL_KAFKA), "fetch", "--version", bad],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert result.returncode == 1, (bad, result.stderr)
        assert f"Kafka version {bad!r}: expected a 3.x.y or 4.x.y release" in result.stderr
