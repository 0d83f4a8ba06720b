"""A stream's timeline from its topics: records (and the messages inside the packed ones) per time bin,
by the records' timestamps, from the first `pages.fetched` record on.

    python bench/stream_timeline.py BOOTSTRAP PREFIX [--bin 0.5]

Run it on a broker that still holds a bench phase's topics (`bench_stream.py --broker HOST:PORT --keep`;
PREFIX is the phase's app name and a dot, as its report names it). It shows where a stream waits: in
one worker, fetches coming out of the fingerprint stage at a steady rate while the index answers came
back in ever larger bursts said that the index step fell behind (bench/RESULTS.md, session 7).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from streams.kafka import records  # noqa: E402


def read_series(bootstrap: str, prefix: str) -> dict[str, list[tuple[int, int]]]:
    """Per topic (the gather topic by message kind): (timestamp ms, messages) of every record."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "neardup-stream-timeline",
                         "enable.auto.commit": False})
    series: dict[str, list[tuple[int, int]]] = defaultdict(list)
    try:
        for topic in sorted(t for t in admin.list_topics(timeout=20).topics if t.startswith(prefix)):
            partitions = admin.list_topics(topic, timeout=20).topics[topic].partitions
            total = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in partitions)
            consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
            name, got = topic[len(prefix):], 0
            while got < total:
                batch = consumer.consume(1000, timeout=5)
                if not batch:
                    break
                for msg in batch:
                    if msg.error():
                        continue
                    got += 1
                    stamp, value = msg.timestamp()[1], msg.value() or b""
                    if name == "neardup.gather":
                        kinds = Counter(type(m).__name__ for m in records.decode_gather(value))
                        for kind, n in kinds.items():
                            series[f"gather {kind.lower().replace('int', 'tick')}"].append((stamp, n))
                    elif name == "neardup.probes":
                        series["probes"].append((stamp, len(records.decode_probes(value))))
                    else:
                        series[name].append((stamp, 1))
            consumer.unassign()
    finally:
        consumer.close()
    return series


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bootstrap")
    p.add_argument("prefix", help="the phase's topic prefix, e.g. bench-0373550-this-a1-thr-w1.")
    p.add_argument("--bin", type=float, default=0.5, help="seconds per row")
    args = p.parse_args(argv)
    series = read_series(args.bootstrap, args.prefix)
    if not series.get("pages.fetched"):
        raise SystemExit(f"no pages.fetched records under the prefix {args.prefix!r}")
    t0 = min(stamp for stamp, _ in series["pages.fetched"])
    rows = 1 + int(max(stamp for s in series.values() for stamp, _ in s) - t0) // int(args.bin * 1000)
    names = sorted(series)
    counts: dict[str, Counter[int]] = {n: Counter() for n in names}
    for n in names:
        for stamp, k in series[n]:
            counts[n][int((stamp - t0) // (args.bin * 1000))] += k
    print("| s | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for row in range(rows):
        print(f"| {row * args.bin:.1f} | " + " | ".join(str(counts[n].get(row, 0)) for n in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
