"""What an idle worker costs, by fetch limits: CPU of the broker and of the worker's main process while a
worker holds every partition and nothing is published (only its ticks), for each `NEARDUP_FETCH_MAX_WAIT_MS`.

    python bench/bench_idle_fetch.py [--partitions 32] [--seconds 30] [--wait-ms 1500,250,100,50]
                                     [--min-bytes 65536] [--out bench/results/idle-fetch.md]

A fetch that finds less than `NEARDUP_FETCH_MIN_BYTES` is held by the broker for up to the wait and then
answered: a short wait answers busy pipelines early (fewer, larger fetches under load; `bench_stream.py`)
and costs an idle worker one fetch of every partition it reads per wait. The first wait of the list is
measured with `NEARDUP_FETCH_MIN_BYTES=1`, Kafka's default and the worker's before these settings (Faust's
1500 ms); the others with `--min-bytes`. Ratios are against that first row, measured in the same run on one
broker (`deploy/local-kafka start --port 0`, stopped at the end). CPU from `/proc/<pid>/task/*/schedstat`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streams.dev import Cluster  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """On-CPU time of every thread of a process so far."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0]) / 1e9
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def measure(bootstrap: str, broker_pid: int, workdir: Path, partitions: int, seconds: float,
            env: dict[str, str]) -> tuple[float, float]:
    """(broker cores, worker main-process cores) over `seconds` of an idle worker holding every partition."""
    cluster = Cluster(bootstrap, f"idle{time.time_ns()}", workdir, worker_env=env, partitions=partitions)
    cluster.create_topics()
    try:
        worker = cluster.start_worker("a")
        cluster.wait_balanced(["a"], stable_s=5)
        time.sleep(5)
        b0, w0, t0 = cpu_seconds(broker_pid), cpu_seconds(worker.pid), time.monotonic()
        time.sleep(seconds)
        b1, w1, t1 = cpu_seconds(broker_pid), cpu_seconds(worker.pid), time.monotonic()
        return (b1 - b0) / (t1 - t0), (w1 - w0) / (t1 - t0)
    finally:
        cluster.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--wait-ms", default="1500,250,100,50")
    parser.add_argument("--min-bytes", type=int, default=65536)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/idle-fetch.md")
    args = parser.parse_args()
    waits = [int(w) for w in args.wait_ms.split(",")]
    with tempfile.TemporaryDirectory(prefix="idle-fetch-") as tmp:
        kafka = Path(tmp) / "kafka"
        start = subprocess.run([str(ROOT / "deploy/local-kafka"), "start", "--port", "0", "--dir", str(kafka)],
                               capture_output=True, text=True, check=True)
        bootstrap = start.stdout.strip().splitlines()[-1].split()[-1]
        broker_pid = int((kafka / "kafka.pid").read_text())
        rows = []
        try:
            for n, wait in enumerate(waits):
                min_bytes = 1 if n == 0 else args.min_bytes
                env = {"NEARDUP_FETCH_MIN_BYTES": str(min_bytes), "NEARDUP_FETCH_MAX_WAIT_MS": str(wait)}
                broker, worker = measure(bootstrap, broker_pid, Path(tmp) / f"w{n}", args.partitions, args.seconds,
                                         env)
                rows.append((min_bytes, wait, broker, worker))
                print(f"min {min_bytes} B, wait {wait} ms: broker {broker:.3f} cores, worker {worker:.3f} cores",
                      flush=True)
        finally:
            subprocess.run([str(ROOT / "deploy/local-kafka"), "stop", "--dir", str(kafka)], capture_output=True)
    base = rows[0]
    lines = [f"# An idle worker by fetch limits ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)", "",
             f"`python bench/bench_idle_fetch.py --partitions {args.partitions} --seconds {args.seconds:g} "
             f"--wait-ms {args.wait_ms} --min-bytes {args.min_bytes}`: one worker holding all {args.partitions} "
             "partitions of every topic, nothing published (its ticks only), CPU over the window.", "",
             "| fetch min bytes | fetch max wait, ms | broker, cores | worker main process, cores | "
             "broker / first row | worker / first row |", "|---|---|---|---|---|---|"]
    for min_bytes, wait, broker, worker in rows:
        lines.append(f"| {min_bytes} | {wait} | {broker:.3f} | {worker:.3f} | {broker / base[2]:.2f} | "
                     f"{worker / base[3]:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as fh:
        fh.write(text + "\n")


if __name__ == "__main__":
    main()
