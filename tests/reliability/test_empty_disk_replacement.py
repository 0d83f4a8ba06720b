"""A worker SIGKILLed again and again while it decides a crawl, then lost with its disk and replaced by a
worker on an empty data dir (issue 21, DESIGN.md G5): the new worker's state comes from the changelog
topics only, and it decides as the lost one would have.

Worker `a` decides a generated crawl of ~340 pages published a quarter at a time. It is SIGKILLed (its
process group: it and its pools) five times, each time started again on its own disk:

1. early, at about a tenth of the decisions;
2. while chunk 1 is in full flow (its first decisions out, most of it in the hops);
3. a few seconds after a restart, while it recovers its tables and rejoins the group;
4. at about two thirds of the decisions;
5. at about nine tenths, for good: `a` and its data dir never come back.

Worker `b`, a new name and so an empty data dir, takes every partition, restores the tables from their
changelogs and finishes the crawl. Then a copy of every page the crawl did not skip is published under a
worse-ranked URL (plain http, more path segments, a longer URL, no more importance, fetched a day
later; `faults.mirror_of`): each must be decided a duplicate (`exact_duplicate`, or `near_duplicate` of a
better match) of an earlier page, which `b` can only know from the changelogs. G1-G3 over everything.

Expected after issue 21: nothing reaches a local RocksDB before its changelog records are acknowledged,
so a replay on the same disk writes the changelog again, and `b` misses nothing.

`b` starts once the killed worker's session has timed out. In 5 of 11 runs before `streams.kafka.redelivery`'s
`RedeliveringQueue`, `b` recovered, decided one full take of `pages.fetched` and read that topic no more:
the records its fetcher got while the recovery sought the stream partitions were queued, then cleared by
the flow resume that followed, and never fetched again.
"""

from __future__ import annotations

import contextlib
import random
import signal
import time
from typing import Any

import pytest

from neardup_core.testing.synthetic import generate_crawl
from streams.dev import Cluster, ClusterError, all_complete, latest_by_url
from tests.integration.checks import WORKER_ENV, check_g1_g3
from tests.reliability.faults import alter_topic_config, changelog_topics, mirror_of

pytestmark = pytest.mark.timeout(900)
SESSION_TIMEOUT_S = float(WORKER_ENV["NEARDUP_SESSION_TIMEOUT_S"])


def decided(pipeline: Cluster, count: int, timeout_s: float = 240) -> None:
    """Returns once `dedup.decisions` holds `count` messages (a moment of the crawl)."""
    pipeline.read_until("dedup.decisions", lambda msgs: len(msgs) >= count, settle_s=0, timeout_s=timeout_s)


def replacement_knows_every_page(pipeline: Cluster, events: list[dict[str, Any]]) -> None:
    """Worker `b` (a new name: an empty data dir) finishes the crawl; then a worse-ranked copy of every page
    the crawl did not skip is published, and each must be decided a duplicate of an earlier page, which `b`
    can know from the changelogs only; G1-G3 over everything."""
    urls = {e["url"] for e in events}
    # the killed worker's member leaves the group once its session times out; `b` joins after that, as an
    # orchestrator's replacement usually does (see the module docstring for what joining before it did)
    time.sleep(SESSION_TIMEOUT_S + 5)
    pipeline.start_worker("b")
    latest = latest_by_url(pipeline.read_until("dedup.decisions", all_complete(urls), timeout_s=300))
    last_fetch = {e["url"]: e for e in sorted(events, key=lambda e: e["fetched_at"])}
    originals = [last_fetch[u] for u in sorted(urls) if latest[u]["verdict"] != "skipped"]
    mirrors = [mirror_of(e, n) for n, e in enumerate(originals)]
    pipeline.publish(mirrors)
    everything = events + mirrors
    decisions = pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in everything}), timeout_s=300)
    latest = latest_by_url(decisions)
    unknown = [(m["url"], latest[m["url"]]["verdict"]) for m in mirrors
               if latest[m["url"]]["verdict"] not in ("exact_duplicate", "near_duplicate")]
    assert not unknown, (f"{len(unknown)} of {len(mirrors)} copies of earlier pages are not decided duplicates "
                         f"by the worker on an empty disk: {unknown[:5]}")
    check_g1_g3(pipeline, everything, decisions)


