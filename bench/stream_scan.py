"""`neardup scan` of the stream benchmark's events, for the ratio stream pages/s over scan pages/s: the
events written once as JSONL (each event's raw bytes, one line), scanned by a subprocess run from a
given checkout (`python -m streams.cli scan FILE --state DIR --out OUT --no-progress`, its working
directory and first on its PYTHONPATH), timed by the wall clock from start to exit."""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from common import say
from stream_input import Event
from stream_phase import settings_env

from streams.dev import latest_by_url

OWN_RATE = re.compile(r"pages per second\D*([\d.]+)")


@dataclass
class ScanRun:
    code: str  # the checkout's label
    pages: int
    wall_s: float = 0.0  # the subprocess, start to exit (interpreter start-up and imports included)
    cpu_s: float = 0.0  # user + system of the scan and its extraction pool
    own_rate: float | None = None  # the "pages per second" scan prints (its loop, without start-up)
    decisions: int = 0
    returncode: int = 0
    error: str = ""
    verdicts: dict[str, tuple[str, str | None]] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.pages / self.wall_s if self.wall_s and not self.returncode else 0.0


def write_events(events: list[Event], path: Path) -> Path:
    """The events as `neardup scan` reads them: each event's raw bytes, one per line."""
    with path.open("wb") as fh:
        for e in events:
            fh.write(e.raw.rstrip(b"\n") + b"\n")
    return path


def scan_env(args: argparse.Namespace, code: Path) -> dict[str, str]:
    """The caller's environment without its NEARDUP_* settings (as the workers get), the checkout first
    on PYTHONPATH, and the settings the workers get that scan also reads (the table design, the
    extraction processes, NEARDUP_* entries of `--worker-env`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env["PYTHONPATH"] = os.pathsep.join([str(code), *filter(None, [env.get("PYTHONPATH")])])
    env.update(settings_env(args, neardup_only=True))
    return env


def run_scan(args: argparse.Namespace, label: str, code: Path, jsonl: Path, workdir: Path, pages: int) -> ScanRun:
    """One `neardup scan` of `jsonl` from checkout `code`, on a fresh state dir under `workdir`."""
    run = ScanRun(label, pages)
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "decisions.jsonl"
    cmd = [sys.executable, "-m", "streams.cli", "scan", str(jsonl), "--state", str(workdir / "state"),
           "--out", str(out), "--no-progress"]
    say(f"{label}: neardup scan of {pages} events from {code}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    result = subprocess.run(cmd, cwd=code, env=scan_env(args, code), stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=args.timeout, check=False)
    run.wall_s = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run.cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    run.returncode = result.returncode
    if result.returncode != 0:
        run.error = (result.stdout + result.stderr)[-3000:]
        say(f"  scan failed (exit {result.returncode}):\n{run.error}")
        return run
    if m := OWN_RATE.search(result.stderr):
        run.own_rate = float(m.group(1))
    decisions = [orjson.loads(line) for line in out.read_bytes().splitlines() if line.strip()]
    run.decisions = len(decisions)
    run.verdicts = {u: (d["verdict"], d["duplicate_of"]) for u, d in latest_by_url(decisions).items()}
    say(f"  {run.rate:.1f} pages/s ({run.wall_s:.1f} s wall, {run.cpu_s:.1f} s CPU); {run.decisions} decisions")
    return run
