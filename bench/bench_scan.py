"""Whole runs on the corpus: `neardup scan` against stock jusText and a jusText + datasketch pipeline.

    python bench/bench_scan.py [--limit N] [--quick] [--rounds R] [--repeat R] [--tables NAME]

Every corpus page becomes a `pages.fetched` event (raw body as base64, no declared charset) in a
temporary JSONL file before anything is timed. Two tables:

1. **Whole runs** over that file, one fresh state directory per run, in rounds; the contenders take
   turns within a round (the order rotates between rounds) and each ratio is taken within a round,
   then the median over rounds is reported, so a burst of other work on the shared machine moves
   one round, not the ratio:

   * ``neardup scan`` (`streams.cli.scan.run_scan`, RocksDB state, decisions file) with 1 and 2 processes;
   * ``jusText alone``: each event parsed, its body given as bytes to ``justext.justext`` with the
     English stoplist (jusText's own charset guess), the good paragraphs joined;
   * ``jusText + datasketch``: the same, then word 3-shingles of the lower-cased main text, a
     ``MinHash(num_perm=128)`` from them (``update_batch``), and ``MinHashLSH(threshold=0.8)``
     queried and then inserted into, one page at a time, in one process: the pipeline a user would
     assemble from the usual libraries.

2. **Stages**, per page on the decoded pages (each page's best of R runs, stages taking turns on each
   page): event parsing, decoding, lxml parsing alone, stock jusText, our `extract()`, features,
   SimHash, the two digests, resiliparse's C-level `extract_plain_text` as a floor, and the whole
   per-page `fingerprint_event`; plus the index step (`Engine.decide` on RocksDB, every page in
   order, best of R whole passes), which cannot be repeated per page (a second call is a recrawl).
"""

from __future__ import annotations

import argparse
import base64
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import justext
import orjson
from common import (
    DEFAULT_CORPUS,
    DEFAULT_RESULTS,
    Table,
    append_results,
    best_times,
    fmt_rate,
    fmt_ratio,
    load_corpus,
    lxml_parse,
    median,
    print_machine,
    resiliparse_text,
    write_events_jsonl,
)
from datasketch import MinHash, MinHashLSH
from lxml import etree

from neardup_core.dedup.engine import Engine
from neardup_core.extract.main_text import extract
from neardup_core.fingerprint.digests import body_sha256, text_sha256
from neardup_core.fingerprint.features import shingle_features
from neardup_core.fingerprint.page import fingerprint_event
from neardup_core.fingerprint.simhash import simhash64
from neardup_core.ingest.decode import decode_body
from neardup_core.ingest.event import parse_event
from neardup_core.settings import CoreSettings
from streams.cli.scan import run_scan
from streams.settings import Settings

ENGLISH = justext.get_stoplist("English")
JUSTEXT_ALONE = "jusText alone (stock, English)"
PIPELINE = "jusText + datasketch MinHash/LSH"
LSH_THRESHOLD = 0.8
NUM_PERM = 128


# --------------------------------------------------------------------------------------- contenders

def main_text_stock(body: bytes) -> str:
    """Stock jusText on the raw body (its own charset guess), good paragraphs joined."""
    try:
        paragraphs = justext.justext(body, ENGLISH)
    except (etree.ParserError, ValueError):  # a document without elements
        return ""
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def word_shingles(text: str, size: int = 3) -> set[str]:
    words = text.lower().split()
    if len(words) < size:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i:i + size]) for i in range(len(words) - size + 1)}


def events_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def run_justext_alone(path: Path) -> dict[str, Any]:
    kept = 0
    for line in path.open("rb"):
        event = orjson.loads(line)
        kept += bool(main_text_stock(base64.b64decode(event["body_b64"])))
    return {"pages with main text": kept}


def run_justext_datasketch(path: Path) -> dict[str, Any]:
    """jusText, word 3-shingles, MinHash(128), MinHashLSH(0.8): query, then insert, page by page."""
    lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)
    flagged = 0
    for number, line in enumerate(path.open("rb")):
        event = orjson.loads(line)
        shingles = word_shingles(main_text_stock(base64.b64decode(event["body_b64"])))
        if not shingles:
            continue
        m = MinHash(num_perm=NUM_PERM)
        m.update_batch([s.encode("utf-8") for s in shingles])
        flagged += bool(lsh.query(m))
        lsh.insert(f"{number}:{event['url']}", m)
    return {"pages with an LSH candidate": flagged}


def run_neardup_scan(path: Path, workdir: Path, settings: Settings, processes: int) -> dict[str, Any]:
    state = Path(tempfile.mkdtemp(prefix="state-", dir=workdir))
    try:
        summary = run_scan(settings, [path], state=state, out=state / "decisions.jsonl", processes=processes,
                           progress=False)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    dups = summary.verdicts.get("near_duplicate", 0) + summary.verdicts.get("exact_duplicate", 0)
    return {"URLs decided duplicate": dups, "rejected": summary.rejected}


