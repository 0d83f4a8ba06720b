"""What neardup saves a Scrapy crawl: the test site (`neardup_core/testing/crawl_site.py`) crawled plain, embedded
(the defaults; and `follow`: duplicates' links followed and no item held, the defaults before 2026-12-05) and in
Kafka mode with the defaults (a local broker and one worker).

For each crawl, by the site's server and the crawl's items: requests fetched, trap-host fetches, distinct main
texts reached, items emitted and how many of them are copies, wall time; savings against the plain crawl. Prints
the table and appends it, with the date, the machine and the command, to `bench/results/scrapy-loop.md`::

    python bench/bench_scrapy_loop.py                      # plain, embedded, follow, kafka (starts a broker)
    python bench/bench_scrapy_loop.py --modes plain,embedded,follow
    python bench/bench_scrapy_loop.py --broker 127.0.0.1:9092   # Kafka mode on a running broker
    python bench/bench_scrapy_loop.py --repeat 5           # each neardup crawl 5 times: a row each, and the spread

The order of a concurrent crawl varies, and so do the counts: `--repeat` states their spread.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shlex
import sys
import tempfile
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import machine  # noqa: E402
from streams.dev import Cluster, start_broker, stop_broker  # noqa: E402
from tests.functional.test_scrapy_loop_crawl import FOLLOW_NO_HOLD  # noqa: E402
from tests.integration.checks import WORKER_ENV  # noqa: E402
from tests.integration.site_crawl import CrawlResult, run_crawl, savings_table  # noqa: E402

MODES = ("plain", "embedded", "follow", "kafka")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", default=",".join(MODES), help=f"of {', '.join(MODES)} (plain first)")
    parser.add_argument("--broker", default=None, help="a running broker for the kafka mode (default: start one)")
    parser.add_argument("--repeat", type=int, default=1, help="crawls of each mode but plain (default 1)")
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "results" / "scrapy-loop.md")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    modes = [m for m in args.modes.split(",") if m]
    if not modes or modes[0] != "plain" or any(m not in MODES for m in modes):
        parser.error(f"--modes: plain first, then any of {', '.join(MODES[1:])}")
    work = Path(tempfile.mkdtemp(prefix="bench-scrapy-loop-"))
    results: list[CrawlResult] = []
    broker, broker_dir = args.broker, None
    if "kafka" in modes and broker is None:
        broker_dir = work / "broker"
        broker = start_broker(broker_dir).bootstrap
    try:
        for mode in modes:
            for run in range(1 if mode == "plain" else args.repeat):
                tag = f" ({run + 1})" if args.repeat > 1 and mode != "plain" else ""
                if mode == "plain":
                    results.append(run_crawl("plain", work, label="plain Scrapy"))
                elif mode == "embedded":
                    results.append(run_crawl("embedded", work, label=f"embedded, defaults{tag}"))
                elif mode == "follow":
                    results.append(run_crawl("embedded", work, label=f"embedded, follow duplicates, no hold{tag}",
                                             settings=FOLLOW_NO_HOLD))
                else:
                    assert broker is not None
                    results.append(kafka_crawl(work, broker, f"kafka, defaults{tag}"))
                print(f"{results[-1].label}: {results[-1].fetched} fetched in {results[-1].wall_s:.1f} s", flush=True)
    finally:
        if broker_dir is not None:
            stop_broker(broker_dir)
    table = savings_table(results)
    if args.repeat > 1:
        table += "\n\n" + "\n".join(spread(results))
    print(table)
    info = machine()
    when = dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    command = shlex.join(["python", "bench/bench_scrapy_loop.py", *sys.argv[1:]])  # no machine paths
    section = [f"## The test site crawled plain and with neardup ({when})", "",
               f"- machine: {info['nproc']} CPUs ({info['cpu']}), Python {info['python']}, load average {info['load']}",
               f"- command: `{command}`", "", table, ""]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as out:
        out.write("\n".join(section) + "\n")
    print(f"appended to {args.results}")


def kafka_crawl(work: Path, broker: str, label: str) -> CrawlResult:
    """Kafka mode: topics under a fresh prefix (nothing decided before), one worker."""
    prefix = f"bench-loop-{uuid.uuid4().hex[:8]}"
    cluster = Cluster(broker, prefix, work / prefix, worker_env=WORKER_ENV)
    try:
        cluster.create_topics()
        cluster.start_worker("a")
        cluster.wait_balanced(["a"])
        return run_crawl("kafka", work, label=label, broker=broker, topic_prefix=cluster.topic_prefix,
                         env={k: v for k, v in os.environ.items() if k.startswith("NEARDUP_SASL")})
    finally:
        cluster.stop_all()


def spread(results: list[CrawlResult]) -> list[str]:
    """Per crawl (the label without its run number): the range of each count over its runs."""
    by: dict[str, list[CrawlResult]] = {}
    for r in results[1:]:
        by.setdefault(r.label.rsplit(" (", 1)[0], []).append(r)
    total = len(results[0].site.content_ids())

    def span(values: list[int]) -> str:
        return f"{min(values)}–{max(values)}" if min(values) != max(values) else str(values[0])

    lines = []
    for label, runs in by.items():
        worst = max(runs, key=lambda r: r.duplicate_items / max(1, len(r.items)))
        lines.append(f"- {label}, {len(runs)} runs: {span([r.fetched for r in runs])} fetched, "
                     f"{span([r.trap_fetched for r in runs])} on the trap host, "
                     f"{span([total - len(r.missed) for r in runs])} of {total} texts reached, "
                     f"{span([len(r.items) for r in runs])} items, {span([r.duplicate_items for r in runs])} "
                     f"duplicate items (at most {worst.duplicate_items / max(1, len(worst.items)):.1%})")
    return lines


if __name__ == "__main__":
    main()
