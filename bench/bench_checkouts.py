"""Two checkouts of neardup side by side in one run: is a change (a restructure, say) within noise?

For each checkout (e.g. `git worktree add /tmp/before <commit>` and this one) the benchmark times, in
alternating rounds so that both see the same machine load:

* **extraction**: `extract()` over every corpus page, in one fresh process per round (decoding is
  done before the clock starts); CPU time of the loop;
* **scan**: `neardup scan` of the corpus as JSONL with one process, a fresh state dir each round;
  wall and CPU time of the whole command (start-up included).

It prints the median of each and the ratio of the second checkout to the first (1.00 = the same;
the machine is shared, so read the spread of the rounds too), and appends the table to a results
file with the date, the machine and the command. It also checks that both scans wrote the same
decisions (every field but `decided_at`). Module paths that moved between the checkouts are found
by trying the new name, then the old one.

    python bench/bench_checkouts.py --before /tmp/before --after . --rounds 3
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from common import DEFAULT_CORPUS, Table, append_results, load_corpus, write_events_jsonl

EXTRACT_SNIPPET = r"""
import gzip, json, sys, time
corpus = sys.argv[1]
try:
    from neardup_core.extract.main_text import extract
    from neardup_core.ingest.decode import decode_body
except ImportError:
    from neardup_core.extract import extract
    from neardup_core.decode import decode_body
pages = []
for line in open(corpus + "/MANIFEST.jsonl"):
    path = json.loads(line)["path"]
    pages.append(decode_body(gzip.decompress(open(corpus + "/" + path, "rb").read())).text)
start = time.process_time()
for html in pages:
    extract(html)
print(time.process_time() - start, len(pages))
"""


def child_env(checkout: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env["PYTHONPATH"] = str(checkout)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def time_extract(checkout: Path, corpus: Path) -> float:
    out = subprocess.run([sys.executable, "-c", EXTRACT_SNIPPET, str(corpus)], cwd=checkout, env=child_env(checkout),
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[0])


def time_scan(checkout: Path, events: Path, workdir: Path, name: str) -> tuple[float, float, Path]:
    state, out = Path(tempfile.mkdtemp(prefix="state-", dir=workdir)), workdir / f"{name}.jsonl"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "streams.cli", "scan", str(events), "--state", str(state), "--out", str(out),
                    "--processes", "1", "--no-progress"], cwd=checkout, env=child_env(checkout),
                   capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out


def decisions_of(path: Path) -> list[dict[str, object]]:
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    for row in rows:
        row.pop("decided_at", None)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the first checkout (the reference)")
    parser.add_argument("--after", type=Path, default=Path(__file__).resolve().parents[1], help="the second")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "checkouts.md")
    args = parser.parse_args()
    started = time.perf_counter()
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    pages = load_corpus(args.corpus)
    workdir = Path(tempfile.mkdtemp(prefix="bench-checkouts-"))
    events = write_events_jsonl(pages, workdir / "corpus.jsonl")
    times: dict[str, dict[str, list[float]]] = {n: {"extract": [], "scan wall": [], "scan cpu": []} for n in checkouts}
    outputs: dict[str, Path] = {}
    for round_ in range(args.rounds):
        order = list(checkouts.items()) if round_ % 2 == 0 else list(reversed(checkouts.items()))
        for name, checkout in order:
            times[name]["extract"].append(time_extract(checkout, args.corpus))
            wall, cpu, outputs[name] = time_scan(checkout, events, workdir, name)
            times[name]["scan wall"].append(wall)
            times[name]["scan cpu"].append(cpu)
            print(f"round {round_ + 1} {name}: extract {times[name]['extract'][-1]:.2f} s, scan {wall:.2f} s wall, "
                  f"{cpu:.2f} s CPU", flush=True)
    same = decisions_of(outputs["before"]) == decisions_of(outputs["after"])
    table = Table(f"{len(pages)} corpus pages, {args.rounds} alternating rounds",
                  ["what", "before (median)", "after (median)", "after / before", "before's rounds", "after's rounds"])
    for what in ("extract", "scan wall", "scan cpu"):
        b, a = (statistics.median(times[n][what]) for n in ("before", "after"))
        table.add(what, f"{b:.2f} s", f"{a:.2f} s", f"{a / b:.3f}",
                  *(" / ".join(f"{t:.2f}" for t in times[n][what]) for n in ("before", "after")))
    table.notes = [f"before = {checkouts['before']}, after = {checkouts['after']}",
                   f"the two scans' decisions identical (every field but decided_at, line by line): {same}",
                   "extract: CPU time of extract() over every page in a fresh process; scan: `neardup scan "
                   "--processes 1` of the corpus as JSONL, start-up included, a fresh state dir each round"]
    table.print()
    append_results(args.out, "two checkouts side by side: extraction and scan", [table], started=started)


if __name__ == "__main__":
    main()
