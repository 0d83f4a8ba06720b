"""An invalid setting stops `neardup scan` and `neardup worker` before they start: one line on stderr
naming the variable, its value and the allowed range, exit code 2, no traceback, no output written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVENT = b'{"url": "https://a.example/", "body": "<p>one two three four five six seven eight nine ten</p>"}\n'


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env}, timeout=120)


@pytest.mark.parametrize("value", ["0", "-3"])
def test_scan_with_shingle_size_out_of_range_exits_2_with_one_clear_line(tmp_path: Path, value: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(EVENT)
    out = tmp_path / "out.jsonl"
    result = run(["scan", str(src), "--state", str(tmp_path / "state"), "--out", str(out), "--no-progress"],
                 {"NEARDUP_SHINGLE_SIZE": value}, tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [f"neardup: invalid setting NEARDUP_SHINGLE_SIZE={value}: must be an integer from 1 to 16"]
    assert "Traceback" not in result.stderr
    assert not out.exists() and not (tmp_path / "state").exists()


def test_scan_with_a_valid_shingle_size_runs(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(EVENT)
    result = run(["scan", str(src), "--state", str(tmp_path / "state"), "--out", str(tmp_path / "out.jsonl"),
                  "--no-progress", "--processes", "1"], {"NEARDUP_SHINGLE_SIZE": "3"}, tmp_path)
    assert result.returncode == 0, result.stderr


def test_worker_with_an_invalid_setting_exits_2_before_it_asks_the_broker(tmp_path: Path) -> None:
    # the broker address is unreachable: the worker must stop on the setting, not on the broker
    result = run(["worker"], {"NEARDUP_BATCH_MAX": "-1", "NEARDUP_BROKER": "127.0.0.1:9"}, tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == "neardup: invalid setting NEARDUP_BATCH_MAX=-1: must be an integer from 1 to 100000"


def test_scan_with_a_cache_dir_that_is_a_file_exits_2_with_one_clear_line(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(EVENT)
    out = tmp_path / "out.jsonl"
    result = run(["scan", str(src), "--state", str(tmp_path / "state"), "--out", str(out), "--no-progress"],
                 {"NEARDUP_CACHE_DIR": str(src)}, tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"neardup: invalid setting NEARDUP_CACHE_DIR={src}: must be a "
                                                   "directory"), result.stderr
    assert not out.exists() and not (tmp_path / "state").exists()
