"""The partitioned pipeline on a real broker: decisions equal the oracle and `scan` (G1-G3),
with one and two workers, any order, duplicate deliveries, a worker killed with SIGKILL, and bad
input that goes to the dead letters while the good pages around it are decided."""

from __future__ import annotations

import base64
import json
import os
import random
import time
from pathlib import Path

import orjson
import pytest

from neardup_core.testing.synthetic import generate_crawl
from streams.cli.scan import run_scan
from streams.settings import Settings
from tests.integration.pipeline import Pipeline, all_complete, latest_by_url, oracle_of, verdicts

K = 3
MAX_BODY = 200_000  # NEARDUP_MAX_BODY_BYTES of the test workers


def bad_events() -> list[tuple[bytes | None, bytes, str]]:
    """(key, value, a word the rejection reason must contain) for each kind of malformed event."""
    ok_body = "<html><body><p>" + "short page " * 5 + "</p></body></html>"

    def js(obj: object) -> bytes:
        return orjson.dumps(obj)

    rng = random.Random(3)
    binary = bytes(rng.randrange(256) for _ in range(4000)).replace(b"<", b"\x00")
    return [
        (b"https://bad.example/notjson", b"{not json", "not JSON"),
        (b"https://bad.example/utf", b'{"url": "https://bad.example/utf", "body": "\xff\xfe"}', "not UTF-8"),
        (None, js([1, 2, 3]), "not a JSON object"),
        (None, js({"body": ok_body}), "no 'url'"),
        (None, js({"url": 42, "body": ok_body}), "not a string"),
        (b"ftp://bad.example/x", js({"url": "ftp://bad.example/x", "body": ok_body}), "http(s)"),
        (b"https://bad.example/nobody", js({"url": "https://bad.example/nobody"}), "neither 'body'"),
        (b"https://bad.example/b64", js({"url": "https://bad.example/b64", "body_b64": "!!not base64!!"}), "base64"),
        (b"https://bad.example/big", js({"url": "https://bad.example/big", "body": "x" * (MAX_BODY + 1)}), "cap"),
        (b"https://bad.example/ct", js({"url": "https://bad.example/ct", "body": ok_body,
                                        "content_type": "definitely not a type"}), "media type"),
        (b"https://bad.example/neg", js({"url": "https://bad.example/neg", "body": ok_body, "fetched_at": -5}),
         "outside"),
        (b"https://bad.example/absurd", js({"url": "https://bad.example/absurd", "body": ok_body,
                                            "fetched_at": "2999-01-01T00:00:00Z"}), "outside"),
        (b"https://other.example/", js({"url": "https://bad.example/key", "body": ok_body}), "disagrees"),
        (b"https://bad.example/status", js({"url": "https://bad.example/status", "body": ok_body, "status": "200"}),
         "not an integer"),
        (b"https://bad.example/binary", js({"url": "https://bad.example/binary",
                                            "body_b64": base64.b64encode(binary).decode(),
                                            "content_type": "text/html"}), "undecodable"),
    ]


@pytest.fixture
def pipeline(kafka_bootstrap: str, unique_prefix: str, tmp_path: Path):
    p = Pipeline(kafka_bootstrap, unique_prefix, tmp_path)
    p.create_topics()
    yield p
    p.stop_all()


def dump_latest(latest: dict[str, dict]) -> None:
    """With NEARDUP_TEST_DUMP_DIR set, the latest decision per URL (all fields but `decided_at`) goes to
    `<dir>/<test>.json`: how a change is shown to leave the stream's decisions as they were."""
    out = os.environ.get("NEARDUP_TEST_DUMP_DIR")
    if out:
        test = os.environ["PYTEST_CURRENT_TEST"].split("::")[-1].split(" ")[0]
        rows = {u: {k: v for k, v in d.items() if k not in ("decided_at", "_key")} for u, d in latest.items()}
        Path(out, f"{test}.json").write_text(json.dumps(rows, sort_keys=True, indent=0))


