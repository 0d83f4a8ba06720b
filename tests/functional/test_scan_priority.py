"""`neardup scan`'s extraction processes run at the command's own CPU priority unless NEARDUP_SCAN_NICE
lowers it; NEARDUP_EXTRACT_NICE (the worker's, default 10) does not reach them.

The real command runs in a subprocess with two extraction processes. Each extraction task also writes
its process id, its own niceness and its parent's (the scan command's), read from the kernel by
`os.getpriority` inside that process, to a file; the wrapper changes nothing of what a task returns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from neardup_core.testing.synthetic import generate_crawl

ROOT = Path(__file__).resolve().parents[2]

# The scan command, with each extraction task noting where and at which priority it ran. The pool forks
# from this process, so its processes run this module's `noted` (pickled by name).
SCAN = r"""
import os, sys
import streams.cli.scan as scan

seen = sys.argv.pop(1)
extract = scan._fingerprint_one

def noted(item):
    with open(seen, "a") as fh:
        fh.write(f"{os.getpid()} {os.getpriority(os.PRIO_PROCESS, 0)} {os.getppid()} "
                 f"{os.getpriority(os.PRIO_PROCESS, os.getppid())}\n")
    return extract(item)

scan._fingerprint_one = noted
from streams.cli import main
main()
"""


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("priority") / "crawl.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in generate_crawl(seed=5)[:60]))
    return path


def scan_priorities(tmp: Path, crawl: Path, env: dict[str, str]) -> tuple[set[int], set[int], int]:
    """Run the scan; the pids of the processes that extracted, the niceness each had, and the offset of the
    tasks' niceness over the scan command's (checked to be one value)."""
    seen, out = tmp / "seen.txt", tmp / "decisions.jsonl"
    result = subprocess.run(
        [sys.executable, "-c", SCAN, str(seen), "scan", str(crawl), "--state", str(tmp / "state"), "--out", str(out),
         "--processes", "2", "--no-progress"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), **env})
    assert result.returncode == 0, result.stderr
    decisions = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert len({d["url"] for d in decisions}) >= 50  # a real scan decided the pages
    rows = [tuple(map(int, line.split())) for line in seen.read_text().splitlines()]
    events = [orjson.loads(line) for line in crawl.read_bytes().splitlines()]
    bodies = {(e.get("body"), e.get("body_b64"), e.get("status"), e.get("content_type"), e.get("encoding"))
              for e in events}
    assert len(rows) == len(bodies)  # every distinct body was extracted in the pool, once
    pids = {pid for pid, _, _, _ in rows}
    scan_pids = {parent for _, _, parent, _ in rows}
    assert len(scan_pids) == 1 and not pids & scan_pids  # in the scan's own children, not the scan itself
    offsets = {nice - parent_nice for _, nice, _, parent_nice in rows}
    assert len(offsets) == 1
    return pids, {nice for _, nice, _, _ in rows}, offsets.pop()


def test_scan_extracts_at_its_own_priority_by_default(tmp_path: Path, crawl: Path) -> None:
    pids, _, offset = scan_priorities(tmp_path, crawl, {})
    assert len(pids) == 2
    assert offset == 0


def test_the_worker_setting_does_not_lower_scan(tmp_path: Path, crawl: Path) -> None:
    _, _, offset = scan_priorities(tmp_path, crawl, {"NEARDUP_EXTRACT_NICE": "10"})
    assert offset == 0


def test_scan_nice_lowers_the_extraction_processes(tmp_path: Path, crawl: Path) -> None:
    own = os.getpriority(os.PRIO_PROCESS, 0)
    _, niceness, offset = scan_priorities(tmp_path, crawl, {"NEARDUP_SCAN_NICE": "7"})
    assert niceness == {min(19, own + 7)}
    assert offset == min(19, own + 7) - own
