"""`neardup demo` against the test broker (NEARDUP_BROKER set: the demo uses it and starts none): every
line fits 100 columns, the numbers are explained, decisions are put in words, the next command is
suggested, and the scratch dir (worker state and log) is gone at the end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from neardup_core.hosts.urls import url_identity
from neardup_core.testing.synthetic import generate_crawl

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_reads_at_a_glance_and_leaves_nothing_behind(kafka_bootstrap: str, tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = subprocess.run([sys.executable, "-m", "streams.cli", "demo"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=400, stdin=subprocess.DEVNULL,
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch),
                                 "HOME": str(Path.home()), "NEARDUP_BROKER": kafka_bootstrap})
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    events = generate_crawl()
    urls = {url_identity(e["url"]) for e in events}
    assert (f"published {len(events)} fetched pages of {len(urls)} URLs, {len(events) - len(urls)} of them recrawls "
            "of a URL fetched before") in " ".join(out.split())
    assert "window_start" not in out
    assert "a few decisions, in words" in out and "a better-ranked" in out
    assert "within 0 of" not in out
    assert any(line.startswith("next: ") for line in lines)
    assert "removed the scratch dir" in out
    assert list(scratch.iterdir()) == []
