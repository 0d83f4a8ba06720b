"""A large duplicate cluster in the worst rank order: decision lines per URL and time, at two sizes.

A soft-404 page served under n URLs, each new URL shorter (so better ranked) than every one before:
the order in which a page that revises every worse copy it meets costs O(n^2). Two clusters:

* **exact**: the same page under every URL (same body, same main text);
* **distance 0**: the page with a changing error number and date, so every main text differs but
  the SimHash is the same (numbers and dates are placeholders in the features).

Each is run through `neardup scan` (one process, a fresh state dir) at two sizes; the table gives
the decision lines per URL (the most any URL got, and the total over n) and the time, with the ratio
of the larger size to the smaller: linear growth gives about the size ratio (4x for 250 -> 1,000),
quadratic its square (16x). With `--before DIR` the same runs are made with another checkout in
the same run, for a before/after table. With `--stream` the clusters also go through one worker on a
local broker (`streams.dev`, 8 partitions), timed from the first publish to the last URL's
complete decision.

    python bench/bench_clusters.py --sizes 250 1000 [--before /tmp/before] [--stream]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import orjson
from common import REPO, Table, append_results

from streams.dev import Cluster, all_complete, start_broker, stop_broker

PAGE = ("<html><head><title>Not found</title></head><body><div id='nav'><a href='/'>Home</a> "
        "<a href='/news'>News</a></div><div id='main'><h1>We could not find that page</h1>"
        "<p>The page you asked for is not here any more, or it never was. Our editors move and retire "
        "stories from time to time, and links from other sites may point to an address that has changed.</p>"
        "<p>Error reference {ref} was logged on {day} May at {hour}:00. Please go back to the home page and "
        "try the search box instead, or write to the newsroom if you think something is wrong with the site.</p>"
        "</div></body></html>")


def cluster_events(n: int, kind: str) -> list[bytes]:
    """n events of one page, the worst order: URL i is shorter than every URL before it."""
    out = []
    for i in range(n):
        varied = kind == "distance 0"
        body = PAGE.format(ref=10_000 + i if varied else 404, day=1 + i % 28 if varied else 1,
                           hour=i % 24 if varied else 0)
        url = f"https://trap.example/missing/{'x' * (n - i)}"
        out.append(orjson.dumps({"url": url, "body": body, "fetched_at": 1_700_000_000_000 + i * 1000,
                                 "content_type": "text/html"}))
    return out


def run_scan(checkout: Path, events: Path, workdir: Path) -> tuple[float, Counter[str]]:
    state, out = Path(tempfile.mkdtemp(prefix="state-", dir=workdir)), workdir / "decisions.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env["PYTHONPATH"] = str(checkout)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "streams.cli", "scan", str(events), "--state", str(state), "--out", str(out),
                    "--processes", "1", "--no-progress"], cwd=checkout, env=env, capture_output=True, check=True)
    seconds = time.perf_counter() - start
    lines: Counter[str] = Counter(orjson.loads(line)["url"] for line in out.read_bytes().splitlines())
    return seconds, lines


def run_stream(checkout: Path, bootstrap: str, events: list[bytes], workdir: Path, name: str
               ) -> tuple[float, Counter[str]]:
    """One worker of `checkout` on a fresh app: seconds from the first publish to the last URL's
    complete decision, and the decision records per URL."""
    cluster = Cluster(bootstrap, name, workdir / name, 8, code=checkout, log_level="warning",
                      worker_env={"NEARDUP_EXTRACT_PROCESSES": "1", "NEARDUP_TICK_INTERVAL_S": "1"})
    cluster.create_topics()
    try:
        cluster.start_worker("a")
        cluster.wait_balanced(["a"])
        urls = {orjson.loads(e)["url"] for e in events}
        start = time.perf_counter()
        cluster.publish(events)
        decisions = cluster.read_until("dedup.decisions", all_complete(urls), timeout_s=1800, settle_s=5)
        seconds = time.perf_counter() - start - 5  # the settle wait
        return seconds, Counter(d["url"] for d in decisions)
    finally:
        cluster.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[250, 1000])
    parser.add_argument("--before", type=Path, help="another checkout to run the same clusters with")
    parser.add_argument("--stream", action="store_true", help="also through one worker on a local broker")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "clusters.md")
    args = parser.parse_args()
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="bench-clusters-"))
    checkouts = {"this checkout": REPO}
    if args.before:
        checkouts = {"before": args.before.resolve(), **checkouts}
    small, large = args.sizes
    table = Table(f"one cluster in the worst rank order, `neardup scan` with one process"
                  f"{' and one worker' if args.stream else ''}, n = {small} and {large}",
                  ["code", "cluster", f"lines/URL max (n={small})", f"lines/URL max (n={large})",
                   f"lines (n={large})", f"time n={small}", f"time n={large}", "time ratio"])
    broker = start_broker(workdir / "kafka") if args.stream else None
    try:
        for name, checkout in checkouts.items():
            for path in ("scan", "stream") if broker else ("scan",):
                for kind in ("exact", "distance 0"):
                    results = []
                    for n in (small, large):
                        events = cluster_events(n, kind)
                        if path == "scan":
                            jsonl = workdir / f"{kind.replace(' ', '')}-{n}.jsonl"
                            jsonl.write_bytes(b"\n".join(events) + b"\n")
                            results.append(run_scan(checkout, jsonl, workdir))
                        else:
                            assert broker is not None
                            app = f"clusters-{path}-{kind.replace(' ', '')}-{n}-{len(table.rows)}-{os.getpid()}"
                            results.append(run_stream(checkout, broker.bootstrap, events, workdir, app))
                        print(f"{name} {path} {kind} n={n}: {results[-1][0]:.2f} s, "
                              f"{sum(results[-1][1].values())} lines", flush=True)
                    (t_small, l_small), (t_large, l_large) = results
                    table.add(f"{name} ({path})", kind, max(l_small.values()), max(l_large.values()),
                              sum(l_large.values()), f"{t_small:.2f} s", f"{t_large:.2f} s",
                              f"{t_large / t_small:.1f}x")
    finally:
        if broker is not None:
            stop_broker(workdir / "kafka")
    table.notes = [f"size ratio {large / small:.0f}x: linear work gives about that time ratio (start-up "
                   "included, which flattens it), quadratic its square",
                   "exact: one body under every URL; distance 0: an error number and date change per URL, "
                   "so the main texts differ and the SimHash does not"]
    table.print()
    append_results(args.out, "large clusters in the worst rank order", [table], started=started)


if __name__ == "__main__":
    main()
