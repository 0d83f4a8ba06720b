"""What the stream benchmark reads from /proc: processes and their descendants (a worker and its
extraction pool), CPU time on a CPU and waiting for one per task group (schedstat), the whole machine's
busy time, RSS and PSS, and a once-a-second sampler of peak RSS and event-loop demand."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def proc_stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, utime+stime in ticks, rss pages) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[21])


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            st = proc_stat(int(entry.name))
            if st is not None:
                children.setdefault(st[0], []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])  # guest time is already inside user/nice
    return total - idle, total


def schedstat(path: str) -> tuple[int, int]:
    """(ns on a CPU, ns runnable but waiting for a CPU) of a task, from /proc/.../schedstat."""
    try:
        run, wait, _ = Path(path).read_text().split()
        return int(run), int(wait)
    except (OSError, ValueError):
        return 0, 0


def process_sched(pid: int) -> tuple[int, int]:
    """schedstat summed over the threads of a process."""
    run = wait = 0
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            r, w = schedstat(f"/proc/{pid}/task/{tid}/schedstat")
            run, wait = run + r, wait + w
    return run, wait


@dataclass
class CpuSnapshot:
    """Cumulative scheduler times (ns), per task group, at one moment."""

    at: float
    loop: dict[int, tuple[int, int]]  # worker pid -> its main thread (the event loop)
    main: dict[int, tuple[int, int]]  # worker pid -> all threads of its main process (RocksDB, aiokafka, ...)
    pool: dict[int, dict[int, tuple[int, int]]]  # worker pid -> {descendant pid: its threads} (extraction pool)
    index: dict[int, set[int]]  # worker pid -> the descendants that are index processes (spawned, not forked)
    broker: tuple[int, int]
    me: tuple[int, int]
    machine: tuple[int, int]


def is_index_process(pid: int) -> bool:
    """Whether a worker's descendant is an index process: the worker spawns those (a fresh interpreter,
    `multiprocessing.spawn` in its command line) and forks its extraction processes."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"spawn_main" in cmdline and b"resource_tracker" not in cmdline


def cpu_snapshot(workers: list[int], broker_pid: int | None) -> CpuSnapshot:
    loop, main, pool, index = {}, {}, {}, {}
    for pid in workers:
        loop[pid] = schedstat(f"/proc/{pid}/task/{pid}/schedstat")
        main[pid] = process_sched(pid)
        pool[pid] = {d: process_sched(d) for d in descendants(pid)}
        index[pid] = {d for d in pool[pid] if is_index_process(d)}
    broker = process_sched(broker_pid) if broker_pid else (0, 0)
    return CpuSnapshot(time.monotonic(), loop, main, pool, index, broker, process_sched(os.getpid()),
                       machine_jiffies())


def cpu_usage(a: CpuSnapshot, b: CpuSnapshot) -> dict[str, Any]:
    """Cores used (1.0 = one core the whole time) and cores' worth of waiting for a CPU, between two
    snapshots."""
    wall_ns = max(b.at - a.at, 1e-9) * 1e9

    def used(x: tuple[int, int], y: tuple[int, int]) -> tuple[float, float]:
        return (y[0] - x[0]) / wall_ns, (y[1] - x[1]) / wall_ns

    out: dict[str, Any] = {"wall_s": wall_ns / 1e9, "workers": {}}
    for pid in b.main:
        pool_run = sum(t[0] - a.pool.get(pid, {}).get(d, (0, 0))[0] for d, t in b.pool[pid].items())
        pool_wait = sum(t[1] - a.pool.get(pid, {}).get(d, (0, 0))[1] for d, t in b.pool[pid].items())
        index_run = sum(t[0] - a.pool.get(pid, {}).get(d, (0, 0))[0] for d, t in b.pool[pid].items()
                        if d in b.index[pid])
        loop, main = used(a.loop[pid], b.loop[pid]), used(a.main[pid], b.main[pid])
        out["workers"][pid] = {
            "loop": loop[0],
            "loop_wait": loop[1],
            "main": main[0],
            "main_wait": main[1],
            "pool": pool_run / wall_ns,
            "pool_wait": pool_wait / wall_ns,
            "index": index_run / wall_ns,
        }
    out["broker"] = used(a.broker, b.broker)[0]
    out["bench"] = used(a.me, b.me)[0]
    busy, total = b.machine[0] - a.machine[0], b.machine[1] - a.machine[1]
    out["machine"] = busy / max(total, 1) * (os.cpu_count() or 1)
    return out


class Sampler(threading.Thread):
    """Once a second: each worker's total RSS (for the peak) and how much of that second its event-loop
    thread was on a CPU or waiting for one (a loop that needs the CPU all the time is at 1.0)."""

    def __init__(self, workers: list[int]) -> None:
        super().__init__(daemon=True)
        self.workers = workers
        self.stop_event = threading.Event()
        self.peak_rss: dict[int, int] = dict.fromkeys(workers, 0)
        self.loop_demand: dict[int, list[float]] = {pid: [] for pid in workers}

    def run(self) -> None:
        last = {pid: (time.monotonic(), schedstat(f"/proc/{pid}/task/{pid}/schedstat")) for pid in self.workers}
        while not self.stop_event.wait(1.0):
            for pid in self.workers:
                rss = sum((proc_stat(p) or (0, 0, 0))[2] for p in [pid, *descendants(pid)]) * PAGE_SIZE
                self.peak_rss[pid] = max(self.peak_rss[pid], rss)
                now, st = time.monotonic(), schedstat(f"/proc/{pid}/task/{pid}/schedstat")
                t0, st0 = last[pid]
                self.loop_demand[pid].append((st[0] + st[1] - st0[0] - st0[1]) / 1e9 / max(now - t0, 1e-9))
                last[pid] = (now, st)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=5)


def memory_of(pid: int) -> dict[str, int]:
    procs = [pid, *descendants(pid)]
    rss = sum((proc_stat(p) or (0, 0, 0))[2] for p in procs) * PAGE_SIZE
    return {
        "processes": len(procs),
        "rss": rss,
        "pss": sum(pss_kb(p) for p in procs) * 1024,
        "main_rss": (proc_stat(pid) or (0, 0, 0))[2] * PAGE_SIZE,
    }
