"""Optional py-spy profiles of the stream benchmark's workers, and their summary for the report: shares
of samples by the area of the innermost frame, and the functions most often on the stack."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from common import say


def start_py_spy(out_dir: Path, app: str, pids: list[int], *, gil: bool = False
                 ) -> list[tuple[subprocess.Popen, Path]]:
    """py-spy on each worker's processes (the main process, its extraction pool and its index process,
    all threads, or with `gil` only the thread holding the GIL), sampling without pausing them. py-spy is
    the one beside the interpreter, else `$PY_SPY`, else the one on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else os.environ.get("PY_SPY") or shutil.which("py-spy")
    if not found:
        say("no py-spy beside the interpreter, in $PY_SPY or on PATH: no profile")
        return []
    spy = Path(found)
    out_dir.mkdir(parents=True, exist_ok=True)
    spies = []
    for i, pid in enumerate(pids):
        path = out_dir / f"{app}-worker{i + 1}.txt"
        cmd = [str(spy), "record", "--nonblocking", "--subprocesses", "-r", "100", "-f", "raw", "-o", str(path),
               "-p", str(pid), *(["--gil"] if gil else [])]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        spies.append((proc, path))
    return spies


def stop_py_spy(spies: list[tuple[subprocess.Popen, Path]]) -> list[str]:
    paths = []
    for proc, path in spies:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        paths.append(path)
    return summarize_profiles(paths) if paths else []


AREAS = (
    ("neardup_core/", "neardup_core"),
    ("streams/", "streams (the app)"),
    ("faust/", "faust"),
    ("mode/", "mode (faust's service library)"),
    ("aiokafka/", "aiokafka"),
    ("rocksdict", "rocksdict"),
    ("asyncio/selector_events.py", "asyncio socket transport (send/recv)"),
    ("selectors.py", "selectors (epoll)"),
    ("asyncio/", "asyncio (event loop, tasks, futures)"),
    ("msgpack", "msgpack"),
    ("orjson", "orjson"),
)
# frames on the stack of almost every sample: they say nothing about where the time goes
GENERIC = (
    "asyncio/base_events.py",
    "asyncio/events.py",
    "<frozen runpy>",
    "typer/",
    "click/",
    "threading.py",
    "mode/worker.py",
    "streams/cli.py",
    "mode/utils/",
    "mode/services.py",
)


def frame_path(frame: str) -> str:
    m = re.match(r".* \((.*?):\d+\)$", frame)
    return m.group(1) if m else frame


def frame_area(frame: str) -> str:
    """What a frame belongs to, from the (shortened) file path py-spy prints."""
    path = frame_path(frame)
    for needle, area in AREAS:
        if needle in path:
            return area
    return "other (stdlib, multiprocessing, ...)"


def short_frame(frame: str) -> str:
    m = re.match(r"(.*) \((.*?):\d+\)$", frame)
    return f"{m.group(1)} ({m.group(2)})" if m else frame


def summarize_profiles(paths: list[Path]) -> list[str]:
    """Shares of samples: by area of the innermost Python frame (where the thread was), and the
    functions most often on the stack (inclusive)."""
    self_area: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit() or not stack:
                continue
            n = int(count)
            frames = stack.split(";")
            total += n
            self_area[frame_area(frames[-1])] += n
            for f in {short_frame(f) for f in frames if not any(g in frame_path(f) for g in GENERIC)}:
                inclusive[f] += n
    if not total:
        return []
    out = [
        f"{total} samples (py-spy, 100 per second per worker, all threads of the main process, only "
        "while a thread was not idle).",
        "",
        "| innermost Python frame in | share of samples |",
        "|---|---|",
    ]
    out += [f"| {a} | {n / total:.0%} |" for a, n in self_area.most_common()]
    out += ["", "| function (on the stack, inclusive) | share of samples |", "|---|---|"]
    out += [f"| `{f}` | {n / total:.0%} |" for f, n in inclusive.most_common(25)]
    return out
