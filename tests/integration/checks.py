"""What the stream tests (tests/integration, tests/reliability) run their workers with and check their
decisions against: the test workers' settings, the brute-force oracle, `neardup scan`, and G1-G3."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import fingerprint_event
from neardup_core.hosts.urls import url_identity
from neardup_core.testing.oracle import oracle_partials, rule_problems
from streams.cli.scan import run_scan
from streams.dev import Cluster, ClusterError, Record, latest_by_url
from streams.settings import Settings

K = 3
CORE = Settings(k=K, partial_copies=True).core  # the test workers' core settings: the defaults and partial copies
LSH = CORE.design.lsh
MAX_BODY = 200_000  # NEARDUP_MAX_BODY_BYTES of the test workers
WORKER_ENV = {
    "NEARDUP_MAX_BODY_BYTES": str(MAX_BODY),
    "NEARDUP_SESSION_TIMEOUT_S": "20",
    "NEARDUP_TICK_INTERVAL_S": "1",
    "NEARDUP_DECISION_TIMEOUT_S": "120",
    "NEARDUP_EXTRACT_PROCESSES": "1",
    "NEARDUP_PARTIAL_COPIES": "1",
}


def fetches_of(events: Iterable[dict[str, Any]]) -> list[Fetch]:
    """The fingerprinted pages of the good events (the rejected ones are left out)."""
    return [f for e in events if isinstance(f := fingerprint_event(orjson.dumps(e), settings=CORE), Fetch)]


def verdicts(latest: dict[str, dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    return {u: (d["verdict"], d["duplicate_of"], d["distance"], d["jaccard"]) for u, d in latest.items()}


def partials(latest: dict[str, dict[str, Any]]) -> dict[str, tuple[tuple[str, float], ...]]:
    """`partial_of` per URL identity, as (URL identity, containment) pairs: what `oracle_partials` says."""
    return {url_identity(u): tuple((url_identity(p["url"]), p["containment"]) for p in d.get("partial_of") or [])
            for u, d in latest.items()}


def dump_latest(latest: dict[str, dict[str, Any]]) -> None:
    """With NEARDUP_TEST_DUMP_DIR set, the latest decision per URL (all fields but `decided_at`) goes to
    `<dir>/<test>.json`: how a change is shown to leave the stream's decisions as they were."""
    out = os.environ.get("NEARDUP_TEST_DUMP_DIR")
    if out:
        test = os.environ["PYTEST_CURRENT_TEST"].split("::")[-1].split(" ")[0]
        rows = {u: {k: v for k, v in d.items() if k not in ("decided_at", "_key")} for u, d in latest.items()}
        Path(out, f"{test}.json").write_text(json.dumps(rows, sort_keys=True, indent=0))


def scan_decisions(delivered: list[dict[str, Any]], workdir: Path) -> dict[str, tuple[Any, ...]]:
    """What `neardup scan` decides for the events the stream got, in the order it got them (`scan_latest`),
    as (verdict, duplicate_of, distance, jaccard) per URL."""
    return verdicts(scan_latest(delivered, workdir))


def scan_latest(delivered: list[dict[str, Any]], workdir: Path, *,
                partial_copies: bool = True) -> dict[str, dict[str, Any]]:
    """The latest decision per URL of `neardup scan` over the events the stream got, in the order it got
    them: `run_scan` itself, in this process, over a JSONL file of them; `partial_copies` as the workers'
    NEARDUP_PARTIAL_COPIES."""
    path, out = workdir / "scan-input.jsonl", workdir / "scan-decisions.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in delivered))
    summary = run_scan(Settings(k=K, partial_copies=partial_copies), [path], state=workdir / "scan-state", out=out,
                       progress=False)
    assert summary.rejected == 0
    return latest_by_url([orjson.loads(line) for line in out.read_bytes().splitlines()])


def check_g1_g3(pipeline: Cluster, events: list[dict[str, Any]], decisions: list[dict[str, Any]],
                delivered: list[dict[str, Any]] | None = None, *,
                verdicts_seen: frozenset[str] = frozenset({"unique", "near_duplicate", "exact_duplicate"}),
                partial_copies: bool = True) -> None:
    """G1-G3 for the good `events`; `verdicts_seen`: the verdicts the input is made to produce (a check
    that the test exercised the rule, not only `unique`); `partial_copies`: whether the workers ran with
    NEARDUP_PARTIAL_COPIES (`WORKER_ENV` does); without, every `partial_of` must be empty."""
    latest = latest_by_url(decisions)
    dump_latest(latest)
    good_urls = {e["url"] for e in events}
    assert set(latest) == good_urls, "G1: every input URL has a decision, and no other URL"
    for url in good_urls:
        revs = sorted(d["revision"] for d in decisions if d["url"] == url)
        assert revs[-1] == max(revs)
    fetches = fetches_of(events)
    got = verdicts(latest)
    wrong = rule_problems(got, fetches, K, lsh=LSH)
    assert not wrong, f"G2: {len(wrong)} decisions break the rule: {wrong[:5]}"
    scanned_latest = scan_latest(delivered or events, pipeline.workdir, partial_copies=partial_copies)
    scanned = verdicts(scanned_latest)
    assert rule_problems(scanned, fetches, K, lsh=LSH) == [], "G3: scan's decisions keep the rule"
    assert {u: said[0] for u, said in got.items()} == {u: said[0] for u, said in scanned.items()}, \
        "G3: scan gives the same verdicts"
    assert {said[0] for said in got.values()} >= verdicts_seen
    named = partials(latest)
    if not partial_copies:
        assert all(not said for said in named.values()), "no partial_of without NEARDUP_PARTIAL_COPIES"
    else:
        assert named == oracle_partials(fetches, CORE.design), "G2: partial_of is the oracle's"
    assert named == partials(scanned_latest), "G3: scan gives the same partial_of"


def read_rejected(pipeline: Cluster, expected: set[tuple[str, int, int]], *, timeout_s: float = 180.0,
                  settle_s: float = 3.0) -> list[tuple[Record, dict[str, Any]]]:
    """The dead letters on `pages.rejected` (each record as read, for its key and value sizes, and its
    JSON), once every `(topic, partition, offset)` of `expected` has one and nothing new came for
    `settle_s`. A timeout raises `ClusterError` naming the inputs still without a dead letter."""
    letters: list[tuple[Record, dict[str, Any]]] = []

    def seen() -> set[tuple[str, int, int]]:
        return {(d.get("topic"), d.get("partition"), d.get("offset")) for _, d in letters}

    try:
        pipeline.follow("pages.rejected", lambda r: letters.append((r, r.json())),
                        lambda: expected <= seen(), settle_s=settle_s, timeout_s=timeout_s)
    except ClusterError as exc:
        raise ClusterError(f"no dead letter for {sorted(expected - seen())}; dead letters for "
                           f"{sorted(seen())}\n{exc}") from None
    return letters
