"""Streaming benchmark: throughput, decision latency, Kafka messages per page and RSS, for 1 and 2 workers.

    python bench/bench_stream.py [--scale S] [--seed N] [--corpus DIR | --no-corpus] [--workers 1,2]
                                 [--broker HOST:PORT] [--repeat R] [--out bench/results/stream.md]
                                 [--worker-env KEY=VALUE]... [--py-spy DIR] [--keep]

What bench/results/stream.md holds: `--scale 2 --corpus-limit 400 --repeat 4` (1062 pages, 1-2.5 min per
phase on a shared 2-core machine). `--worker-env` passes settings to the workers for experiments (Faust also
reads its own settings from the environment, e.g. TABLE_STANDBY_REPLICAS=0 or PRODUCER_LINGER=0.05);
`--py-spy DIR` profiles the workers during the throughput phases and adds a summary to the report.

Input: the generated crawl (`neardup_core.testing.synthetic.generate_crawl(seed, scale=S)`) and, unless
`--no-corpus` or the folder is absent, the real pages of the shared corpus (`pages/*/*.html.gz`, as
`pages.fetched` events with their manifest URL; pages without one are skipped), spread evenly through
the crawl. Every event is keyed by its URL, as `neardup publish` does.

Unless `--broker` is given, a broker is started with `deploy/local-kafka start --port 0` in a temporary
directory. Everything the script starts (broker, workers and their extraction pools) is stopped at the
end, also on failure and on Ctrl-C / SIGTERM.

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
run of the same script run and prints the ratios. `--repeat R` runs the sequence R times, alternating.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from common import DEFAULT_CORPUS, REPO, say
from stream_input import corpus_events, crawl_events, interleave
from stream_phase import Phase, run_phase_retrying
from stream_report import comparison, phase_rows, report

from streams.devcluster import ClusterError, start_broker, stop_broker

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
    p.add_argument("--broker", help="use this running broker (HOST:PORT) instead of starting one")
    p.add_argument("--ready-settle", type=float, default=5.0, help="seconds the assignment must hold before publishing")
    p.add_argument("--ready-timeout", type=float, default=240.0)
    p.add_argument("--settle", type=float, default=3.0, help="seconds without new decisions that end a phase")
    p.add_argument("--timeout", type=float, default=1200.0, help="seconds a phase may take")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (worker logs, RocksDB)")
    p.add_argument(
        "--worker-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment of every worker, repeatable (e.g. Faust's own TABLE_STANDBY_REPLICAS=0)",
    )
    p.add_argument(
        "--py-spy",
        type=Path,
        default=None,
        metavar="DIR",
        help="profile the workers with py-spy during throughput phases; raw stacks into DIR",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report ('-' for none)")
    return p.parse_args(argv)


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    args = parse(argv)
    counts = [int(x) for x in args.workers.split(",")]
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    started, t0 = datetime.now(UTC), time.monotonic()
    load_before = Path("/proc/loadavg").read_text().split(" ")[0]
    events = crawl_events(args.seed, args.scale)
    if not args.no_corpus:
        corpus = corpus_events(args.corpus, args.corpus_limit)
        if not corpus:
            say(f"no corpus pages under {args.corpus}: the generated crawl only")
        events = interleave(events, corpus)
    say(
        f"{len(events)} events ({len({e.url for e in events})} URLs), {sum(len(e.raw) for e in events) / 2**20:.1f} MiB"
    )
    base = Path(tempfile.mkdtemp(prefix="neardup-bench-stream-"))
    broker_dir = base / "kafka"
    tag = uuid.uuid4().hex[:6]
    results: list[dict[int, dict[str, Phase]]] = []
    try:
        if args.broker:
            bootstrap, broker_pid = args.broker, None
        else:
            say(f"starting a broker: deploy/local-kafka start --port 0 --dir {broker_dir}")
            try:
                broker = start_broker(broker_dir)
            except ClusterError as exc:
                raise SystemExit(str(exc)) from None
            bootstrap, broker_pid = broker.bootstrap, broker.pid
        for rep in range(args.repeat):
            order = counts if rep % 2 == 0 else list(reversed(counts))
            r: dict[int, dict[str, Phase]] = {}
            for n in order:
                tput = run_phase_retrying(
                    args, bootstrap, broker_pid, base, events, "throughput", n, None, f"{tag}{rep}"
                )
                rate = tput.rate * args.paced_fraction
                lat = run_phase_retrying(args, bootstrap, broker_pid, base, events, "latency", n, rate, f"{tag}{rep}")
                r[n] = {"throughput": tput, "latency": lat}
                for kind, p in r[n].items():
                    print(f"\n== {n} worker(s), {kind} ==")
                    for a, b in phase_rows(p):
                        print(f"{a:<78} {b}")
            results.append(r)
        text = report(args, argv, events, results, counts, started, load_before, time.monotonic() - t0)
        table, notes = comparison(results, counts)
        print("\n" + table)
        for note in notes:
            print(note)
        if str(args.out) != "-":
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text)
            say(f"wrote {args.out}")
        return 0
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