def test_killed_worker_replaced_on_an_empty_disk_knows_every_page(pipeline: Cluster) -> None:
    events = generate_crawl(seed=31)
    random.Random(12).shuffle(events)
    urls = {e["url"] for e in events}
    quarter = len(events) // 4
    chunks = [events[i * quarter:(i + 1) * quarter] for i in range(3)] + [events[3 * quarter:]]
    kills: list[str] = []

    def kill_and_restart(moment: str) -> None:
        pipeline.kill_worker("a", signal.SIGKILL)
        kills.append(moment)
        pipeline.start_worker("a")  # the same name: its own disk again

    pipeline.start_worker("a")
    pipeline.wait_balanced(["a"], stable_s=2)
    pipeline.publish(chunks[0])
    decided(pipeline, len(urls) // 10)
    kill_and_restart("early")

    # the pause comes while chunk 1 is in full flow: its first decisions out, most of it in the hops
    n0 = len(pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in chunks[0]}), timeout_s=240))
    pipeline.publish(chunks[1])
    decided(pipeline, n0 + 15)
    pipeline.kill_worker("a", signal.SIGKILL)
    kills.append("in flow")
    pipeline.start_worker("a")

    pipeline.publish(chunks[2])
    time.sleep(8)  # recovering its tables, rejoining the group
    kill_and_restart("restarting")

    decided(pipeline, 2 * len(urls) // 3)
    pipeline.publish(chunks[3])
    decided(pipeline, 2 * len(urls) // 3 + 20)
    kill_and_restart("two thirds")

    decided(pipeline, 9 * len(urls) // 10)
    pipeline.kill_worker("a", signal.SIGKILL)  # for good, with its disk
    kills.append("for good")
    assert len(kills) >= 5
    print(f"SIGKILLs of worker a: {kills}")

    replacement_knows_every_page(pipeline, events)
    assert set(pipeline.workers) == {"b"}
    pipeline.check_alive()


def test_refused_changelog_writes_reach_no_disk(pipeline: Cluster) -> None:
    """The broker refuses the tables' changelog records for a while (`max.message.bytes` of 64 on every
    changelog topic) as worker `a` decides the second half of a crawl. Expected (issue 21: nothing
    reaches the local RocksDB before its changelog records are acknowledged; G4): `a` exits non-zero
    before committing; the config is restored and `a` is lost with its disk; worker `b` on an empty
    data dir replays what `a` did not commit and, after it, decides a copy of every page under a
    worse-ranked URL a duplicate of an earlier page (G5), and G1-G3 hold over everything.

    Today's `a` logs the refused changelog records, keeps the state in its RocksDB and commits: the
    test kills it once the crawl is decided, and `b` knows nothing of the second half. The exit is
    asserted last, so that a failure here shows what a replacement worker lost."""
    events = generate_crawl(seed=37)
    random.Random(6).shuffle(events)
    urls = {e["url"] for e in events}
    half = len(events) // 2
    worker = pipeline.start_worker("a")
    pipeline.wait_balanced(["a"], stable_s=2)
    pipeline.publish(events[:half])
    pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events[:half]}), timeout_s=240)

    changelogs = changelog_topics(pipeline)
    for name in changelogs:
        alter_topic_config(pipeline, name, {"max.message.bytes": "64"}, full_name=True)
    try:
        pipeline.publish(events[half:])
        deadline = time.monotonic() + 120
        while worker.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(ClusterError):  # a exits (as it should), or decides the crawl (today)
                pipeline.read_until("dedup.decisions", all_complete(urls), timeout_s=5, settle_s=1)
                break
        exit_code = worker.poll()
    finally:
        for name in changelogs:
            alter_topic_config(pipeline, name, {"max.message.bytes": None}, full_name=True)
    pipeline.kill_worker("a", signal.SIGKILL)  # lost, with its disk

    replacement_knows_every_page(pipeline, events)
    pipeline.check_alive()
    assert exit_code is not None and exit_code != 0, \
        f"worker a did not exit non-zero when its changelog records were refused (exit code {exit_code})"
