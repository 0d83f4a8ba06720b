"""`neardup scan`'s CPU per page and pages/s on real pages: before and after a change, the jusText +
datasketch pipeline a user would assemble, and the compiled resiliparse + rensa pipeline, in one run (issue 22).

    git worktree add <before> <commit>                                 # the code before
    pip install --target <peer> justext==3.0.2 datasketch==2.0.0       # the pipelines' libraries, outside
    pip install --target <peer-rr> resiliparse==2.0.0 rensa==0.5.0     # the project
    python bench/bench_scan_cpu.py --before <before> --peer-path <peer> [--peer-rr-path <peer-rr>] [--after .]
                                   [--copies 3] [--rounds 3] [--processes 2] [--out bench/results/scan-cpu.md]

**Input.** Every page of the shared corpus (its manifest; pages read where they are, nothing copied into
the repository) as a `pages.fetched` event (`common.event_of`: the raw body as base64, no declared
charset), written `--copies` times into one temporary JSONL file, each copy after the first under other
hosts (``mirror1.<host>``, ...): the size of a crawl that meets the same pages on mirrors, each event one
second after the one before.

**Contenders**, each a subprocess over that file, taking turns within a round (the order rotates between
rounds), `--rounds` rounds:

* ``scan before`` and ``scan after``: ``python -m streams.cli scan FILE --processes P`` from each checkout
  (its directory first on PYTHONPATH, no NEARDUP_* variable set: each code's defaults, so before's
  extraction processes run at its NEARDUP_EXTRACT_NICE of 10), a fresh state directory each run, the
  decisions and host signals written to files;
* ``scan before, nice 0``: before with NEARDUP_EXTRACT_NICE=0, what after does by default: tells the
  priority's share of a change in pages/s from the code's;
* ``jusText + datasketch``: ``--peer-path`` first on PYTHONPATH (not the repository), one process: each
  line parsed (orjson) and its body base64-decoded, ``justext.justext(body, English stoplist)`` (its own
  charset guess), the good paragraphs joined, word 3-shingles of the lower-cased text, a
  ``MinHash(num_perm=128)`` (``update_batch``), ``MinHashLSH(threshold=0.8)`` queried then inserted into;
* ``resiliparse + rensa`` (with ``--peer-rr-path``): that directory first on PYTHONPATH, one process: each
  line parsed and decoded as above, the body decoded with resiliparse's ``detect_encoding`` and
  ``bytes_to_str``, ``extract_plain_text(html, main_content=True)`` (compiled main-content extraction), the
  same word 3-shingles, a ``RMinHash(num_perm=128, seed=42)`` (R-MinHash, compiled), ``RMinHashLSH(threshold=0.8,
  num_perm=128, num_bands=16)`` queried then inserted into.

**Measures.** pages/s = events / the subprocess's wall time (interpreter start and imports included, for
every contender alike); CPU per page = user + system time of the subprocess and all its children (the
scan's extraction processes, reaped by it: `getrusage(RUSAGE_CHILDREN)` around each waited run) / events.
Ratios are taken within a round, then the median over rounds is reported, so a burst of other work on the
shared machine moves one round rather than a ratio.

**Same outputs.** Before and after must decide alike: each scan's decision lines (every field but
`decided_at`, which is the wall clock) and host-signal lines are dumped canonically (keys sorted, lines
sorted) and hashed with SHA-256, and every round's before and after hashes must agree; and each checkout's
`extract()` of every corpus page (main text, paragraphs, language, boilerplate ratio, fallback and the
template finding) is dumped and hashed the same way. The report prints the hashes; a mismatch is printed
as one and the exit status is 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import orjson
from common import (
    DEFAULT_CORPUS,
    REPO,
    CorpusPage,
    Table,
    append_results,
    event_of,
    fmt_rate,
    load_corpus,
    say,
)

DEFAULT_OUT = REPO / "bench" / "results" / "scan-cpu.md"
RR = "resiliparse + rensa"
NUM_PERM = 128
LSH_THRESHOLD = 0.8

PIPELINE = r"""
import base64, json, sys
import justext, orjson
from datasketch import MinHash, MinHashLSH
from lxml import etree

