"""Poison records in a batch of good pages (issue 21): every record has exactly one outcome, and a bad
record costs nothing but its own dead letter.

Sixty real pages and three bad events, shuffled, go to `pages.fetched`; one unreadable record goes
straight to the internal topic `neardup.gather`, partition 0, as a corrupt or foreign record would:

- a body of 3 MB over the worker's cap of 2 MB (`NEARDUP_MAX_BODY_BYTES`): its dead letter would carry
  4 MB of base64 if not cut, four times what the producer sends;
- an event whose URL is 500 KB (its key too), over `NEARDUP_MAX_URL_BYTES` (default 8 KiB): refused at
  stage `validate`, before it travels in internal records and a decision;
- 900 KB that are not JSON: its dead letter would be 1.2 MB of base64 if not cut;
- 4 KB of random bytes on `<prefix>neardup.gather`: the gather agent cannot decode them.

Expected (DESIGN.md G1, G4, and the `pages.rejected` row of the Topics table): every good page decided
as `neardup scan` decides it (G1-G3); one dead letter per bad record and none for a good one, naming the
record's topic, partition and offset (for the internal record, the internal topic's full name), its
full length (`raw_bytes`) and SHA-256 (`raw_sha256`), with `raw_b64` a prefix of the original bytes and
key + value under the producer's limit; and the worker alive throughout. A bad *record* is an outcome
the worker handles (a dead letter), not a failure it cannot handle: it must not stop the worker, let
alone restart it in a loop on the same record.
"""

from __future__ import annotations

import base64
import hashlib
import random
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from streams.dev import Cluster, all_complete
from tests.integration.checks import WORKER_ENV, check_g1_g3, read_rejected
from tests.reliability.faults import PRODUCER_LIMIT, alter_topic_config, corpus_events, mirror_of, produce

pytestmark = pytest.mark.timeout(600)

MAX_BODY = 2_000_000
GOOD_PAGES = 60


@pytest.fixture
def cluster(kafka_bootstrap: str, unique_prefix: str, tmp_path: Path) -> Iterator[Cluster]:
    env = {**WORKER_ENV, "NEARDUP_MAX_BODY_BYTES": str(MAX_BODY)}
    c = Cluster(kafka_bootstrap, unique_prefix, tmp_path, partitions=4, worker_env=env)
    c.create_topics()
    # the input topic takes what a crawler may send (the broker's default is about 1 MB): what is too
    # large for the pipeline is the worker's to refuse, with a dead letter
    alter_topic_config(c, "pages.fetched", {"max.message.bytes": "16000000"})
    yield c
    c.stop_all()


def test_poison_records_each_get_one_dead_letter_and_the_good_pages_are_decided(cluster: Cluster) -> None:
    rng = random.Random(21)
    good = corpus_events(GOOD_PAGES - 4)
    good += [mirror_of(e, n) for n, e in enumerate(good[:4])]  # exact duplicates among them
    huge_body = {"url": "https://big.example/huge-page", "body": "<html><body><p>"
                 + "x" * (3 * 1024 * 1024) + "</p></body></html>", "status": 200, "content_type": "text/html",
                 "fetched_at": good[0]["fetched_at"]}
    huge_url = {"url": "https://long.example/" + "a" * 500_000, "status": 200, "content_type": "text/html",
                "body": "<html><body><p>A page at a very long URL.</p></body></html>",
                "fetched_at": good[0]["fetched_at"]}
    not_json = b"{\"url\": \"https://broken.example/\", \"body\": \"" + b"z" * 900_000  # cut short: no closing quote

    inputs: list[tuple[bytes | None, bytes, str]] = [(e["url"].encode(), orjson.dumps(e), "good") for e in good]
    inputs += [(huge_body["url"].encode(), orjson.dumps(huge_body), "huge body"),
               (huge_url["url"].encode(), orjson.dumps(huge_url), "huge url"),
               (b"https://broken.example/", not_json, "not json")]
    rng.shuffle(inputs)
    unreadable = rng.randbytes(4096)

    worker = cluster.start_worker("a")
    cluster.wait_balanced(["a"], stable_s=2)
    where = produce(cluster, "pages.fetched", [(k, v) for k, v, _ in inputs])
    (internal,) = produce(cluster, "neardup.gather", [(None, unreadable)], partition=0)

    bad = {(cluster.topic("pages.fetched"), *at): (value, what)
           for (_, value, what), at in zip(inputs, where, strict=True) if what != "good"}
    bad[(cluster.topic("neardup.gather"), *internal)] = (unreadable, "unreadable internal record")

    decisions = cluster.read_until("dedup.decisions", all_complete({e["url"] for e in good}), timeout_s=120)
    letters = read_rejected(cluster, set(bad), timeout_s=60)

    assert worker.poll() is None, f"the worker exited with {worker.returncode} on a bad record\n{cluster.log_tail()}"
    positions = [(d["topic"], d["partition"], d["offset"]) for _, d in letters]
    assert sorted(positions) == sorted(bad), "one dead letter per bad record, none for a good one, none twice"
    for record, letter in letters:
        raw, what = bad[(letter["topic"], letter["partition"], letter["offset"])]
        size = len(record.value) + len(record.key or b"")
        assert size < PRODUCER_LIMIT, f"the dead letter of the {what} is {size} bytes"
        assert letter["raw_bytes"] == len(raw), f"the dead letter of the {what} gives the original length"
        assert letter["raw_sha256"] == hashlib.sha256(raw).hexdigest()
        assert raw.startswith(base64.b64decode(letter["raw_b64"])), f"raw_b64 of the {what} is its prefix"
        assert letter["error"], f"the dead letter of the {what} says why"
        if what == "huge url":
            assert letter["stage"] == "validate", letter["error"]
    check_g1_g3(cluster, good, decisions, verdicts_seen=frozenset({"unique", "exact_duplicate"}))
    assert worker.poll() is None, f"the worker exited with {worker.returncode}\n{cluster.log_tail()}"
