"""The extraction pool's processes, for the worker and for `neardup scan`: they die with the process
that made them and stop on SIGTERM.

Without this, a worker killed with SIGKILL leaves its pool processes behind (reparented to init, about
190 MB each, holding the worker's file descriptors), and they ignore SIGTERM: a forked child inherits
the worker's Python signal handlers and asyncio's wakeup fd, so a SIGTERM sent to a child only writes a
byte into the *worker's* event-loop pipe. Every pool process therefore starts with `_init_child`:

- SIGTERM, SIGINT and SIGHUP back to their defaults (terminate), and no wakeup fd;
- on Linux, a parent-death signal (`prctl(PR_SET_PDEATHSIG, SIGKILL)`): the kernel kills the child when
  its parent goes, however the parent went. The signal is tied to the parent *thread* that forked the
  child: pools are created and submitted to from the main thread (the worker's event loop, scan's loop),
  which lives as long as the process;
- then the parent check, right after prctl: a parent that died before prctl ran would never send the
  signal, but the child has already been reparented, so `os.getppid()` differs from the pid the pool was
  created by and the child exits at once;
- where prctl is unavailable (not Linux), a daemon thread repeats the parent check every
  `PARENT_POLL_S` seconds.

Then it tunes the garbage collector as for any process that computes (`tune_collector`).

Children are direct children of the pool's creator ('fork' on Linux, as before; 'spawn' elsewhere);
'forkserver' would make the fork server their parent, and the checks above would watch the wrong one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from neardup_core.fingerprint.page import warm_up
from neardup_core.settings import CoreSettings

T = TypeVar("T")
R = TypeVar("R")

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_S = 1.0
GC_THRESHOLD = (20_000, 20, 50)
"""`gc.set_threshold` of a process that computes (`tune_collector`): a young collection per 20,000 allocations
of container objects, where CPython's default is 700."""
DEFAULT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))


def _set_parent_death_signal(sig: int) -> bool:
    """Asks the kernel to send `sig` to this process when its parent dies; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent_pid:
            os._exit(1)


def _init_child(parent_pid: int, then: Callable[..., None] | None = None, args: tuple[Any, ...] = ()) -> None:
    """The initializer of every pool process (see the module's docstring), then the pool's own."""
    for sig in DEFAULT_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:  # not the main thread: nothing was inherited there
        pass
    watched = _set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before (or while) prctl ran
        os._exit(1)
    if not watched:
        threading.Thread(target=_watch_parent, args=(parent_pid,), name="parent-watch", daemon=True).start()
    tune_collector()
    if then is not None:
        then(*args)


def tune_collector() -> None:
    """The garbage collector of a process that computes (a pool process, `neardup scan`, a worker): what it
    holds now (modules, stoplists, what a fork inherited) frozen out of every collection, and collections
    at `GC_THRESHOLD`. Extraction, the index step and the agents allocate many short-lived objects and make
    few reference cycles: at CPython's default thresholds the collector's passes cost 3-6% of `extract()`
    and 7-15% of the index step (bench/RESULTS.md, session 19). Not for the library API: it is the host
    process's to tune."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def _context(spawn: bool) -> multiprocessing.context.BaseContext:
    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") and not spawn else "spawn")


def new_pool(processes: int, initializer: Callable[..., None] | None = None,
             initargs: tuple[Any, ...] = (), *, spawn: bool = False) -> ProcessPoolExecutor:
    """A process pool whose processes die with this process and stop on SIGTERM, and then run
    `initializer(*initargs)`. Create it, and submit to it, from the thread that lives as long as the
    process (the main thread). `spawn` starts them as new interpreters instead of forks: a fork of
    a process whose other threads hold locks (RocksDB's) inherits the locks held, and a child that
    opens RocksDB can wait on them forever."""
    return ProcessPoolExecutor(processes, mp_context=_context(spawn), initializer=_init_child,
                               initargs=(os.getpid(), initializer, initargs))


def extraction_pool(processes: int, settings: CoreSettings, nice: int = 0) -> ProcessPoolExecutor:
    """Processes for fingerprinting (the worker's fingerprint agent, `neardup scan`), started now:
    they fork from this process after `warm_up` loaded what the first page would, so the first pages
    do not wait for a fork and the stoplists in every process. `nice` lowers their CPU priority
    (`os.nice`): on busy cores the steps that finish pages go first."""
    warm_up(settings)
    pool = new_pool(processes, initializer=_lower_priority, initargs=(nice,))
    pool.submit(os.getpid).result()  # a fork pool starts all its processes at the first task
    return pool


def _lower_priority(nice: int) -> None:
    os.nice(nice)


def apply_each(fn: Callable[[T], R], items: list[T]) -> list[R]:
    """`fn` of each item: one pool task for a chunk of items costs one round trip, not one each."""
    return [fn(item) for item in items]


def chunks_for(items: list[T], processes: int, most: int = 8) -> list[list[T]]:
    """`items` in chunks of at most `most`, and at least two per process when there are enough, so
    that no process waits while another has a long queue."""
    size = max(1, min(most, len(items) // (2 * max(1, processes))))
    return [items[i:i + size] for i in range(0, len(items), size)]
