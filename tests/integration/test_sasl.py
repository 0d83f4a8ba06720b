"""A broker that authenticates its clients (SASL_PLAINTEXT, PLAIN; `deploy/local-kafka start --config`,
its only client listener a SASL one): with the right credentials a worker decides a crawl as the oracle
and `scan` do; with a wrong password `topics create`, `worker`, `publish` and `tail` each say that the
broker refused the login, in the client library's words, at once and with exit code 1, not that Kafka
cannot be reached; and the Scrapy publisher and the Scrapy loop's Kafka mode log the same sentence."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from neardup_core.testing.synthetic import generate_crawl
from streams.dev import (
    Broker,
    BrokerUnavailable,
    Cluster,
    ClusterError,
    all_complete,
    start_broker,
    stop_broker,
)
from streams.settings import Settings
from tests.integration.checks import WORKER_ENV, check_g1_g3

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
USER, PASSWORD = "crawler", "right-password"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        f'password="admin-secret" user_admin="admin-secret" user_{USER}="{PASSWORD}";')
SASL_BROKER = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:@PORT@,CONTROLLER://127.0.0.1:@CONTROLLER_PORT@",
    "advertised.listeners": "SASL_PLAINTEXT://127.0.0.1:@PORT@",
    "inter.broker.listener.name": "SASL_PLAINTEXT",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
}


def client_settings(broker: Broker, password: str, topic_prefix: str = "") -> Settings:
    return Settings(broker=broker.bootstrap, topic_prefix=topic_prefix, security_protocol="SASL_PLAINTEXT",
                    sasl_mechanism="PLAIN", sasl_username=USER, sasl_password=password)


def refusal(broker: Broker) -> str:
    """How every command and the Scrapy components begin the sentence naming a refused login."""
    return f"Kafka at {broker.bootstrap} refused the login of NEARDUP_SASL_USERNAME='{USER}' (SASL_PLAINTEXT, PLAIN): "


def client_env(password: str) -> dict[str, str]:
    return {"NEARDUP_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "NEARDUP_SASL_MECHANISM": "PLAIN",
            "NEARDUP_SASL_USERNAME": USER, "NEARDUP_SASL_PASSWORD": password}


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    d = tmp_path_factory.mktemp("kafka-sasl")
    try:
        try:
            broker = start_broker(d, config=SASL_BROKER)
        except BrokerUnavailable as exc:  # no Java or Maven: as the session broker, a failure in CI
            if os.environ.get("CI"):
                pytest.fail(str(exc))
            pytest.skip(str(exc))
        except ClusterError as exc:
            pytest.fail(str(exc), pytrace=False)
        yield broker
    finally:
        stop_broker(d)


def neardup(args: list[str], env: dict[str, str], cwd: Path, timeout_s: float = 60.0) -> \
        subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env}, timeout=timeout_s,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("command", [["topics", "create"], ["worker"], ["publish", "EVENTS"],
                                     ["tail", "decisions", "--idle", "2"]])
def test_a_wrong_password_is_named_as_a_refused_login(sasl_broker: Broker, tmp_path: Path,
                                                      command: list[str]) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(orjson.dumps({"url": "https://a.example/", "body": "<p>a page</p>"}) + b"\n")
    args = [str(events) if a == "EVENTS" else a for a in command]
    env = {"NEARDUP_BROKER": sasl_broker.bootstrap, "NEARDUP_DATA_DIR": str(tmp_path / "data"),
           **client_env("wrong-password")}
    result = neardup(args, env, tmp_path)
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(refusal(sasl_broker)), result.stderr
    assert "Authentication failed" in last  # librdkafka's own words, from the broker's answer
    # not the transport failure at the end of the wait (15 s), which says "cannot reach": the refusal came first
    assert "cannot reach" not in result.stderr and "Traceback" not in result.stderr


def test_the_right_credentials_decide_a_crawl(sasl_broker: Broker, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in client_env(PASSWORD).items():  # this process's producer and consumer too
        monkeypatch.setenv(name, value)
    cluster = Cluster(sasl_broker.bootstrap, "nd-sasl", tmp_path, partitions=4,
                      worker_env={**WORKER_ENV, **client_env(PASSWORD)})
    try:
        cluster.create_topics()
        cluster.start_worker("a")
        cluster.wait_balanced(["a"])
        events = generate_crawl(seed=5)
        cluster.publish([orjson.dumps(e) for e in events])
        decisions = cluster.read_until("dedup.decisions", all_complete({e["url"] for e in events}))
        check_g1_g3(cluster, events, decisions)
    finally:
        cluster.stop_all()


def test_the_scrapy_publisher_names_a_refused_login_and_sends_nothing(sasl_broker: Broker,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """`PagePublisher.check_topic` (run when the spider opens) with a wrong password: the refused login
    in the publisher's error, and no page sent; with the right one it gets past the login to the topic
    check (no topics under this prefix)."""
    pytest.importorskip("scrapy")
    from scrapy.utils.test import get_crawler

    from streams.scrapy import PagePublisher

    stats = get_crawler().stats
    assert stats is not None
    wrong = PagePublisher(client_settings(sasl_broker, "wrong-password"), stats)
    with caplog.at_level(logging.WARNING, logger="streams.scrapy"):
        assert not wrong.check_topic(timeout_s=60)  # the refusal comes long before: not a transport timeout
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith(f"neardup: {refusal(sasl_broker)}") and "Authentication failed" in m and
               m.endswith("no page of this crawl is sent") for m in said), said
    assert not any("does not answer" in m for m in said), said
    assert wrong.not_sent == "the broker refused the login"
    wrong.refuse("https://a.example/", wrong.not_sent)
    assert stats.get_value("neardup/delivery_errors") == 1 and stats.get_value("neardup/produced") is None

    caplog.clear()
    right = PagePublisher(client_settings(sasl_broker, PASSWORD, topic_prefix="nd-sasl-none."), stats)
    with caplog.at_level(logging.WARNING, logger="streams.scrapy"):
        assert not right.check_topic(timeout_s=60)
    assert right.not_sent == "topic nd-sasl-none.pages.fetched does not exist", caplog.text
    assert "refused" not in caplog.text


def test_the_scrapy_loop_kafka_mode_names_a_refused_login(sasl_broker: Broker,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """The Kafka mode's consumer of decisions and host signals, with a wrong password: the refused
    login logged once, in the same words, instead of a crawl that waits for decisions that never come."""
    pytest.importorskip("scrapy")
    from streams.scrapy import KafkaSource

    with caplog.at_level(logging.ERROR, logger="streams.scrapy"):
        source = KafkaSource(client_settings(sasl_broker, "wrong-password"), on_decision=lambda _: None)
        try:
            deadline = time.monotonic() + 60
            while source.refused is None and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            source.close()
    assert source.refused is not None and source.refused.startswith(refusal(sasl_broker)), caplog.text
    assert "Authentication failed" in source.refused
    said = [r.getMessage() for r in caplog.records if "refused the login" in r.getMessage()]
    assert said == [f"neardup: {source.refused}; no decision is read"]
