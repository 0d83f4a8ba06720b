"""Integration tests run against a real Apache Kafka broker.

Fixtures:

- ``kafka_broker`` / ``kafka_bootstrap`` (session): the broker, and its address ``"127.0.0.1:N"``. With
  ``NEARDUP_TEST_BROKER=host:port`` the tests use that running broker; otherwise ``deploy/local-kafka``
  starts one on a free port in a temporary directory and stops it when the session ends (also when tests
  fail or the run is interrupted with Ctrl-C). Its log path and its "Kafka Server started" line are printed
  in the terminal summary, so a CI log shows which broker the tests talked to.
- ``unique_prefix`` (function): a topic prefix / Faust app id / group id unique to one test, so tests can
  share a broker without seeing each other's topics and consumer groups.

Every test in this directory gets the ``broker`` marker: ``pytest -m "not broker"`` skips them.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LOCAL_KAFKA = ROOT / "deploy" / "local-kafka"
READY_LINE = "Kafka Server started"

_brokers: list[Broker] = []  # what this session used, for the terminal summary


@dataclass(frozen=True)
class Broker:
    bootstrap: str
    dir: Path | None  # None: an external broker from NEARDUP_TEST_BROKER
    startup: str = ""  # what `deploy/local-kafka start` said on stderr

    @property
    def log(self) -> Path | None:
        return self.dir / "kafka.log" if self.dir else None

    @property
    def local(self) -> bool:
        return self.dir is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.broker)


def _reachable(bootstrap: str) -> bool:
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=5):
            return True
    except (OSError, ValueError):
        return False


def _stop(d: Path) -> None:
    subprocess.run([str(LOCAL_KAFKA), "stop", "--dir", str(d)], stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=120, check=False)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    external = os.environ.get("NEARDUP_TEST_BROKER", "").strip()
    if external:
        if not _reachable(external):
            pytest.fail(f"NEARDUP_TEST_BROKER={external} does not accept connections")
        broker = Broker(external, None)
        _brokers.append(broker)
        yield broker
        return

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        message = "no Java: deploy/local-kafka needs Java 17 and Maven (or set NEARDUP_TEST_BROKER)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)

    d = tmp_path_factory.mktemp("kafka")
    try:
        result = subprocess.run([str(LOCAL_KAFKA), "start", "--port", "0", "--dir", str(d)],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
        lines = result.stdout.strip().splitlines()
        if result.returncode != 0 or not lines or not re.fullmatch(r"127\.0\.0\.1:\d+", lines[-1]):
            pytest.fail(f"deploy/local-kafka start failed (exit {result.returncode}):\n"
                        f"{result.stdout}{result.stderr}", pytrace=False)
        broker = Broker(lines[-1], d, result.stderr)
        _brokers.append(broker)
        yield broker
    finally:  # runs on test failures, a failed start and Ctrl-C alike
        _stop(d)


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: Broker) -> str:
    """``"127.0.0.1:N"``: bootstrap servers for confluent-kafka, aiokafka and Faust (``kafka://`` + it)."""
    return kafka_broker.bootstrap


@pytest.fixture
def unique_prefix(request: pytest.FixtureRequest) -> str:
    """E.g. ``nd-test-round-trip-3f2a9c1e``: letters, digits and dashes, so ``f"{prefix}.pages"`` is a
    valid topic name and the prefix a valid Faust app id / group id / transactional id."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    return f"nd-{name}-{uuid.uuid4().hex[:8]}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for broker in _brokers:
        terminalreporter.section("kafka broker", sep="-")
        if broker.log is None:
            terminalreporter.write_line(f"external broker {broker.bootstrap} (NEARDUP_TEST_BROKER)")
            continue
        terminalreporter.write_line(f"{broker.bootstrap} started by deploy/local-kafka; log {broker.log}")
        for line in broker.startup.splitlines():
            terminalreporter.write_line(line)
        try:
            log = broker.log.read_text(errors="replace").splitlines()
        except OSError:
            log = []
        started = [line for line in log if READY_LINE in line]
        for line in started or [f'(no "{READY_LINE}" line in the log)']:
            terminalreporter.write_line(line)
