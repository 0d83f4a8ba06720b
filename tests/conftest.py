"""The real Kafka broker under tests/integration and tests/reliability, and one app with workers on it.

Fixtures:

- ``kafka_broker`` / ``kafka_bootstrap`` (session): the broker (a `streams.dev.Broker`), and its
  address ``"127.0.0.1:N"``. With ``NEARDUP_TEST_BROKER=host:port`` the tests use that running broker;
  otherwise ``deploy/local-kafka`` starts one on a free port in a temporary directory and stops it when
  the session ends (also when tests fail or the run is interrupted with Ctrl-C). Without Java the tests
  that need it are skipped, or fail under ``CI=true``. The broker's log path and its "Kafka Server
  started" line are printed in the terminal summary, so a CI log shows which broker the tests talked to.
- ``unique_prefix`` (function): a topic prefix / Faust app id / group id unique to one test, so tests can
  share a broker without seeing each other's topics and consumer groups.
- ``pipeline`` (function): a `streams.dev.Cluster` under ``unique_prefix`` on the broker, with its
  topics created and the test workers' settings (``tests/integration/checks.py``); its workers are
  stopped when the test ends.

Every test in tests/integration and tests/reliability gets the ``broker`` marker: ``pytest -m "not
broker"`` skips them. No other test starts a broker: the fixtures run only when a test asks for them.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# the G1-G3 checks assert outside the test modules: rewrite them for pytest's detailed failure messages
pytest.register_assert_rewrite("tests.integration.checks")

from streams.dev import (  # noqa: E402
    READY_LINE,
    Broker,
    Cluster,
    ClusterError,
    missing_prerequisites,
    reachable,
    start_broker,
    stop_broker,
)

HERE = Path(__file__).resolve().parent
BROKER_DIRS = (HERE / "integration", HERE / "reliability")

_brokers: list[Broker] = []  # what this session used, for the terminal summary


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parents = Path(str(item.path)).parents
        if any(d in parents for d in BROKER_DIRS):
            item.add_marker(pytest.mark.broker)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    external = os.environ.get("NEARDUP_TEST_BROKER", "").strip()
    if external:
        if not reachable(external):
            pytest.fail(f"NEARDUP_TEST_BROKER={external} does not accept connections")
        broker = Broker(external)
        _brokers.append(broker)
        yield broker
        return

    problem = missing_prerequisites()
    if problem:
        message = f"{problem} (or set NEARDUP_TEST_BROKER)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)

    d = tmp_path_factory.mktemp("kafka")
    try:
        try:
            broker = start_broker(d)
        except ClusterError as exc:
            pytest.fail(str(exc), pytrace=False)
        _brokers.append(broker)
        yield broker
    finally:  # runs on test failures, a failed start and Ctrl-C alike
        stop_broker(d)


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


@pytest.fixture
def pipeline(kafka_bootstrap: str, unique_prefix: str, tmp_path: Path) -> Iterator[Cluster]:
    from tests.integration.checks import WORKER_ENV

    cluster = Cluster(kafka_bootstrap, unique_prefix, tmp_path, worker_env=WORKER_ENV)
    cluster.create_topics()
    yield cluster
    cluster.stop_all()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for broker in _brokers:
        terminalreporter.section("kafka broker", sep="-")
        if broker.log is None:
            terminalreporter.write_line(f"external broker {broker.bootstrap} (NEARDUP_TEST_BROKER)")
            continue
        terminalreporter.write_line(f"{broker.bootstrap} started by deploy/local-kafka; log {broker.log}")
        for line in broker.startup.splitlines():
            terminalreporter.write_line(line)
        for line in broker.started_lines() or [f'(no "{READY_LINE}" line in the log)']:
            terminalreporter.write_line(line)
