"""A worker killed with SIGKILL leaves no process behind: its extraction-pool processes die with it
(`streams.processes.pool`: a parent-death signal, and a parent check). Only the worker's main process is killed
(`os.kill`, not its process group as `Cluster.kill_worker` does, which would hide a leak); then nothing
of the worker's session may live on."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from neardup_core.testing.synthetic import generate_crawl
from streams.dev import Cluster, all_complete
from tests.integration.checks import WORKER_ENV

POOL_PROCESSES = 2

def session_members(sid: int) -> dict[int, str]:
    """Live processes (zombies excluded: they are dead, waiting for a reaper) of session `sid` or process
    group `sid`, with their command lines."""
    members: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        state, pgrp, session = fields[0], int(fields[2]), int(fields[3])
        if state not in ("Z", "X") and sid in (pgrp, session):
            members[int(entry.name)] = cmdline
    return members

@pytest.fixture
def cluster(kafka_bootstrap: str, unique_prefix: str, tmp_path: Path) -> Iterator[Cluster]:
    env = {**WORKER_ENV, "NEARDUP_EXTRACT_PROCESSES": str(POOL_PROCESSES)}
    c = Cluster(kafka_bootstrap, unique_prefix, tmp_path, partitions=2, worker_env=env)
    c.create_topics()
    yield c
    c.stop_all()  # also SIGKILLs the worker's process group: nothing leaks from a failed test

@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigkill_of_the_worker_leaves_no_pool_process(cluster: Cluster) -> None:
    events = generate_crawl(seed=5)[:12]
    worker = cluster.start_worker("a")
    cluster.wait_balanced(["a"], stable_s=2)
    cluster.publish(events)
    cluster.read_until("dedup.decisions", all_complete({e["url"] for e in events}), timeout_s=180)

    before = session_members(worker.pid)
    children = {pid: cmd for pid, cmd in before.items() if pid != worker.pid}
    assert worker.pid in before
    assert len(children) >= POOL_PROCESSES, f"the extraction pool has not started: {before}"

    os.kill(worker.pid, signal.SIGKILL)  # the main process only
    worker.wait(timeout=30)
    deadline = time.monotonic() + 5
    while (left := session_members(worker.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == {}, f"processes of the killed worker still run: {left} (its children were {children})"
