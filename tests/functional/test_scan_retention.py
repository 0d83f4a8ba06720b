"""`neardup scan` with `NEARDUP_RETENTION_DAYS`: a state dir fed three retention windows of a
generated crawl, one scan run per window, holds only the versions and URL states of the last window,
so it stays bounded (bench/bench_retention.py measures the bytes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from neardup_core.dedup.gather import UrlState
from neardup_core.dedup.retention import URL_CLOCK, URL_EXPIRY, read_clock
from neardup_core.index.bucket import decode_page
from neardup_core.index.keys import EXPIRY_HEADER, VERSION_RECORD
from neardup_core.settings import CoreSettings
from neardup_core.store.rocks import RocksStore
from neardup_core.testing.timeline import crawl_over_windows

ROOT = Path(__file__).resolve().parents[2]
DAY_MS = 86_400_000


def run_scan(events: list[dict], state: Path, tmp: Path, name: str) -> None:
    data = tmp / f"{name}.jsonl"
    data.write_bytes(b"\n".join(orjson.dumps(e) for e in events) + b"\n")
    cmd = [sys.executable, "-m", "streams.cli", "scan", str(data), "--state", str(state), "--out",
           str(tmp / f"{name}.out.jsonl"), "--no-progress", "--processes", "1"]
    env = {"PATH": "/usr/bin:/bin", "NEARDUP_RETENTION_DAYS": "1"}
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr


def state_counts(state: Path) -> tuple[int, int, list[int], list[int], int]:
    """(index keys, URL table keys, first fetches of the version records, latest fetches of the URL
    states, the clock) of a closed state dir."""
    index = RocksStore(state / "index", prefix_bytes=CoreSettings().design.prefix_bytes)
    urls = RocksStore(state / "urls")
    try:
        index_items = _all(index)
        url_items = _all(urls)
        clock = read_clock(urls, URL_CLOCK)
        assert clock is not None
        firsts = [decode_page(v).fetched_at_ms for k, v in index_items if k[0] == VERSION_RECORD]
        seen = [UrlState.from_bytes(v).seen_ms for k, v in url_items if k[:1] not in (URL_EXPIRY, URL_CLOCK[:1])]
        assert len([k for k, _ in index_items if k.startswith(EXPIRY_HEADER)]) == len(firsts)
        return len(index_items), len(url_items), firsts, seen, clock
    finally:
        index.close()
        urls.close()


def _all(store: RocksStore) -> list[tuple[bytes, bytes]]:
    it = store._db.iter()  # the whole key space (a prefix-bounded `scan` cannot cross prefixes)
    it.seek_to_first()
    out = []
    while it.valid():
        out.append((it.key(), it.value()))
        it.next()
    return out


def test_a_state_dir_with_retention_keeps_only_the_last_window(tmp_path: Path) -> None:
    state = tmp_path / "state"
    counts = []
    for w, events in enumerate(crawl_over_windows(3, DAY_MS, seed=40)):
        run_scan(events, state, tmp_path, f"w{w}")
        index_keys, url_keys, firsts, seen, clock = state_counts(state)
        horizon = clock - DAY_MS
        assert firsts and min(firsts) >= horizon, "a version first fetched before the horizon is still indexed"
        assert seen and min(seen) >= horizon, "a URL state last fetched before the horizon is still kept"
        counts.append((index_keys, url_keys, len(firsts)))
    (index1, urls1, versions1), _, (index3, urls3, versions3) = counts
    # without the retention the third window would hold about three windows of versions
    assert versions3 <= 1.3 * versions1 and index3 <= 1.3 * index1 and urls3 <= 1.3 * urls1, counts
