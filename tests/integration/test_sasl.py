"""A broker that authenticates its clients (SASL_PLAINTEXT, PLAIN; `deploy/local-kafka start --config`,
its only client listener a SASL one): with the right credentials a worker decides a crawl as the oracle
and `scan` do; with a wrong password `topics create`, `worker`, `publish` and `tail` each say that the
broker refused the login, in the client library's words, at once and with exit code 1, not that Kafka
cannot be reached."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from neardup_core.testing.synthetic import generate_crawl
from streams.devcluster import Broker, BrokerUnavailable, Cluster, ClusterError, all_complete, start_broker, stop_broker
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
    started = time.monotonic()
    result = neardup(args, env, tmp_path)
    took = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Kafka at {sasl_broker.bootstrap} refused the login of NEARDUP_SASL_USERNAME='{USER}' "
                           "(SASL_PLAINTEXT, PLAIN): "), result.stderr
    assert "Authentication failed" in last  # librdkafka's own words, from the broker's answer
    assert "cannot reach" not in result.stderr and "Traceback" not in result.stderr
    assert took < 12, f"{took:.1f} s: the refusal waited for the transport timeout"


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
