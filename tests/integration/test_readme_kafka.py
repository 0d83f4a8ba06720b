"""The README's "A Kafka crawler" commands, run as written on the test broker (the one value the README
marks as yours, the broker address, set to it): topics, a worker in the background, publish the sample
pages of "Your own pages in five minutes", the decisions table, the host signals, no dead letters."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from streams.dev import free_port
from tests.functional.test_docs import blocks, section

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_kafka_steps_decide_the_sample_pages(kafka_bootstrap: str, tmp_path: Path) -> None:
    make_events = blocks(section("## Your own pages in five minutes"))[0][1]
    steps = blocks(section("## A Kafka crawler"))
    assert [kind for kind, _ in steps] == ["bash"]
    script = steps[0][1]
    assert re.match(r"export NEARDUP_BROKER=\S+ ", script)
    script = re.sub(r"^export NEARDUP_BROKER=\S+", f"export NEARDUP_BROKER={kafka_bootstrap}", script)
    bin_dir = tmp_path / "bin"  # `neardup` as installed, but this checkout's code
    bin_dir.mkdir()
    (bin_dir / "neardup").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m streams.cli "$@"\n')
    (bin_dir / "neardup").chmod(0o755)
    run = f"nd-readme-{uuid.uuid4().hex[:8]}"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "COLUMNS": "200",
           "TMPDIR": str(tmp_path), "NEARDUP_APP_ID": run, "NEARDUP_TOPIC_PREFIX": f"{run}.",
           "NEARDUP_DATA_DIR": str(tmp_path / "data"), "NEARDUP_WEB_PORT": str(free_port()),
           "NEARDUP_EXTRACT_PROCESSES": "1"}
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", f"{make_events}\n{script}"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL)
    log = (tmp_path / "worker.log").read_text() if (tmp_path / "worker.log").exists() else ""
    assert result.returncode == 0, result.stdout + result.stderr + log
    out = result.stdout
    urls = [json.loads(line)["url"] for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    table = out[out.index("dedup.decisions"):out.index("{")] if "{" in out else out
    for url, verdict in zip(urls, ["unique", "exact_duplicate", "near_duplicate", "unique"], strict=True):
        assert re.search(rf"{re.escape(url)}\s+│\s+{verdict}\s", table), (url, verdict, out)
    signals = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert {s["host"] for s in signals} >= {"news.example", "mirror.example", "aggregator.example"}
    assert "published 4 events; 0 failed" in result.stderr