def run_contender(name: str, path: Path, workdir: Path, tables: str | None) -> dict[str, Any]:
    """One whole run, timed from the first page to the last (imports excluded, caches cold)."""
    settings = Settings() if tables is None else Settings(tables=tables)
    start = time.perf_counter()
    cpu_start = cpu_seconds()
    if name.startswith("neardup scan, processes="):
        info = run_neardup_scan(path, workdir, settings, int(name.rsplit("=", 1)[1]))
    elif name == JUSTEXT_ALONE:
        info = run_justext_alone(path)
    elif name == PIPELINE:
        info = run_justext_datasketch(path)
    else:
        raise SystemExit(f"unknown contender {name!r}")
    return {"seconds": time.perf_counter() - start, "cpu_seconds": cpu_seconds() - cpu_start, "info": info}


def cpu_seconds() -> float:
    """User + system CPU time of this process and of its finished children (the scan's pool)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def whole_runs(path: Path, workdir: Path, tables: str | None, rounds: int,
               processes: list[int]) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, Any]]]:
    """Each run in a fresh Python process, as a `neardup scan` command would be: per-process caches
    (stoplists, the stoplist word index) start cold in every run, for every contender."""
    names = [f"neardup scan, processes={p}" for p in processes] + [JUSTEXT_ALONE, PIPELINE]
    seconds: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in names}
    info: dict[str, dict[str, Any]] = {}
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            spec = {"name": name, "path": str(path), "workdir": str(workdir), "tables": tables}
            proc = subprocess.run([sys.executable, __file__, "--child-run", json.dumps(spec)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"{name} failed:\n{proc.stdout}\n{proc.stderr}")
            result = json.loads([x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1][7:])
            seconds[name]["wall"].append(result["seconds"])
            seconds[name]["cpu"].append(result["cpu_seconds"])
            info[name] = result["info"]
            print(f"  round {r + 1}/{rounds}: {name}: {result['seconds']:.1f} s wall, "
                  f"{result['cpu_seconds']:.1f} s CPU", flush=True)
    return seconds, info


# -------------------------------------------------------------------------------------------- stages

def stage_table(events: list[bytes], repeat: int, fp_settings: CoreSettings, design_settings: Settings,
                workdir: Path) -> Table:
    items = []
    for raw in events:
        page = parse_event(raw)
        html = decode_body(page.body, content_type=page.content_type).text
        main = extract(html).text
        items.append((raw, page.body, html, main, shingle_features(main, fp_settings.shingle_size)))
    size = fp_settings.shingle_size

    def guarded(run: Callable[[Any], object]) -> Callable[[Any], object]:
        def call(item: Any) -> object:
            try:
                return run(item)
            except (etree.ParserError, ValueError):
                return None
        return call

    stages: dict[str, Callable[[Any], object]] = {
        "parse event (JSON, base64, validation)": lambda it: parse_event(it[0]),
        "decode (charset, decode_body)": lambda it: decode_body(it[1], content_type="text/html"),
        "HTML parse (lxml alone)": lambda it: lxml_parse(it[2]),
        "jusText stock (English stoplist)": guarded(lambda it: justext.justext(it[2], ENGLISH)),
        "our extract() (fast jusText + stoplist choice)": lambda it: extract(it[2]),
        "resiliparse extract_plain_text (C floor)": lambda it: resiliparse_text(it[2]),
        f"features (shingle_features, {size}-shingles)": lambda it: shingle_features(it[3], size),
        "SimHash (simhash64)": lambda it: simhash64(it[4].hashes, it[4].weights),
        "digests (body + text SHA-256)": lambda it: (body_sha256(it[1]), text_sha256(it[3])),
        "fingerprint_event (all of the above we run)":
            lambda it: fingerprint_event(it[0], settings=fp_settings),
    }
    print(f"stages: {len(items)} pages, best of {repeat} per page ...", flush=True)
    totals = best_times(items, stages, repeat)

    # The index step, whole passes in page order on a fresh RocksDB state each time.
    fetches = [fingerprint_event(raw, settings=fp_settings) for raw in events]
    config = design_settings.core
    index_best = float("inf")
    for _ in range(repeat):
        state = Path(tempfile.mkdtemp(prefix="engine-", dir=workdir))
        engine = Engine(config, state)
        start = time.perf_counter()
        for i, fetch in enumerate(fetches):
            engine.decide(fetch, now_ms=1_700_000_000_000 + i)
        index_best = min(index_best, time.perf_counter() - start)
        engine.close()
        shutil.rmtree(state, ignore_errors=True)
    totals[f"index step (Engine.decide, RocksDB, {config.design.name})"] = index_best

    n = len(items)
    stock = totals["jusText stock (English stoplist)"]
    whole = totals["fingerprint_event (all of the above we run)"]
    table = Table(f"Stages per page ({n} corpus pages, best of {repeat} runs per page)",
                  ["stage", "pages/s", "ms/page", "speed vs stock jusText", "share of fingerprint_event"])
    for name, total in totals.items():
        not_part = ("jusText stock", "resiliparse", "HTML parse", "fingerprint_event", "index")
        share = "" if name.startswith(not_part) else f"{total / whole:.0%}"
        table.add(name, fmt_rate(n / total), f"{total / n * 1e3:.3f}", fmt_ratio(stock / total), share)
    table.notes += [
        "HTML parse, jusText stock, resiliparse and our extract() all start from the decoded text; "
        "features and SimHash from our extracted main text; shares do not sum to 100% (lxml parsing "
        "is inside extract(); stoplist choice, Fetch building etc. are not listed).",
        "the index step row is a whole pass in page order (best of R passes), not a per-page best.",
        "each stage is timed alone on data it just saw (warm caches): run in sequence, inside "
        "fingerprint_event, the same steps take longer than the sum of their rows.",
    ]
    return table


# ---------------------------------------------------------------------------------------------- main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="only the first N corpus pages")
    parser.add_argument("--quick", action="store_true", help="200 pages, 1 round, best of 1")
    parser.add_argument("--rounds", type=int, default=3, help="whole-run rounds (median ratio reported)")
    parser.add_argument("--repeat", type=int, default=3, help="stage runs per page (best counts)")
    parser.add_argument("--processes", default="1,2", help="scan process counts, comma-separated")
    parser.add_argument("--tables", default=None,
                        help="table design for scan (default: NEARDUP_TABLES or auto)")
    parser.add_argument("--skip-whole", action="store_true")
    parser.add_argument("--skip-stages", action="store_true")
    parser.add_argument("--child-run", help=argparse.SUPPRESS)
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--no-write", action="store_true", help="print only; do not append to --results")
    args = parser.parse_args()
    if args.child_run:
        spec = json.loads(args.child_run)
        result = run_contender(spec["name"], Path(spec["path"]), Path(spec["workdir"]), spec["tables"])
        print("RESULT " + json.dumps(result))
        return
    if args.quick:
        args.limit = args.limit or 200
        args.rounds, args.repeat = 1, 1
    started = time.perf_counter()
    print_machine()

    pages = load_corpus(args.corpus, args.limit)
    settings = Settings() if args.tables is None else Settings(tables=args.tables)
    fp_settings = settings.core
    processes = [int(p) for p in args.processes.split(",") if p]
    mbytes = sum(len(p.body) for p in pages) / 1e6
    print(f"{len(pages)} pages, {mbytes:.1f} MB of HTML; scan design {settings.core.design.name}, "
          f"k={settings.k}, "
          f"shingle size {settings.shingle_size}")
    tables: list[Table] = []
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
        workdir = Path(tmp)
        path = write_events_jsonl(pages, workdir / "pages.fetched.jsonl")
        if not args.skip_whole:
            seconds, info = whole_runs(path, workdir, args.tables, args.rounds, processes)
            peer = PIPELINE
            n = len(pages)
            table = Table(f"Whole runs over {n} corpus pages ({mbytes:.1f} MB), median of {args.rounds} "
                          f"round(s)", ["run", "pages/s (wall)", "CPU ms/page", "vs jusText+datasketch (wall)",
                                        "vs jusText+datasketch (CPU)", "vs jusText alone (CPU)", "outcome"])
            for name, t in seconds.items():
                wall = median(p / s for s, p in zip(t["wall"], seconds[peer]["wall"], strict=True))
                cpu = median(p / s for s, p in zip(t["cpu"], seconds[peer]["cpu"], strict=True))
                alone = median(a / s for s, a in zip(t["cpu"], seconds[JUSTEXT_ALONE]["cpu"], strict=True))
                outcome = ", ".join(f"{k} {v}" for k, v in info[name].items())
                table.add(name, fmt_rate(n / median(t["wall"])), f"{median(t['cpu']) / n * 1e3:.1f}",
                          fmt_ratio(wall), fmt_ratio(cpu), fmt_ratio(alone), outcome)
            table.notes += [
                "ratios are speed ratios (peer's seconds / this run's seconds) taken within each round, "
                "then the median over rounds. Every run is a fresh Python process (caches cold, as for a "
                "command); wall and CPU time count from the first page to the last, without imports. CPU "
                "time (user + system, the process and its pool) moves much less with other people's load than "
                "wall time (which doubles at times); with processes=2 only wall time can show the gain, and only when "
                "the machine has a second core free.",
                f"neardup scan: event validation, charset decoding, stoplist choice, fast jusText, body and "
                f"text SHA-256, SimHash ({settings.shingle_size}-shingles), the {settings.core.design.name} "
                f"tables and URL state in RocksDB, decisions written to a file.",
                f"jusText + datasketch: orjson + base64, justext.justext(bytes, English), word 3-shingles, "
                f"MinHash(num_perm={NUM_PERM}), MinHashLSH(threshold={LSH_THRESHOLD}) query then insert, "
                f"in memory, one process.",
            ]
            table.print()
            tables.append(table)
        if not args.skip_stages:
            table = stage_table(events_of(path), args.repeat, fp_settings, settings, workdir)
            table.print()
            tables.append(table)
    if not args.no_write and tables:
        heading = "bench_scan: neardup scan vs jusText + datasketch" + (" (quick)" if args.quick else "")
        append_results(args.results, heading, tables, started=started)


if __name__ == "__main__":
    main()
