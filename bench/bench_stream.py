"""Streaming benchmark: throughput, decision latency, Kafka messages per page and RSS, for 1 and 2 workers.

    python bench/bench_stream.py [--scale S] [--seed N] [--corpus DIR | --no-corpus] [--workers 1,2]
                                 [--broker HOST:PORT] [--repeat R] [--out bench/results/stream.md]
                                 [--code LABEL=DIR]... [--scan] [--tables NAME]
                                 [--worker-env KEY=VALUE]... [--broker-config KEY=VALUE]...
                                 [--py-spy DIR [--py-spy-gil]] [--no-warmup] [--keep]

Before and after a change, on one broker in one run (`git worktree add /tmp/before <commit>` first):

    python bench/bench_stream.py --code before=/tmp/before --code after=. --scan --workers 1,2 \
        --out bench/results/stream-round3.md

`--code LABEL=DIR` (repeatable; default `this=` this checkout) runs the workers and `topics create` from
that checkout (its working directory, first on PYTHONPATH; `streams.dev.Cluster(code=DIR)`), so
each code creates the topics and tables it needs. The whole sequence runs for each code in turn, the
codes alternating between `--repeat`s so that they see the same machine load. `--scan` also runs
`neardup scan` of exactly the same events (written once as JSONL) from each code's checkout, as a
subprocess timed by the wall clock, and reports stream pages/s over scan pages/s. `--tables NAME` sets
NEARDUP_TABLES for the workers and scan (e.g. `k3-b6`, 20 tables); the report says which design the
workers' /health reported. The report starts with one table: rows = metrics, columns = code × worker
count, and each code against the first; it is printed and appended to `--out`.

What bench/results/stream.md holds: `--scale 2 --corpus-limit 400 --repeat 4` (1062 pages, 1-2.5 min per
phase on a shared 2-core machine). `--worker-env` passes settings to the workers for experiments (Faust also
reads its own settings from the environment, e.g. TABLE_STANDBY_REPLICAS=0 or PRODUCER_LINGER=0.05);
`--py-spy DIR` profiles the workers during the throughput phases and adds a summary to the report (`--py-spy-gil`:
only the thread holding the GIL).

Input: the generated crawl (`neardup_core.testing.synthetic.generate_crawl(seed, scale=S)`) and, unless
`--no-corpus` or the folder is absent, the real pages of the shared corpus (`pages/*/*.html.gz`, as
`pages.fetched` events with their manifest URL; pages without one are skipped), spread evenly through
the crawl; `--corpus-copies N` writes them N times, the copies under other hosts (`copy1.<host>`, ...),
as a crawl meets mirrors of real pages. Every event is keyed by its URL, as `neardup publish` does.

Unless `--broker` is given, a broker is started with `deploy/local-kafka start --port 0` in a temporary
directory, deleting a topic's files at once (each phase's topics are deleted after it), with any
`--broker-config KEY=VALUE` beside. The broker's own count of requests served, by API, and its threads'
CPU are read before and after each phase (`bench/stream_broker.py`: `bench/BrokerRequests.java`, a
single-file Java program run by the JDK's `java`, attaches to the broker's JVM): Kafka's cost in requests
beside its bytes and record batches. Everything
the script starts (broker, workers and their extraction pools) is stopped at the end, also on failure
and on Ctrl-C / SIGTERM.

For each worker count, two phases, each on a fresh topic prefix and app id (`neardup topics create
--partitions P` first, then the workers, each with its own NEARDUP_DATA_DIR and NEARDUP_WEB_PORT; events
are published once every worker answers /health, the group's assignment covers every partition and has
not changed for `--ready-settle` seconds):

1. throughput: every event is published at once; pages per second = pages / (time of the last record in
   dedup.decisions - time of the first published record), once every URL's latest decision is complete
   and for the latest fetch of that URL, and nothing new came for `--settle` seconds. Both times are
   record timestamps (CreateTime), so they come from the same clock.
2. latency: the same events published at `--paced-fraction` (default 0.5) of the rate phase 1 measured
   for that worker count. Latency of an event = timestamp of the first complete decision for its URL
   and fetch time - timestamp of its published record.

After each phase, while the workers still run: records in every topic of the prefix and in the app's
own topics (`{app_id}-*-changelog`, Faust's `{app_id}-__assignor-__leader`), from end offsets; the
kinds of neardup.gather records (fetches, answers, revisions, ticks); RSS and PSS of each worker (its
process and all its descendants, i.e. the extraction pool, from /proc); CPU used during the phase by
each worker's main process and by its pool, by the broker (if started here), by this script, and by
the whole machine (/proc/stat; the machine is shared, so the rest is other people's load); the workers'
Prometheus counters; and the Faust timer warnings in their logs ("Timer commit is overlapping").

Numbers on a shared 2-core machine are noisy: the report puts each worker count next to the 1-worker
run of the same script run and each code next to the first, and prints the ratios. `--repeat R` runs the
sequence R times, alternating. A phase that fails (a timeout, a worker that exits) is reported with the
error and the workers' log tails, and the run goes on with the next code or worker count.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import orjson
from common import DEFAULT_CORPUS, REPO, say
from stream_input import corpus_events, crawl_events, interleave
from stream_phase import Phase, run_phase_retrying
from stream_report import Runs, Scans, checkout_state, code_comparison, phase_rows, report
from stream_scan import run_scan, write_events

from streams.dev import ClusterError, start_broker, stop_broker

DEFAULT_OUT = REPO / "bench" / "results" / "stream.md"


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--scale", type=int, default=10, help="generate_crawl scale (about 320 events per unit)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the shared corpus (skipped if absent)")
    p.add_argument("--no-corpus", action="store_true", help="only the generated crawl")
    p.add_argument("--corpus-limit", type=int, default=None, help="at most this many corpus pages")
    p.add_argument("--corpus-copies", type=int, default=1,
                   help="write the corpus pages this many times, the copies under other hosts (default 1)")
    p.add_argument("--workers", default="1,2", help="worker counts to compare, the first is the base (default 1,2)")
    p.add_argument("--repeat", type=int, default=1, help="run the whole sequence this many times")
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument(
        "--extract-processes",
        type=int,
        default=None,
        help="NEARDUP_EXTRACT_PROCESSES of each worker (default: the worker's default)",
    )
    p.add_argument("--paced-fraction", type=float, default=0.5, help="latency phase rate / measured throughput")
    p.add_argument("--paced-rate", type=float, default=None, metavar="PAGES_PER_S",
                   help="latency phase rate for every code and worker count instead (records per page depend on "
                   "the rate, through how full the batches are: compare codes at one rate)")
    p.add_argument("--broker", help="use this running broker (HOST:PORT) instead of starting one")
    p.add_argument("--ready-settle", type=float, default=5.0, help="seconds the assignment must hold before publishing")
    p.add_argument("--ready-timeout", type=float, default=240.0)
    p.add_argument("--settle", type=float, default=3.0, help="seconds without new decisions that end a phase")
    p.add_argument("--timeout", type=float, default=1200.0, help="seconds a phase may take")
    p.add_argument("--warmup", type=int, default=2, metavar="PHASES",
                   help="warm-up phases before measuring (throughput and paced in turn, the first code, not "
                        "reported; default 2: the first phase after a single warm-up was often slowed by the "
                        "broker, bench/RESULTS.md session 23)")
    p.add_argument("--no-warmup", dest="warmup", action="store_const", const=0, help="--warmup 0")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (worker logs, RocksDB)")
    p.add_argument(
        "--worker-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment of every worker, repeatable (e.g. Faust's own TABLE_STANDBY_REPLICAS=0)",
    )
    p.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the broker the script starts, beside file.delete.delay.ms=0, repeatable "
        "(e.g. log.index.interval.bytes=1048576)",
    )
    p.add_argument(
        "--py-spy",
        type=Path,
        default=None,
        metavar="DIR",
        help="profile the workers with py-spy during throughput phases; raw stacks into DIR",
    )
    p.add_argument(
        "--py-spy-gil",
        action="store_true",
        help="with --py-spy: sample only the thread holding the GIL in each process (py-spy --gil): where the "
        "Python CPU goes, without the waits for the GIL or a CPU that plain samples count",
    )
    p.add_argument(
        "--code",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="run the workers (and scan) from this checkout, repeatable; the first is the base of the ratios "
        "(default: this=<this checkout>)",
    )
    p.add_argument("--scan", action="store_true", help="also `neardup scan` the same events from each code")
    p.add_argument("--tables", default=None, metavar="NAME", help="NEARDUP_TABLES of the workers and scan (e.g. k3-b6)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report, appended ('-' for none)")
    return p.parse_args(argv)


def parse_codes(specs: list[str]) -> list[tuple[str, Path]]:
    """`LABEL=DIR` entries as (label, absolute checkout); none: this checkout as `this`."""
    if not specs:
        return [("this", REPO)]
    codes: list[tuple[str, Path]] = []
    for spec in specs:
        label, sep, directory = spec.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_]+", label):
            raise SystemExit(f"--code {spec!r}: expected LABEL=DIR, the label letters, digits and _")
        path = Path(directory).expanduser().resolve()
        if not (path / "streams" / "cli" / "__main__.py").is_file():
            raise SystemExit(f"--code {spec!r}: {path} is not a checkout of neardup (no streams/cli/__main__.py)")
        if label in {lab for lab, _ in codes}:
            raise SystemExit(f"--code {spec!r}: label {label} given twice")
        codes.append((label, path))
    return codes


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    args = parse(argv)
    counts = [int(x) for x in args.workers.split(",")]
    codes = parse_codes(args.code)
    labels = [lab for lab, _ in codes]
    states = {lab: checkout_state(path) for lab, path in codes}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    started, t0 = datetime.now(UTC), time.monotonic()
    load_before = Path("/proc/loadavg").read_text().split(" ")[0]
    events = crawl_events(args.seed, args.scale)
    if not args.no_corpus:
        corpus = corpus_events(args.corpus, args.corpus_limit, args.corpus_copies)
        if not corpus:
            say(f"no corpus pages under {args.corpus}: the generated crawl only")
        events = interleave(events, corpus)
    say(
        f"{len(events)} events ({len({e.url for e in events})} URLs), {sum(len(e.raw) for e in events) / 2**20:.1f} MiB"
    )
    base = Path(tempfile.mkdtemp(prefix="neardup-bench-stream-"))
    broker_dir = base / "kafka"
    tag = uuid.uuid4().hex[:6]
    runs: Runs = {lab: [] for lab in labels}
    scans: Scans = {lab: [] for lab in labels}
    failures: list[str] = []
    jsonl = write_events(events, base / "events.jsonl") if args.scan else None
    try:
        args.broker_log_dir = None  # bytes and batches per topic are read from it (`stream_logdir`)
        if args.broker:
            bootstrap, broker_pid = args.broker, None
        else:
            # a deleted phase's files go at once, not a minute later, in the middle of another phase
            config = {"file.delete.delay.ms": "0", **dict(kv.partition("=")[::2] for kv in args.broker_config)}
            say(f"starting a broker: deploy/local-kafka start --port 0 --dir {broker_dir} "
                + " ".join(f"--config {k}={v}" for k, v in config.items()))
            try:
                broker = start_broker(broker_dir, config=config)
            except ClusterError as exc:
                raise SystemExit(str(exc)) from None
            bootstrap, broker_pid = broker.bootstrap, broker.pid
            args.broker_log_dir = broker_dir / "data"
        # in one run, the broker spent 3-5 ms of CPU per page in its first phases and 1.0-1.5 later (its JVM
        # compiling its hot paths), and in session 23 the first phases after one warm-up phase still found
        # its request handlers at 7.6 ms per page against 0.5 later: the code measured first paid for it
        label, code = codes[0]
        warm_rate: float | None = None
        for n in range(args.warmup):
            kind = "throughput" if n % 2 == 0 or warm_rate is None else "latency"
            say(f"warm-up {n + 1} of {args.warmup}: one {kind} phase, not reported")
            try:
                phase = run_phase_retrying(
                    args, bootstrap, broker_pid, base, events, kind, counts[0],
                    args.paced_rate or warm_rate * args.paced_fraction if warm_rate and kind == "latency" else None,
                    f"{tag}w{n}-{label}-", label=label, code=code)
            except (ClusterError, RuntimeError) as exc:
                say(f"the warm-up phase failed ({exc}); measuring anyway")
            else:
                warm_rate = phase.rate if kind == "throughput" else warm_rate
        for rep in range(args.repeat):
            for label, code in codes if rep % 2 == 0 else list(reversed(codes)):
                if jsonl is not None:
                    scans[label].append(run_scan(args, label, code, jsonl, base / f"scan-{label}-{rep}", len(events)))
                order = counts if rep % 2 == 0 else list(reversed(counts))
                r: dict[int, dict[str, Phase]] = {}
                runs[label].append(r)
                for n in order:
                    r[n] = {}
                    for kind in ("throughput", "latency"):
                        rate = (args.paced_rate or r[n]["throughput"].rate * args.paced_fraction
                                if kind == "latency" else None)
                        try:
                            r[n][kind] = run_phase_retrying(args, bootstrap, broker_pid, base, events, kind, n, rate,
                                                            f"{tag}{rep}-{label}-", label=label, code=code)
                        except (ClusterError, RuntimeError) as exc:
                            what = f"{label}, {n} worker(s), {kind} phase (repeat {rep + 1}) failed"
                            say(f"{what}: {exc}")
                            failures.append(f"{what}:\n{str(exc)[-6000:]}")
                            break
                    for kind, p in r[n].items():
                        if args.keep:  # the final decisions, to compare with scan's (kept under the same dir)
                            (base / p.app).mkdir(parents=True, exist_ok=True)
                            (base / p.app / "final-verdicts.json").write_bytes(orjson.dumps(p.verdicts))
                        print(f"\n== {label}: {n} worker(s), {kind} ==")
                        for a, b in phase_rows(p):
                            print(f"{a:<78} {b}")
        text = report(args, argv, events, runs, scans, codes, counts, started, load_before, time.monotonic() - t0,
                      failures, states)
        table, notes = code_comparison(runs, scans, labels, counts)
        print("\n" + table)
        for note in notes:
            print(note)
        for failure in failures:
            print(failure.splitlines()[0])
        if str(args.out) != "-":
            args.out.parent.mkdir(parents=True, exist_ok=True)
            earlier = args.out.exists() and args.out.stat().st_size > 0
            with args.out.open("a") as fh:
                fh.write(("\n---\n\n" if earlier else "") + text)
            say(f"appended to {args.out}")
        return 1 if failures else 0
    except KeyboardInterrupt:
        say("interrupted; stopping what was started")
        return 130
    finally:
        if not args.broker:
            say("stopping the broker")
            stop_broker(broker_dir)
        if args.keep:
            say(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
