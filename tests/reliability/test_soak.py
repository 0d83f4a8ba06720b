"""The soak, CI's short run (`tests/reliability/soak.py`): generated pages at a steady rate into three
workers while a killer stops a random one with SIGKILL, then the broker, then a random one with SIGTERM
(the signals take turns from a random start), each worker started again after a few seconds and the
broker on its port with its data. At the end: every event delivered once, every URL decided, G2 against
the oracle, every worker alive in a settled group. The soak stops and restarts its broker, so it runs on
one of its own rather than the session's. The longer run with its numbers is `bench/bench_soak.py`."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.dev import Broker, Cluster, ClusterError, missing_prerequisites, start_broker, stop_broker
from tests.integration.checks import WORKER_ENV
from tests.reliability.soak import Soak, SoakPlan, summary

PLAN = SoakPlan(disturbances=3, broker_turn=1, interval_s=(20.0, 30.0), rate=4.0, scale=10)
"""3.5 minutes and about 640 pages on 2 cores (the oracle is O(n^2)); 7-9 minutes on a busy machine, hence
the timeout."""

pytestmark = pytest.mark.timeout(1500)


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[Broker]:
    problem = missing_prerequisites()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    d = tmp_path / "kafka"
    try:
        try:
            yield start_broker(d)
        except ClusterError as exc:
            pytest.fail(str(exc), pytrace=False)
    finally:
        stop_broker(d)


def test_soak_under_a_killer_and_a_broker_restart(own_broker: Broker, unique_prefix: str, tmp_path: Path) -> None:
    cluster = Cluster(own_broker.bootstrap, unique_prefix, tmp_path / "cluster", worker_env=WORKER_ENV)
    cluster.create_topics()
    try:
        result = Soak(cluster, own_broker, PLAN).run()
    finally:
        cluster.stop_all()
    print("\n".join(summary(result)))
    assert [d.kind for d in result.disturbances].count("broker") == 1
    assert {d.kind for d in result.kills} == {signal.SIGKILL.name, signal.SIGTERM.name}
    assert result.delivery_errors == [], "every event sent was delivered"
    assert len(result.events) > 300, "a steady stream, not a handful"
    assert result.lost == [], f"every URL has a complete decision: {len(result.lost)} have not"
    assert result.g2_problems == [], f"G2: {len(result.g2_problems)} decisions break the rule: {result.g2_problems[:5]}"
