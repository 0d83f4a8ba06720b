"""The extraction pool of `scan` and the worker (`streams.processes.pool`): its processes stop on SIGTERM even when
their parent ignores SIGTERM (as a Faust worker's handler makes a forked child do), and they die with
their parent, also when it is killed with SIGKILL."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from streams.processes import pool as pool_module
from streams.processes.pool import _init_child, new_pool

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def alive(pid: int) -> bool:
    """Running (a zombie, killed and not yet reaped, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_gone(pids: list[int], timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture
def deaf_parent() -> Iterator[None]:
    """This process ignores SIGTERM in a Python handler, as the worker's does: a plain fork inherits it."""
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _child_pid(executor: ProcessPoolExecutor) -> int:
    return executor.submit(os.getpid).result(timeout=30)


def test_a_plain_pool_child_is_deaf_to_sigterm(deaf_parent: None) -> None:
    """The control: what the pool's initializer fixes."""
    plain = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
    try:
        pid = _child_pid(plain)
        os.kill(pid, signal.SIGTERM)
        time.sleep(0.5)
        assert alive(pid)
        os.kill(pid, signal.SIGKILL)
        assert wait_gone([pid]) == []
    finally:
        plain.shutdown(wait=True, cancel_futures=True)


def test_a_pool_child_stops_on_sigterm(deaf_parent: None) -> None:
    executor = new_pool(2)
    try:
        pid = _child_pid(executor)
        os.kill(pid, signal.SIGTERM)
        assert wait_gone([pid], timeout_s=5) == [], "the pool process ignored SIGTERM"
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def test_pool_children_die_with_a_parent_killed_by_sigkill(tmp_path: Path) -> None:
    """A parent (like `scan`) that starts a pool, uses it, and is SIGKILLed: none of its children lives on."""
    script = textwrap.dedent("""
        import os, signal, sys, time
        from streams.processes.pool import new_pool
        pool = new_pool(2)
        for f in [pool.submit(time.sleep, 0.2) for _ in range(4)]:
            f.result()
        print(" ".join(map(str, sorted(pool._processes))), flush=True)
        signal.signal(signal.SIGTERM, lambda *_: None)
        time.sleep(600)
    """)
    children: list[int] = []
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        assert proc.stdout is not None
        children[:] = [int(p) for p in proc.stdout.readline().split()]
        assert len(children) == 2 and all(alive(p) for p in children)
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, not its group
        proc.wait(timeout=10)
        assert wait_gone(children, timeout_s=5) == [], "pool processes outlived their parent"
    finally:  # whatever happened, nothing of it is left (the children are in the parent's session)
        if proc.poll() is None or any(map(alive, children)):
            os.killpg(proc.pid, signal.SIGKILL)


def test_a_child_whose_parent_already_died_exits_at_once() -> None:
    """The race prctl leaves open: the parent died before the child set its parent-death signal, so no
    signal will come; the parent check right after prctl finds another parent and exits."""
    child = multiprocessing.get_context("fork").Process(target=_init_child, args=(os.getpid() + 1_000_000,))
    child.start()
    child.join(timeout=10)
    assert child.exitcode == 1


def _start_then_lose_parent(parent_pid: int) -> None:
    _init_child(parent_pid)  # passes: the parent is alive, the watcher thread starts
    pool_module.os = _FakeOs(os.getppid() + 1)  # type: ignore[assignment]  # in this child only: reparented
    time.sleep(10)
    os._exit(0)


def test_without_prctl_a_thread_watches_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where prctl is missing, the child polls its parent pid and exits once it has another parent."""
    monkeypatch.setattr(pool_module, "_set_parent_death_signal", lambda sig: False)
    monkeypatch.setattr(pool_module, "PARENT_POLL_S", 0.05)

    child = multiprocessing.get_context("fork").Process(target=_start_then_lose_parent, args=(os.getpid(),))
    child.start()
    child.join(timeout=10)
    assert child.exitcode == 1


class _FakeOs:
    def __init__(self, ppid: int) -> None:
        self.ppid = ppid

    def getppid(self) -> int:
        return self.ppid

    def _exit(self, code: int) -> None:
        os._exit(code)


def _word_index_loaded() -> int:
    from neardup_core.extract import stoplists

    return stoplists._word_index.cache_info().currsize


def test_the_extraction_pool_starts_warm() -> None:
    """Its processes run before the first task, forked after the stoplist index was loaded (the first
    pages wait for neither), at the lower priority asked for."""
    from neardup_core.extract import stoplists
    from neardup_core.settings import DEFAULT_SETTINGS
    from streams.processes.pool import extraction_pool

    stoplists._word_index.cache_clear()
    pool = extraction_pool(2, DEFAULT_SETTINGS, nice=3)
    try:
        assert len(pool._processes) == 2 and all(alive(p) for p in pool._processes)  # type: ignore[attr-defined]
        wanted, deadline = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 3), time.monotonic() + 10
        while (niceness := {os.getpriority(os.PRIO_PROCESS, p) for p in pool._processes}) != {wanted} \
                and time.monotonic() < deadline:  # each runs its initializer as it starts
            time.sleep(0.05)
        assert niceness == {wanted}
        assert _word_index_loaded() == 1
        assert {pool.submit(_word_index_loaded).result() for _ in range(6)} == {1}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _collector() -> tuple[tuple[int, int, int], int, tuple[int, int, int]]:
    import gc
    return gc.get_threshold(), gc.get_freeze_count(), pool_module.GC_THRESHOLD


@pytest.mark.parametrize("spawn", [False, True])
def test_pool_processes_collect_garbage_less_often(spawn: bool) -> None:
    """Every pool process (forked, or spawned as the index process is) runs with the pool's collector
    thresholds and what it started with frozen out of the collections; this process keeps its own."""
    import gc

    before = gc.get_threshold()
    executor = new_pool(1, spawn=spawn)
    try:
        threshold, frozen, wanted = executor.submit(_collector).result(timeout=60)
    finally:
        executor.shutdown(wait=True)
    assert threshold == wanted == pool_module.GC_THRESHOLD != before
    assert frozen > 0
    assert gc.get_threshold() == before


def test_tune_collector_freezes_what_exists_and_collects_less_often() -> None:
    """What `neardup scan` and the worker call first: the objects alive now leave the collections, and
    young collections come at the pool's threshold."""
    import gc

    threshold, held = gc.get_threshold(), {"alive": [object()]}
    try:
        pool_module.tune_collector()
        assert gc.get_threshold() == pool_module.GC_THRESHOLD
        assert gc.get_freeze_count() > 0
        assert all(o is not held for o in gc.get_objects())  # frozen objects are in no generation
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


@pytest.mark.parametrize(("n", "processes", "sizes"), [
    (0, 2, []), (3, 2, [1, 1, 1]), (10, 2, [2, 2, 2, 2, 2]), (100, 2, [8] * 12 + [4]), (5, 0, [2, 2, 1]),
])
def test_chunks_cover_the_items_in_order(n: int, processes: int, sizes: list[int]) -> None:
    from streams.processes.pool import chunks_for

    chunks = chunks_for(list(range(n)), processes)
    assert [len(c) for c in chunks] == sizes
    assert [i for c in chunks for i in c] == list(range(n))
