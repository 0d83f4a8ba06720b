"""An extraction process SIGKILLed while it fingerprints a batch (the kernel's OOM killer does this),
issue 21: every page is still decided as `neardup scan` decides it (G1-G3), and the worker stays up.

Why "stays up" and not "may exit non-zero and be restarted": G4 stops the worker only for a failure it
cannot handle. A dead extraction process is one it can: the batch's input offsets are not committed yet
(nothing is acknowledged that has no outcome), fingerprinting is a pure function of the record, and the
pool's processes are forks of the worker that a new pool replaces in a second. So the stricter
expectation holds: the worker replaces the pool and fingerprints the batch again itself, without a
group rebalance (which would stall every worker of the group for the session timeout). Only a child
that cannot be replaced (a pool that dies again at once) is a reason to exit; a record that kills the
process every time is the poison-record case (a dead letter), not this one.

The worker runs two extraction processes (`NEARDUP_EXTRACT_PROCESSES=2`); a few hundred real pages are
published at once, and the first pool process seen using CPU is killed with SIGKILL (only it: not the
worker, not its process group). Today's fingerprint agent crashes on `BrokenProcessPool`, Faust
restarts it with a new pool, and the batch it held was acknowledged already: its pages are never
decided.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.dev import Cluster, all_complete
from tests.integration.checks import WORKER_ENV, check_g1_g3
from tests.reliability.faults import corpus_events, cpu_ticks, extraction_processes, mirror_of

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds the pool in /proc")]

POOL_PROCESSES = 2


@pytest.fixture
def cluster(kafka_bootstrap: str, unique_prefix: str, tmp_path: Path) -> Iterator[Cluster]:
    env = {**WORKER_ENV, "NEARDUP_EXTRACT_PROCESSES": str(POOL_PROCESSES), "NEARDUP_MAX_BODY_BYTES": "2000000"}
    c = Cluster(kafka_bootstrap, unique_prefix, tmp_path, partitions=4, worker_env=env)
    c.create_topics()
    yield c
    c.stop_all()


def kill_a_busy_one(pids: list[int], timeout_s: float = 60.0) -> int:
    """SIGKILLs the first of `pids` seen using CPU (it is fingerprinting) and returns it."""
    before = {pid: cpu_ticks(pid) for pid in pids}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(0.05)
        for pid in pids:
            if cpu_ticks(pid) > before[pid]:
                os.kill(pid, signal.SIGKILL)
                return pid
    raise AssertionError(f"no extraction process of {pids} got any work in {timeout_s:.0f} s")


def test_extraction_process_killed_mid_batch(cluster: Cluster) -> None:
    events = corpus_events(240)
    events += [mirror_of(e, n) for n, e in enumerate(events[:10])]
    random.Random(8).shuffle(events)
    worker = cluster.start_worker("a")
    cluster.wait_balanced(["a"], stable_s=2)
    pool = extraction_processes(worker.pid)
    assert len(pool) == POOL_PROCESSES, f"the worker's extraction pool: {pool}"

    cluster.publish(events)
    killed = kill_a_busy_one(pool)
    decisions = cluster.read_until("dedup.decisions", all_complete({e["url"] for e in events}), timeout_s=180)

    assert worker.poll() is None, (f"the worker exited with {worker.returncode} after one extraction process "
                                   f"was killed\n{cluster.log_tail(30)}")
    assert killed not in extraction_processes(worker.pid)
    check_g1_g3(cluster, events, decisions, verdicts_seen=frozenset({"unique", "exact_duplicate"}))
    assert worker.poll() is None
