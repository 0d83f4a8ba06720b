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

Children are direct children of the pool's creator ('fork' on Linux, as before; 'spawn' elsewhere);
'forkserver' would make the fork server their parent, and the checks above would watch the wrong one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_S = 1.0
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
    if then is not None:
        then(*args)


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


@contextmanager
def extraction_pool(processes: int) -> Iterator[Executor | None]:
    """Processes for fingerprinting while the worker's fingerprint agent runs; None (the event loop's
    default executor) when `processes` is 0."""
    if processes <= 0:
        yield None
        return
    pool = new_pool(processes)
    try:
        yield pool
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
