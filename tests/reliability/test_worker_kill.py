"""A worker killed without warning mid-stream and restarted: the decisions still equal the oracle and
`scan` (G1-G3). The kill is a SIGKILL to the worker's process group (it and its extraction pool) while
the first half of the input is being decided; the second half is published while it is gone."""

from __future__ import annotations

import random
import time

from neardup_core.testing.synthetic import generate_crawl
from streams.dev import Cluster, all_complete
from tests.integration.checks import check_g1_g3


def test_worker_killed_mid_stream_and_restarted(pipeline: Cluster) -> None:
    events = generate_crawl(seed=13)
    rng = random.Random(9)
    rng.shuffle(events)
    pipeline.start_worker("a")
    pipeline.start_worker("b")
    pipeline.wait_balanced(["a", "b"])
    half = len(events) // 2
    pipeline.publish(events[:half])
    # wait until the pipeline is busy with the first half, then kill b without warning
    pipeline.read_until("dedup.decisions", lambda msgs: len(msgs) >= half // 4, settle_s=0)
    pipeline.kill_worker("b")
    pipeline.publish(events[half:])
    time.sleep(3)
    pipeline.start_worker("b")
    decisions = pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events}), timeout_s=360)
    check_g1_g3(pipeline, events, decisions)
