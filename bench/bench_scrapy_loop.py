"""What neardup saves a Scrapy crawl: the test site (`neardup_core/testing/crawl_site.py`) crawled plain, embedded
(the defaults, and the settings recommended for broad crawls) and in Kafka mode (a local broker and one worker).

For each crawl, by the site's server and the crawl's items: requests fetched, trap-host fetches, distinct main
texts reached, items emitted and how many of them are copies, wall time; savings against the plain crawl. Prints
the table and appends it, with the date, the machine and the command, to `bench/results/scrapy-loop.md`::

    python bench/bench_scrapy_loop.py                      # plain, embedded, tuned, kafka (starts a broker)
    python bench/bench_scrapy_loop.py --modes plain,embedded,tuned
    python bench/bench_scrapy_loop.py --broker 127.0.0.1:9092   # Kafka mode on a running broker
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
from streams.devcluster import Cluster, start_broker, stop_broker  # noqa: E402
from tests.functional.test_scrapy_loop_crawl import TUNED  # noqa: E402
from tests.integration.checks import WORKER_ENV  # noqa: E402
from tests.integration.site_crawl import CrawlResult, run_crawl, savings_table  # noqa: E402
from tests.integration.test_scrapy_loop_kafka import HOLD_S  # noqa: E402

MODES = ("plain", "embedded", "tuned", "kafka")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", default=",".join(MODES), help=f"of {', '.join(MODES)} (plain first)")
    parser.add_argument("--broker", default=None, help="a running broker for the kafka mode (default: start one)")
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "results" / "scrapy-loop.md")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if not modes or modes[0] != "plain" or any(m not in MODES for m in modes):
        parser.error(f"--modes: plain first, then any of {', '.join(MODES[1:])}")
    work = Path(tempfile.mkdtemp(prefix="bench-scrapy-loop-"))
    results: list[CrawlResult] = []
    for mode in modes:
        if mode == "plain":
            results.append(run_crawl("plain", work, label="plain Scrapy"))
        elif mode == "embedded":
            results.append(run_crawl("embedded", work, label="embedded, defaults"))
        elif mode == "tuned":
            results.append(run_crawl("embedded", work, label="embedded, no follow, hold 2 s", settings=TUNED))
        else:
            results.append(kafka_crawl(work, args.broker))
        print(f"{results[-1].label}: {results[-1].fetched} fetched in {results[-1].wall_s:.1f} s", flush=True)
    table = savings_table(results)
    print(table)
    info = machine()
    when = dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    command = shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))
    section = [f"## The test site crawled plain and with neardup ({when})", "",
               f"- machine: {info['nproc']} CPUs ({info['cpu']}), Python {info['python']}, load average {info['load']}",
               f"- command: `{command}`", "", table, ""]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as out:
        out.write("\n".join(section) + "\n")
    print(f"appended to {args.results}")


def kafka_crawl(work: Path, broker: str | None) -> CrawlResult:
    """Kafka mode: a broker (started here unless given), topics under a fresh prefix, one worker."""
    broker_dir = None
    if broker is None:
        broker_dir = work / "broker"
        broker = start_broker(broker_dir).bootstrap
    cluster = Cluster(broker, f"bench-loop-{uuid.uuid4().hex[:8]}", work / "cluster", worker_env=WORKER_ENV)
    try:
        cluster.create_topics()
        cluster.start_worker("a")
        cluster.wait_balanced(["a"])
        return run_crawl("kafka", work, label=f"kafka, no follow, hold {HOLD_S} s", broker=broker,
                         topic_prefix=cluster.topic_prefix, settings={**TUNED, "NEARDUP_ITEM_HOLD_S": HOLD_S},
                         env={k: v for k, v in os.environ.items() if k.startswith("NEARDUP_SASL")})
    finally:
        cluster.stop_all()
        if broker_dir is not None:
            stop_broker(broker_dir)


if __name__ == "__main__":
    main()