english = justext.get_stoplist("English")
threshold, num_perm = float(sys.argv[2]), int(sys.argv[3])
lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
pages = flagged = 0
for number, line in enumerate(open(sys.argv[1], "rb")):
    event = orjson.loads(line)
    pages += 1
    try:
        paragraphs = justext.justext(base64.b64decode(event["body_b64"]), english)
    except (etree.ParserError, ValueError):  # a document without elements
        continue
    words = "\n".join(p.text for p in paragraphs if not p.is_boilerplate).lower().split()
    shingles = {" ".join(words[i:i + 3]) for i in range(len(words) - 2)} if len(words) >= 3 else (
        {" ".join(words)} if words else set())
    if not shingles:
        continue
    m = MinHash(num_perm=num_perm)
    m.update_batch([s.encode("utf-8") for s in shingles])
    flagged += bool(lsh.query(m))
    lsh.insert(f"{number}:{event['url']}", m)
print(json.dumps({"pages": pages, "flagged": flagged, "justext": justext.__file__}))
"""

PIPELINE_RR = r"""
import base64, json, sys
import orjson
from rensa import RMinHash, RMinHashLSH
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str, detect_encoding

threshold, num_perm = float(sys.argv[2]), int(sys.argv[3])
lsh = RMinHashLSH(threshold=threshold, num_perm=num_perm, num_bands=RR_BANDS)
pages = flagged = 0
for number, line in enumerate(open(sys.argv[1], "rb")):
    event = orjson.loads(line)
    pages += 1
    body = base64.b64decode(event["body_b64"])
    words = extract_plain_text(bytes_to_str(body, detect_encoding(body)), main_content=True).lower().split()
    shingles = [" ".join(words[i:i + 3]) for i in range(len(words) - 2)] if len(words) >= 3 else (
        [" ".join(words)] if words else [])
    if not shingles:
        continue
    m = RMinHash(num_perm=num_perm, seed=42)
    m.update(shingles)
    flagged += bool(lsh.query(m))
    lsh.insert(number, m)
print(json.dumps({"pages": pages, "flagged": flagged}))
"""
RR_BANDS = 16
"""rensa's LSH bands for 128 permutations (8 rows each), as its examples use them at threshold 0.8."""

# Each checkout's extract() of every corpus page, dumped canonically and hashed.
EXTRACTIONS = r"""
import gzip, hashlib, json, sys, time
import orjson
from lxml import etree
from neardup_core.extract.main_text import extract
from neardup_core.ingest.decode import decode_body

corpus = sys.argv[1]
pages = []
for line in open(corpus + "/MANIFEST.jsonl"):
    path = json.loads(line)["path"]
    pages.append((path, decode_body(gzip.decompress(open(corpus + "/" + path, "rb").read())).text))
rows = []
for path, html in pages:
    x = extract(html)
    t = x.template
    rows.append([path, x.text, list(x.paragraphs), x.language, x.boilerplate_ratio, x.fallback,
                 None if t is None else [t.action, t.reason, list(t.paragraphs), list(t.kept)]])
rows.sort()


def best(run):
    times = []
    for _ in range(3):
        start = time.process_time()
        for _, html in pages:
            run(html)
        times.append(time.process_time() - start)
    return min(times) / len(pages) * 1e3


def parse(html, parser=etree.HTMLParser()):
    try:
        etree.fromstring(html, parser)
    except ValueError:  # a string with an XML encoding declaration
        etree.fromstring(html.encode("utf-8"), parser)


print(json.dumps({"sha256": hashlib.sha256(orjson.dumps(rows)).hexdigest(), "pages": len(rows),
                  "template findings": sum(r[6] is not None for r in rows), "extract ms": best(extract),
                  "parse ms": best(parse)}))
"""


@dataclasses.dataclass
class Run:
    wall_s: float
    cpu_s: float
    pages: int
    decisions: str | None = None  # sha256 of the canonical decisions
    signals: str | None = None  # sha256 of the canonical host signals
    verdicts: Counter[str] | None = None
    start_cpu_s: float = 0.0  # CPU of the same command on one event: start-up and imports


