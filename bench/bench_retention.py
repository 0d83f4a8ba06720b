"""Disk of a `neardup scan` state dir over three retention windows, retention on against off.

A generated crawl whose `fetched_at` advances through 3 windows (`neardup_core/testing/timeline.py`:
each window a fresh generated crawl of `--scale` x 343 pages, spread evenly over the window) is fed to
`neardup scan`, one run per window continuing the same `--state` dir, once with
`NEARDUP_RETENTION_DAYS` at the window and once without, the two taking turns window by window. After
each window the state dir is measured two ways:

* **compacted**: a copy of it, each RocksDB flushed and fully compacted (`compact_range` over all
  keys), then its `.sst` files: the live data, with the deletes' tombstones dropped, which RocksDB's
  own compactions reach in time;
* **as left**: the dir as the scan left it (flushed on close), without RocksDB's info logs (`LOG*`):
  what the disk holds before compaction catches up (tombstones included).

Live keys are counted too. With retention the state after 3 windows should be about that after one;
without, about 3x.

With `--stream`, the same windows also go to one worker per setting on a local broker
(`streams.dev`, 4 partitions, both apps on one broker): after each window, once every page of
it has its complete decision, the worker is stopped (SIGTERM), its data dir measured as above (each of
Faust's per-partition RocksDBs, a copy compacted) and the worker started again; the changelog topics'
bytes on the broker (their `.log` segments) are measured too.

    python bench/bench_retention.py [--scale 1] [--window-days 1] [--stream] [--results bench/results/retention.md]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from common import REPO, Table, append_results, fmt_bytes, fmt_ratio, keys_of
from rocksdict import Options, Rdict

from neardup_core.settings import CoreSettings
from neardup_core.store.rocks import RocksStore
from neardup_core.testing.timeline import crawl_over_windows

DAY_MS = 86_400_000
WINDOWS = 3


def scan(data: Path, state: Path, out: Path, retention_days: float | None) -> float:
    env = {**os.environ}
    env.pop("NEARDUP_RETENTION_DAYS", None)
    if retention_days is not None:
        env["NEARDUP_RETENTION_DAYS"] = str(retention_days)
    started = time.perf_counter()
    cmd = [sys.executable, "-m", "streams.cli", "scan", str(data), "--state", str(state), "--out", str(out),
           "--no-progress", "--processes", "1"]
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    return time.perf_counter() - started


def compacted_keys(db: Rdict) -> int:
    """Flush and fully compact an open RocksDB; its live keys."""
    db.flush()
    db.compact_range(None, None)
    return keys_of(db)


def measure_copy(src: Path, scratch: Path, compact: Callable[[Path], int]) -> tuple[int, int, int]:
    """(SST bytes after `compact` of a copy, bytes as left without info logs, live keys): `compact`
    flushes and compacts every RocksDB of the copy and returns their live keys."""
    as_left = sum(p.stat().st_size for p in src.rglob("*") if p.is_file() and not p.name.startswith("LOG"))
    copy = scratch / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(src, copy)
    keys = compact(copy)
    compacted = sum(p.stat().st_size for p in copy.rglob("*.sst"))
    shutil.rmtree(copy)
    return compacted, as_left, keys


def measure(state: Path, scratch: Path) -> tuple[int, int, int]:
    """`measure_copy` of a scan state dir, its two stores opened as scan opens them."""
    def compact(copy: Path) -> int:
        keys = 0
        for name, prefix in (("index", CoreSettings().design.prefix_bytes), ("urls", None)):
            store = RocksStore(copy / name, prefix_bytes=prefix)
            keys += compacted_keys(store._db)
            store.close()
        return keys
    return measure_copy(state, scratch, compact)


def measure_worker_dir(data: Path, scratch: Path) -> tuple[int, int, int]:
    """`measure_copy` of a stopped worker's data dir: every RocksDB in it (one per table partition)."""
    def compact(copy: Path) -> int:
        keys = 0
        for current in copy.rglob("CURRENT"):
            db = Rdict(str(current.parent), options=Options(raw_mode=True))
            keys += compacted_keys(db)
            db.close()
        return keys
    return measure_copy(data, scratch, compact)


def changelog_bytes(broker_dir: Path, app_id: str) -> int:
    """Bytes of the log segments of an app's changelog topics on a local broker."""
    return sum(p.stat().st_size for d in broker_dir.rglob(f"{app_id}-*changelog-*") if d.is_dir()
               for p in d.glob("*.log"))


