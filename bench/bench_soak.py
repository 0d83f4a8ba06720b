"""The long soak: generated pages at a steady rate into three workers for `--duration` seconds while a
killer stops a random worker with SIGKILL or SIGTERM (taking turns) every `--interval` seconds after the
cluster recovered from the last, and restarts it; once (`--broker-turn`) it stops the broker instead and
starts it again on the same port and dir with its data. CI's short copy is tests/reliability/test_soak.py;
both run `tests/reliability/soak.py` (what is done, and how recovery is measured, is described there).

    python bench/bench_soak.py [--duration 900] [--rate 10] [--interval 20,60] [--restart-after 3]
                               [--broker-turn 3] [--broker-down 15] [--late 10] [--seed 13]
                               [--out bench/results/soak.md]

Prints a table (pages, kills by signal, restarts, broker restarts, decisions lost, G2 problems, time to
recover per disturbance: min/median/max, decision latency) and one row per disturbance, and appends
them to `--out`. Exits 1 when a decision was lost, G2 failed or an event was not delivered. It starts
its own broker (`deploy/local-kafka start --port 0`) in a temporary directory and stops everything it
started at the end, also on failure and Ctrl-C.
"""

from __future__ import annotations

import argparse
import math
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from common import BENCH_DIR, Table, append_results, say

from streams.dev import Cluster, start_broker, stop_broker
from tests.integration.checks import WORKER_ENV
from tests.reliability.soak import Soak, SoakPlan, SoakResult, summary

EVENTS_PER_SCALE = 340  # about, in the generated crawl


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=900.0, help="seconds of publishing (default 900)")
    p.add_argument("--rate", type=float, default=10.0, help="pages per second (default 10)")
    p.add_argument("--interval", default="20,60", help="MIN,MAX seconds between disturbances (default 20,60)")
    p.add_argument("--restart-after", type=float, default=3.0, help="seconds a killed worker stays down")
    p.add_argument("--broker-turn", type=int, default=3, help="which disturbance (0-based) is the broker's")
    p.add_argument("--broker-down", type=float, default=15.0, help="seconds the broker stays down")
    p.add_argument("--late", type=float, default=10.0,
                   help="a page decided later than this after publication is late (the recovery threshold)")
    p.add_argument("--drain-timeout", type=float, default=300.0,
                   help="seconds to wait after publishing for every URL's complete decision (default 300)")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--killer-seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "soak.md")
    return p.parse_args(argv)


def tables(result: SoakResult, args: argparse.Namespace) -> list[Table]:
    kills = result.kills
    recoveries = [r for r in result.recoveries() if r is not None]
    kill_recoveries = [d.recovery_s for d in kills if d.recovery_s is not None]
    lat = sorted(result.latencies)

    def mmm(values: list[float]) -> str:
        return (f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f}" if values else "n/a")

    overall = Table("Soak: three workers under a killer and one broker restart", ["measure", "value"])
    overall.add("pages published (delivered)", f"{len(result.events)} in {result.publish_s:.0f} s "
                f"({len(result.events) / result.publish_s:.1f}/s)")
    overall.add("URLs", len({e["url"] for e in result.events}))
    overall.add("kills", f"{len(kills)} ("
                + ", ".join(f"{s} {sum(d.kind == s for d in kills)}" for s in ("SIGKILL", "SIGTERM")) + ")")
    overall.add("worker restarts", len(kills))
    overall.add("broker restarts", sum(d.kind == "broker" for d in result.disturbances))
    overall.add("decisions lost (URLs without a complete decision)", len(result.lost))
    overall.add("G2 problems (decisions against the oracle)", len(result.g2_problems))
    overall.add("delivery errors", len(result.delivery_errors))
    overall.add("decision records", result.decisions)
    overall.add("the soak's decisions reader assigned again (stopped fetching)", result.follower_reassigned)
    overall.add("time to recover, kills (s): min / median / max", mmm(kill_recoveries))
    overall.add("time to recover, all disturbances (s): min / median / max", mmm(recoveries))
    overall.add("disturbances not recovered before the next", sum(r is None for r in result.recoveries()))
    if lat:
        overall.add("decision latency (s): p50 / p99 / max",
                    f"{lat[len(lat) // 2]:.2f} / {lat[int(len(lat) * 0.99)]:.2f} / {lat[-1]:.1f}")
    overall.add("drain after publishing (s)", f"{result.drain_s:.0f}")
    for key, value in sorted(result.worker_counters.items()):
        overall.add(f"{key} (running workers)", f"{value:.0f}")
    overall.notes.append(f"time to recover: from the kill (or the broker's stop) to the publication of the first "
                         f"page from which on every page until {args.late:g} s before the next disturbance was "
                         f"decided (completely) within {args.late:g} s of its publication")

    per = Table("Per disturbance", ["#", "what", "down (s)", "back (s)", "settled (s)", "recovered (s)",
                                    "late pages / window"])
    for n, d in enumerate(result.disturbances):
        per.add(n, f"{d.kind} {d.worker or ''}".strip(), f"{d.exited_at - d.at:.1f}", f"{d.back_at - d.at:.1f}",
                f"{d.settled_at - d.at:.1f}", "not before the next" if d.recovery_s is None else f"{d.recovery_s:.1f}",
                f"{d.late_pages} / {d.window_pages}")
    per.notes.append("times from the kill (the broker's stop): its process ended (down), it was started again "
                     "(back), the group settled on the three workers (settled), recovered as above")
    return [overall, per]


def main(argv: list[str]) -> int:
    args = parse(argv)
    lo, hi = (float(x) for x in args.interval.split(","))
    started = time.perf_counter()
    plan = SoakPlan(disturbances=0, duration_s=args.duration, rate=args.rate, interval_s=(lo, hi),
                    restart_after_s=args.restart_after, broker_turn=args.broker_turn, broker_down_s=args.broker_down,
                    late_s=args.late, drain_timeout_s=args.drain_timeout, seed=args.seed, killer_seed=args.killer_seed,
                    scale=max(1, math.ceil(args.duration * args.rate / EVENTS_PER_SCALE * 1.1)),
                    signals=(signal.SIGKILL, signal.SIGTERM))
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        work = Path(tmp)
        broker = start_broker(work / "kafka", echo=True)
        say(f"broker {broker.bootstrap} in {work / 'kafka'}")
        cluster = Cluster(broker.bootstrap, f"soak-{uuid.uuid4().hex[:8]}", work / "cluster", worker_env=WORKER_ENV)
        try:
            cluster.create_topics()
            result = Soak(cluster, broker, plan, say=say).run()
        finally:
            cluster.stop_all()
            stop_broker(work / "kafka")
    out = tables(result, args)
    for t in out:
        t.print()
    notes = ["```", *summary(result), "```"]
    if result.lost or result.g2_problems:
        notes += ["Lost or wrong:", *[f"- {x}" for x in (result.lost[:10] + result.g2_problems[:10])]]
    append_results(args.out, "Soak", out, notes=notes, started=started)
    return 1 if result.lost or result.g2_problems or result.delivery_errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