def copies_of(pages: list[CorpusPage], copies: int) -> list[CorpusPage]:
    """The pages `copies` times, each copy after the first under other hosts (``mirror<i>.<host>``)."""
    out = list(pages)
    for i in range(1, copies):
        for page in pages:
            parts = urlsplit(page.url)
            url = urlunsplit(parts._replace(netloc=f"mirror{i}.{parts.netloc}"))
            out.append(dataclasses.replace(page, url=url))
    return out


def child_env(pythonpath: Path, **extra: str) -> dict[str, str]:
    """This environment without NEARDUP_* settings (each code's defaults), `pythonpath` first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env.update(PYTHONPATH=str(pythonpath), PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system of the process and its children) of one waited run, and its
    standard output; raises with its standard error when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}... failed ({result.returncode}):\n{result.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout


def canonical_sha256(path: Path, drop: tuple[str, ...] = ()) -> str:
    """SHA-256 of the JSON lines of `path` with the `drop` fields removed, keys sorted, lines sorted."""
    rows = []
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        for name in drop:
            record.pop(name, None)
        rows.append(orjson.dumps(record, option=orjson.OPT_SORT_KEYS))
    rows.sort()
    return hashlib.sha256(b"\n".join(rows)).hexdigest()


def latest_verdicts(path: Path) -> Counter[str]:
    latest: dict[str, tuple[int, str]] = {}
    for line in path.read_bytes().splitlines():
        d = orjson.loads(line)
        if d["url"] not in latest or d["revision"] > latest[d["url"]][0]:
            latest[d["url"]] = (d["revision"], d["verdict"])
    return Counter(verdict for _, verdict in latest.values())


def run_scan(checkout: Path, events: Path, work: Path, processes: int, pages: int, **env: str) -> Run:
    work.mkdir(parents=True)
    out, hosts = work / "decisions.jsonl", work / "hosts.jsonl"
    cmd = [sys.executable, "-m", "streams.cli", "scan", str(events), "--state", str(work / "state"),
           "--out", str(out), "--hosts", str(hosts), "--processes", str(processes), "--no-progress"]
    wall, cpu, _ = timed(cmd, checkout, child_env(checkout, **env))
    return Run(wall, cpu, pages, canonical_sha256(out, ("decided_at",)), canonical_sha256(hosts, ("decided_at",)),
               latest_verdicts(out))


def run_pipeline(peer_path: Path, events: Path, work: Path, pages: int, script: str = PIPELINE) -> Run:
    cmd = [sys.executable, "-c", script, str(events), str(LSH_THRESHOLD), str(NUM_PERM)]
    wall, cpu, stdout = timed(cmd, work, child_env(peer_path))
    said = orjson.loads(stdout.strip().splitlines()[-1])
    if said["pages"] != pages:
        raise SystemExit(f"the pipeline read {said['pages']} pages of {pages}")
    return Run(wall, cpu, pages)


def extraction_hash(checkout: Path, corpus: Path) -> dict[str, object]:
    _, _, stdout = timed([sys.executable, "-c", EXTRACTIONS, str(corpus)], checkout, child_env(checkout))
    result: dict[str, object] = orjson.loads(stdout.strip().splitlines()[-1])
    return result


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", type=Path, required=True, help="checkout of the code before (git worktree add)")
    p.add_argument("--after", type=Path, default=REPO, help="checkout of the code after (default: this one)")
    p.add_argument("--peer-path", type=Path, required=True,
                   help="a directory holding justext and datasketch (pip install --target DIR justext datasketch)")
    p.add_argument("--peer-rr-path", type=Path, default=None,
                   help="a directory holding resiliparse and rensa (pip install --target DIR resiliparse rensa): "
                        "adds the resiliparse + rensa pipeline")
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    p.add_argument("--limit", type=int, default=None, help="only the first N corpus pages (a quick try)")
    p.add_argument("--copies", type=int, default=3, help="times the corpus is written, under other hosts (3)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--processes", type=int, default=2, help="scan's --processes (2)")
    p.add_argument("--no-before-nice0", dest="before_nice0", action="store_false",
                   help="leave out before run with NEARDUP_EXTRACT_NICE=0")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report, appended ('-' for none)")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    started = time.perf_counter()
    before, after = args.before.resolve(), args.after.resolve()
    pages = copies_of(load_corpus(args.corpus, args.limit), args.copies)
    n = len(pages)
    contenders = ["scan before", *(["scan before, nice 0"] if args.before_nice0 else []), "scan after",
                  "jusText + datasketch", *([RR] if args.peer_rr_path else [])]
    runs: dict[str, list[Run]] = {name: [] for name in contenders}
    with tempfile.TemporaryDirectory(prefix="bench-scan-cpu-") as tmp:
        work = Path(tmp)
        events, first = work / "events.jsonl", work / "first.jsonl"
        with events.open("wb") as fh:
            for i, page in enumerate(pages):
                fh.write(event_of(page, i) + b"\n")
        first.write_bytes(event_of(pages[0], 0) + b"\n")

        def measure(name: str, path: Path, place: Path, count: int) -> Run:
            if name == "scan before":
                return run_scan(before, path, place, args.processes, count)
            if name == "scan before, nice 0":
                return run_scan(before, path, place, args.processes, count, NEARDUP_EXTRACT_NICE="0")
            if name == "scan after":
                return run_scan(after, path, place, args.processes, count)
            place.mkdir()
            if name == RR:
                return run_pipeline(args.peer_rr_path.resolve(), path, place, count,
                                    PIPELINE_RR.replace("RR_BANDS", str(RR_BANDS)))
            return run_pipeline(args.peer_path.resolve(), path, place, count)

        say(f"{n} events ({n // args.copies} corpus pages x {args.copies}), {events.stat().st_size / 2**20:.0f} MiB; "
            f"{args.rounds} rounds of {', '.join(contenders)}")
        for r in range(args.rounds):
            order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
            for name in order:
                place = work / f"r{r}-{name.replace(' ', '-').replace(',', '')}"
                run = measure(name, events, place, n)
                run.start_cpu_s = measure(name, first, place.with_name(place.name + "-start"), 1).cpu_s
                runs[name].append(run)
                say(f"round {r + 1} {name}: {run.wall_s:.1f} s wall, {run.cpu_s / n * 1e3:.2f} ms CPU per page, "
                    f"{run.start_cpu_s:.2f} s CPU to start")
        say("extraction of every corpus page, each checkout")
        extracted = {"before": extraction_hash(before, args.corpus), "after": extraction_hash(after, args.corpus)}

    def per_round(name: str, other: str, measure: str) -> float:
        """The median over rounds of name's measure over other's: pages/s, CPU, or CPU past start-up."""
        values = []
        for a, b in zip(runs[name], runs[other], strict=True):
            values.append((a.pages / a.wall_s) / (b.pages / b.wall_s) if measure == "rate"
                          else a.cpu_s / b.cpu_s if measure == "cpu"
                          else (a.cpu_s - a.start_cpu_s) / (b.cpu_s - b.start_cpu_s))
        return statistics.median(values)

    pipeline = "jusText + datasketch"
    rr = RR in runs
    table = Table(f"`neardup scan` and the jusText + datasketch pipeline on {n:,} real pages "
                  f"({n // args.copies} corpus pages x {args.copies} hosts), {args.rounds} rounds, median",
                  ["contender", "pages/s", "CPU ms per page, all processes (rounds)", "of it past start-up",
                   "start-up CPU s", "pages/s / pipeline's", "pipeline's CPU / this CPU", "CPU / before's",
                   "CPU past start-up / before's", "pages/s / before's",
                   *(["CPU / resiliparse + rensa's", "past start-up / resiliparse + rensa's"] if rr else [])])
    for name in contenders:
        rs = runs[name]
        rate = statistics.median(r.pages / r.wall_s for r in rs)
        per_page = [r.cpu_s / r.pages * 1e3 for r in rs]
        past_start = statistics.median((r.cpu_s - r.start_cpu_s) / r.pages * 1e3 for r in rs)
        start = statistics.median(r.start_cpu_s for r in rs)
        versus_pipeline = ["1", "1"] if name == pipeline else [
            f"{per_round(name, pipeline, 'rate'):.2f}x", f"{1 / per_round(name, pipeline, 'cpu'):.2f}x"]
        versus_rr = [f"{per_round(name, RR, 'cpu'):.2f}x", f"{per_round(name, RR, 'past'):.2f}x"] if rr else []
        versus_before = ["", "", ""] if name in (pipeline, RR) else [
            f"{per_round(name, 'scan before', 'cpu'):.2f}x", f"{per_round(name, 'scan before', 'past'):.2f}x",
            f"{per_round(name, 'scan before', 'rate'):.2f}x"]
        table.add(name, fmt_rate(rate), f"{statistics.median(per_page):.2f} ({min(per_page):.2f}–{max(per_page):.2f})",
                  f"{past_start:.2f}", f"{start:.2f}", *versus_pipeline, *versus_before, *versus_rr)

    same_decisions = all(a.decisions == b.decisions and a.signals == b.signals
                         for a, b in zip(runs["scan before"], runs["scan after"], strict=True))
    same_extraction = extracted["before"]["sha256"] == extracted["after"]["sha256"]
    first_before, first_after = runs["scan before"][0], runs["scan after"][0]
    verdicts = ", ".join(f"{k} {v}" for k, v in sorted((first_after.verdicts or Counter()).items()))
    table.notes += [
        f"scan: `--processes {args.processes}`, each checkout's defaults "
        + ("(extraction processes at the checkout's own NEARDUP_EXTRACT_NICE default: 10 before issue 22 changed it, "
           "0 since); `scan before, nice 0` is before with "
           "NEARDUP_EXTRACT_NICE=0. " if args.processes > 1 else "(one process: extraction in the scan process "
           "itself, no pool, so no nice setting applies). ")
        + "Pipeline: "
        f"justext + datasketch from {args.peer_path} (MinHash(num_perm={NUM_PERM}), MinHashLSH(threshold="
        f"{LSH_THRESHOLD}), word 3-shingles), one process."
        + (f" resiliparse + rensa from {args.peer_rr_path}: extract_plain_text(main_content=True), the same "
           f"shingles, RMinHash(num_perm={NUM_PERM}), RMinHashLSH(threshold={LSH_THRESHOLD}, num_bands={RR_BANDS}), "
           "one process." if rr else ""),
        "pages/s over the subprocess's wall time, start-up included; CPU = user + system of the subprocess and "
        "its children; start-up = the CPU of the same command on the first event alone (interpreter, imports, "
        "warm-up, pool), run in each round; past start-up = (CPU - start-up) / pages; ratios taken per round, "
        "median over rounds.",
        f"decisions (every field but decided_at) and host signals, sha256 of the sorted canonical lines, before "
        f"vs after in every round: {'the same' if same_decisions else 'DIFFERENT'} (decisions "
        f"{first_before.decisions} / {first_after.decisions}; host signals {first_before.signals} / "
        f"{first_after.signals}); latest verdicts per URL: {verdicts}.",
        f"extract() of all {extracted['after']['pages']} corpus pages (text, paragraphs, language, boilerplate "
        f"ratio, fallback, template finding), sha256 of the sorted canonical dump: before "
        f"{extracted['before']['sha256']}, after {extracted['after']['sha256']}: "
        f"{'the same' if same_extraction else 'DIFFERENT'} ({extracted['after']['template findings']} template "
        f"findings).",
    ]
    stages = Table(f"extract() of each of the {extracted['after']['pages']} corpus pages, decoded beforehand, in one "
                   "process per checkout: CPU ms per page, best of 3 passes",
                   ["", "before", "after", "after / before"])
    for key, label in (("extract ms", "extract() (segmenter, classification, template check, fallback)"),
                       ("parse ms", "lxml's parse alone, to a tree (libxml2)")):
        b, a = float(extracted["before"][key]), float(extracted["after"][key])  # type: ignore[arg-type]
        stages.add(label, f"{b:.3f}", f"{a:.3f}", f"{a / b:.2f}x")
    table.print()
    stages.print()
    if str(args.out) != "-":
        append_results(args.out, "scan CPU per page before and after, and the jusText + datasketch pipeline"
                       + (" and resiliparse + rensa " if rr else " ") +
                       f"(before: {before}, after: {after})", [table, stages], started=started)
    return 0 if same_decisions and same_extraction else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