def stream_rows(windows: list[list[dict]], window_days: float, root: Path
                ) -> dict[str, list[tuple[int, int, int, int]]]:
    """Per setting, after each window: (compacted, as left, keys, changelog bytes) of one worker."""
    from streams.dev import Cluster, start_broker, stop_broker

    broker = start_broker(root / "kafka")
    rows: dict[str, list[tuple[int, int, int, int]]] = {"off": [], "on": []}
    clusters = {}
    try:
        for name in rows:
            env = {"NEARDUP_EXTRACT_PROCESSES": "1", "NEARDUP_TICK_INTERVAL_S": "1"}
            if name == "on":
                env["NEARDUP_RETENTION_DAYS"] = str(window_days)
            cluster = Cluster(broker.bootstrap, f"ret-{name}", root / f"stream-{name}", 4, worker_env=env,
                              log_level="warning")
            cluster.create_topics()
            cluster.start_worker("a")
            clusters[name] = cluster
        for cluster in clusters.values():
            cluster.wait_balanced()
        for w, events in enumerate(windows):
            want = {url: e["fetched_at"] for e in events for url in [e["url"]]}
            for name, cluster in clusters.items():
                cluster.publish(events)

                def done(messages: list[dict], want: dict[str, str] = want) -> bool:
                    seen = {m["url"]: m for m in messages if m["complete"] and m["url"] in want}
                    return all(url in seen and seen[url]["fetched_at"] >= want[url]
                               for url in want)

                cluster.read_until("dedup.decisions", done, timeout_s=900)
                cluster.kill_worker("a", signal.SIGTERM)
                measured = measure_worker_dir(cluster.workdir / "data-a", root)
                rows[name].append((*measured, changelog_bytes(broker.dir, cluster.app_id)))
                print(f"stream, window {w + 1}, retention {name}: {rows[name][-1]}", flush=True)
                cluster.start_worker("a")
                cluster.wait_balanced()
    finally:
        for cluster in clusters.values():
            cluster.stop_all()
        stop_broker(broker.dir)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=1, help="generated crawl scale per window (343 pages each)")
    parser.add_argument("--window-days", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "results" / "retention.md")
    parser.add_argument("--stream", action="store_true", help="also one worker per setting on a local broker")
    args = parser.parse_args()
    started = time.perf_counter()
    windows = crawl_over_windows(WINDOWS, round(args.window_days * DAY_MS), seed=args.seed, scale=args.scale)
    runs = {"off": None, "on": args.window_days}
    rows: dict[str, list[tuple[int, int, int, float]]] = {name: [] for name in runs}
    with tempfile.TemporaryDirectory(prefix="bench-retention-") as tmp:
        root = Path(tmp)
        fed = 0
        for w, events in enumerate(windows):
            data = root / f"w{w}.jsonl"
            data.write_bytes(b"\n".join(orjson.dumps(e) for e in events) + b"\n")
            fed += len(events)
            for name, days in runs.items():
                seconds = scan(data, root / f"state-{name}", root / f"out-{name}-{w}.jsonl", days)
                rows[name].append((*measure(root / f"state-{name}", root), seconds))
                print(f"window {w + 1}, retention {name}: {rows[name][-1]}", flush=True)
        stream = stream_rows(windows, args.window_days, root) if args.stream else None
    table = Table(f"scan state dir over {WINDOWS} windows of {args.window_days:g} day(s), "
                  f"{len(windows[0])} generated pages per window",
                  ["after", "pages fed", "off: compacted", "on: compacted", "on / off",
                   "off vs window 1", "on vs window 1", "off: as left", "on: as left", "off: keys", "on: keys"])
    fed = 0
    for w in range(WINDOWS):
        fed += len(windows[w])
        off, on = rows["off"][w], rows["on"][w]
        table.add(f"window {w + 1}", f"{fed:,}", fmt_bytes(off[0]), fmt_bytes(on[0]), fmt_ratio(on[0] / off[0]),
                  fmt_ratio(off[0] / rows["off"][0][0]), fmt_ratio(on[0] / rows["on"][0][0]),
                  fmt_bytes(off[1]), fmt_bytes(on[1]), f"{off[2]:,}", f"{on[2]:,}")
    table.notes.append("compacted: .sst bytes of a copy of the state dir after flush + full compact_range of both "
                       "RocksDBs; as left: the dir after the scan closed it, RocksDB info logs (LOG*) left out")
    table.notes.append("scan seconds per window, off: " + ", ".join(f"{r[3]:.0f}" for r in rows["off"]) +
                       "; on: " + ", ".join(f"{r[3]:.0f}" for r in rows["on"]))
    table.print()
    tables = [table]
    if stream is not None:
        st = Table(f"one worker's data dir (4 partitions) over {WINDOWS} windows, same pages",
                   ["after", "pages fed", "off: compacted", "on: compacted", "on / off", "off vs window 1",
                    "on vs window 1", "off: as left", "on: as left", "off: keys", "on: keys",
                    "off: changelogs", "on: changelogs"])
        fed = 0
        for w in range(WINDOWS):
            fed += len(windows[w])
            off, on = stream["off"][w], stream["on"][w]
            st.add(f"window {w + 1}", f"{fed:,}", fmt_bytes(off[0]), fmt_bytes(on[0]), fmt_ratio(on[0] / off[0]),
                   fmt_ratio(off[0] / stream["off"][0][0]), fmt_ratio(on[0] / stream["on"][0][0]),
                   fmt_bytes(off[1]), fmt_bytes(on[1]), f"{off[2]:,}", f"{on[2]:,}", fmt_bytes(off[3]),
                   fmt_bytes(on[3]))
        st.notes.append("the worker stopped with SIGTERM after each window once every page of it had its complete "
                        "decision, then started again; compacted and as left as above, over every RocksDB of its "
                        "data dir; changelogs: the .log segments of the app's changelog topics on the broker")
        st.print()
        tables.append(st)
    append_results(args.results, "Retention: disk over 3 windows, on vs off", tables, started=started)


if __name__ == "__main__":
    main()
