"""A send the broker refuses stops the worker before the batch it belongs to is committed (issue 21,
DESIGN.md G4), and a restart on the same disk decides everything (G1-G3).

The fault is injected at the broker, as an operator's mistake or a broker limit would: while one worker
decides a generated crawl, `dedup.decisions`' `max.message.bytes` is set to 64 bytes (less than any
decision), so the broker refuses every decision the worker sends (MESSAGE_TOO_LARGE, not retriable).
The second half of the crawl is published into that window, so the worker has decisions to send.

Expected: the worker exits with a non-zero code (a clear log line, no commit of the batch whose sends
failed); the test then does what an orchestrator does: it restores the topic's config and starts the
worker again under the same name, on the same data dir; at the end every URL has exactly one latest
decision and it equals scan's (G1-G3). Today's worker logs the failed send, commits the offsets and goes
on: the decisions sent into the window are lost.
"""

from __future__ import annotations

import random
import time

import pytest

from neardup_core.testing.synthetic import generate_crawl
from streams.dev import Cluster, all_complete
from tests.integration.checks import check_g1_g3
from tests.reliability.faults import alter_topic_config

pytestmark = pytest.mark.timeout(600)

EXIT_WITHIN_S = 90.0
"""How long the worker may go on after its sends are refused (it must notice at its next commit)."""


def test_refused_decisions_stop_the_worker_and_a_restart_loses_nothing(pipeline: Cluster) -> None:
    events = generate_crawl(seed=29)
    random.Random(4).shuffle(events)
    half = len(events) // 2
    worker = pipeline.start_worker("a")
    pipeline.wait_balanced(["a"], stable_s=2)
    pipeline.publish(events[:half])
    pipeline.read_until("dedup.decisions", lambda msgs: len(msgs) >= half // 4, settle_s=0, timeout_s=120)

    alter_topic_config(pipeline, "dedup.decisions", {"max.message.bytes": "64"})
    try:
        pipeline.publish(events[half:])
        deadline = time.monotonic() + EXIT_WITHIN_S
        while worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        code = worker.poll()
        assert code is not None, (f"the worker still runs {EXIT_WITHIN_S:.0f} s after the broker began refusing "
                                  f"its decisions (G4: it must stop before committing)\n{pipeline.log_tail(30)}")
        assert code != 0, f"the worker exited with 0 on a refused send\n{pipeline.log_tail(30)}"
    finally:
        alter_topic_config(pipeline, "dedup.decisions", {"max.message.bytes": None})
    pipeline.kill_worker("a")  # reaps what may be left of its process group (its pool dies with it anyway)

    pipeline.start_worker("a")  # same name: same data dir and port
    decisions = pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events}), timeout_s=240)
    check_g1_g3(pipeline, events, decisions)
    pipeline.check_alive()