def scan_decisions(delivered: list[dict], workdir: Path) -> dict[str, tuple]:
    """What `neardup scan` decides for the events the stream got, in the order it got them:
    `run_scan` itself, in this process, over a JSONL file of them."""
    path, out = workdir / "scan-input.jsonl", workdir / "scan-decisions.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in delivered))
    summary = run_scan(Settings(k=K), [path], state=workdir / "scan-state", out=out, progress=False)
    assert summary.rejected == 0
    return verdicts(latest_by_url([orjson.loads(line) for line in out.read_bytes().splitlines()]))


def check_g1_g3(pipeline: Pipeline, events: list[dict], decisions: list[dict],
                delivered: list[dict] | None = None) -> None:
    latest = latest_by_url(decisions)
    dump_latest(latest)
    good_urls = {e["url"] for e in events}
    assert set(latest) == good_urls, "G1: every input URL has a decision, and no other URL"
    for url in good_urls:
        revs = sorted(d["revision"] for d in decisions if d["url"] == url)
        assert revs[-1] == max(revs)
    expected = oracle_of(events, K)
    got = verdicts(latest)
    wrong = {u: (got[u], expected[u]) for u in good_urls if got[u] != expected[u]}
    assert not wrong, f"G2: {len(wrong)} decisions differ from the oracle: {list(wrong.items())[:5]}"
    assert got == scan_decisions(delivered or events, pipeline.workdir), "G3: scan gives the same decisions"
    assert {v for v, _, _ in got.values()} >= {"unique", "near_duplicate", "exact_duplicate"}


def test_one_worker_decides_as_the_oracle_and_rejects_bad_input(pipeline: Pipeline) -> None:
    events = generate_crawl(seed=11)
    bad = bad_events()
    pipeline.start_worker("a")
    pipeline.wait_balanced(["a"])
    mixed: list[tuple[bytes | None, bytes]] = [(e["url"].encode(), orjson.dumps(e)) for e in events]
    for i, (key, value, _) in enumerate(bad):
        mixed.insert((i * 37) % len(mixed), (key, value))
    pipeline.publish([v for _, v in mixed], keys=[k for k, _ in mixed])
    decisions = pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events}))
    check_g1_g3(pipeline, events, decisions)

    rejected = pipeline.read_until("pages.rejected", lambda msgs: len(msgs) >= len(bad), settle_s=2)
    assert len(rejected) == len(bad), [r["error"] for r in rejected]
    by_raw = {base64.b64decode(r["raw_b64"]): r for r in rejected}
    for key, value, word in bad:
        assert value in by_raw, f"bad event {value[:60]!r} is not in pages.rejected"
        r = by_raw[value]
        assert word in r["error"], (word, r["error"])
        assert r["_key"] == key and r["topic"] == f"{pipeline.prefix}.pages.fetched" and r["offset"] >= 0

    signals = pipeline.read_until("frontier.host-signals", lambda msgs: any(
        m["host"].startswith("calendar.") and m["penalty"] >= 0.5 for m in msgs), settle_s=2)
    trap = [m for m in signals if m["host"].startswith("calendar.") and m["penalty"] >= 0.5][-1]
    sid = [r for r in trap["url_rules"] if r["kind"] == "ignore_query_param" and r["param"] == "sid"]
    assert sid and sid[0]["confidence"] >= 0.9, trap["url_rules"]
    assert not [r for m in signals for r in m["url_rules"] if r["param"] == "page"], "page changes content"
    for m in signals:
        if m["host"] in ("herald.example", "aggregator.example", "blog.pinecone.example"):
            assert m["penalty"] <= 0.1, m


def test_two_workers_permuted_with_duplicate_deliveries(pipeline: Pipeline) -> None:
    events = generate_crawl(seed=12)
    rng = random.Random(5)
    delivery = events + rng.sample(events, len(events) // 5)
    rng.shuffle(delivery)
    pipeline.start_worker("a")
    pipeline.start_worker("b")
    pipeline.wait_balanced(["a", "b"])  # both joined before the input arrives, so the partitions are split
    pipeline.publish(delivery)
    decisions = pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events}))
    check_g1_g3(pipeline, events, decisions, delivery)
    probes = {name: pipeline.metric(name, "neardup_probes_total") for name in ("a", "b")}
    assert all(n > 0 for n in probes.values()), f"both workers answer probes: {probes}"


def test_worker_killed_mid_stream_and_restarted(pipeline: Pipeline) -> None:
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
