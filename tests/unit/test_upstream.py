"""The upstream code the worker relies on beyond Faust's public API, pinned: the versions installed are the
ones pyproject.toml pins, and the source of each upstream function that a module here copies, overrides
or depends on the behaviour of is the source it was written against. When a test here fails after an
upgrade, re-read the upstream function against the module named in its row, then update the digest."""

from __future__ import annotations

import hashlib
import inspect
import re
import tomllib
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer as KafkaConsumer
from aiokafka import AIOKafkaProducer
from aiokafka.consumer.fetcher import Fetcher
from faust.app.base import App
from faust.stores.rocksdb import Store
from faust.streams import Stream
from faust.tables.recovery import Recovery
from faust.transport.consumer import Consumer, ThreadDelegateConsumer
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Producer
from faust.transport.drivers.aiokafka import Consumer as AIOKafkaConsumer
from mode.utils.queues import FlowControlEvent, ThrowableQueue

ROOT = Path(__file__).resolve().parents[2]
PINNED = ("faust-streaming", "aiokafka", "mode-streaming", "rocksdict")

UPSTREAM: list[tuple[Callable[..., Any], str, str]] = [
    (Consumer.getmany, "4b168d84882a70d6",
     "streams/kafka/redelivery.py: RedeliveringConsumer.getmany is an edited copy (it seeks back what it drops)"),
    (Consumer._drain_messages, "44a2500309e83c63",
     "streams/kafka/redelivery.py: missing_before mirrors how its fetch loop counts a gap as processed"),
    (Recovery._resume_streams, "d986a6710c1aca98",
     "streams/kafka/redelivery.py: RedeliveringQueue; it resumes the stream partitions, awaits their seek while the "
     "fetcher runs, then resumes the flow, which clears the queues"),
    (Recovery._restart_recovery.fun, "6bd8a8558a2dffe4",  # type: ignore[attr-defined]  # mode's ServiceTask
     "streams/kafka/redelivery.py: RedeliveringQueue; the recovery resumes the flow to read changelogs"),
    (FlowControlEvent.resume, "4dcdc1253fd0dcb4",
     "streams/kafka/redelivery.py: RedeliveringQueue; every resume clears the managed queues"),
    (ThrowableQueue.clear, "d18f09e451acf62e",
     "streams/kafka/redelivery.py: RedeliveringQueue.clear reads the queue before calling it"),
    (App.FlowControlQueue, "9451c49351ae3667",
     "streams/app.py: NeardupApp.FlowControlQueue returns a RedeliveringQueue made as it makes its queue"),
    (ThreadDelegateConsumer._seek, "4f95c631420410a5",
     "streams/kafka/redelivery.py: RedeliveringConsumer.redeliver seeks through the consumer thread as it does"),
    (AIOKafkaConsumerThread.seek, "1498560d05f02582",
     "streams/kafka/redelivery.py: CommittingThread.seek runs it on the consumer thread's loop"),
    (Fetcher.seek_to, "f0ba6aba6c22ef83",
     "streams/kafka/redelivery.py: CommittingThread.seek; it deletes the partition's fetched records, which "
     "Fetcher.fetched_records drains on the consumer thread (so a seek runs there)"),
    (App._new_consumer, "bff6ccd646b71ea9",
     "streams/app.py: NeardupApp._new_consumer chooses the consumer class there"),
    (Consumer._new_offset, "1d2c7ea89a7ad4f1",
     "streams/kafka/redelivery.py: RedeliveringConsumer._new_offset holds a commit whose head record was fetched "
     "and not acknowledged, which this one lets pass (min(acked) - committed > 1; no check with nothing committed)"),
    (Consumer.on_partitions_revoked, "d04b7ae72c6fc206",
     "streams/kafka/redelivery.py: RedeliveringConsumer.on_partitions_revoked forgets fetched offsets as this forgets "
     "the acknowledgements (_acked, _acked_index, _committed_offset) of revoked partitions"),
    (Consumer.track_message, "217d7f1399a4cd8e",
     "streams/kafka/redelivery.py: check_stalls takes a partition with unacked messages as busy"),
    (Consumer.ack, "5fcf41cf45153475",
     "streams/kafka/redelivery.py: check_stalls; an acked message leaves _unacked_messages (or is marked acked)"),
    (Stream._py_aiter, "3a48ee257a65435b",
     "streams/kafka/redelivery.py: check_stalls; a stream marks each message it takes unacked (inlined track_message)"),
    (Stream.take_events, "607d48aead118ba8",
     "streams/state/commit.py: a take's input is acked only when the agent asks for the next take, after Take.commit"),
    (Store._db_for_partition, "cb7e67d5f9efc4bc",
     "streams/state/stores.py: PrefixRocksStore opens and writes a partition's RocksDB through it"),
    (Store.apply_changelog_batch, "ea3344d369fc4ab5",
     "streams/state/stores.py: PrefixRocksStore.apply_changelog_batch replaces it (fencing, the older format)"),
    (Store.set_persisted_offset, "b4c811926678346e",
     "streams/state/stores.py: apply_local writes the persisted offset under offset_key as it does"),
    (Store.persisted_offset, "6f2e502fb86043a1",
     "streams/state/stores.py: recovery resumes from the offset apply_local writes, read back here"),
    (AIOKafkaConsumerThread._commit, "932852ce7a23f658",
     "streams/kafka/redelivery.py: CommittingThread._commit is a copy that builds the assignment set once"),
    (AIOKafkaConsumerThread._create_worker_consumer, "c2701bfc3e6f6cad",
     "streams/kafka/redelivery.py: CommittingThread._create_worker_consumer sets the fetch limits on the consumer "
     "it makes"),
    (KafkaConsumer.start, "2f1ba70443327538",
     "streams/kafka/redelivery.py: CommittingThread; the fetcher is made from the consumer's _fetch_min_bytes and "
     "_fetch_max_wait_ms when it starts"),
    (AIOKafkaConsumer._new_consumer_thread, "0870ec53dea75083",
     "streams/kafka/redelivery.py: RedeliveringConsumer._new_consumer_thread makes a CommittingThread as it does"),
    (Producer._ensure_producer, "5592a4bbdf251325",
     "streams/state/commit.py: record_batches reaches the aiokafka producer under Faust's through it"),
    (AIOKafkaProducer.send_batch, "bf42b0f0c5c0646d",
     "streams/state/commit.py: produce_batches; its future gives the batch's first offset, the rest follow on"),
    (AIOKafkaProducer.create_batch, "c4efda4bb7a09741",
     "streams/state/commit.py: produce_batches fills a batch up to the producer's max_batch_size"),
]


def source_digest(fn: Callable[..., Any]) -> str:
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]


def pins() -> dict[str, str]:
    """The exact versions pyproject.toml pins, by distribution name."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    out = {}
    for dep in deps:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?==([^,;\s]+)", dep.strip())
        if m:
            out[m.group(1)] = m.group(3)
    return out


@pytest.mark.parametrize("name", PINNED)
def test_the_engine_is_pinned_and_installed_at_its_pin(name: str) -> None:
    pinned = pins()
    assert name in pinned, f"{name} must be pinned with == in pyproject.toml"
    assert metadata.version(name) == pinned[name]


@pytest.mark.parametrize(("fn", "digest", "relied_on_by"), UPSTREAM,
                         ids=[f"{fn.__module__}.{fn.__qualname__}" for fn, _, _ in UPSTREAM])
def test_upstream_code_relied_on_is_unchanged(fn: Callable[..., Any], digest: str, relied_on_by: str) -> None:
    assert source_digest(fn) == digest, (
        f"{fn.__module__}.{fn.__qualname__} changed upstream; re-read it against {relied_on_by}")
