"""`neardup scan` end to end on a generated crawl: order independence, the invariants of the
rule, rejects, continuing from a state dir, and host signals with learned URL rules."""

from __future__ import annotations

import base64
import hashlib
import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from neardup_core.dedup.rule import band_jaccard
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import fingerprint_event
from neardup_core.fingerprint.simhash import from_hex, hamming
from neardup_core.hosts.urls import host_of
from neardup_core.ingest.files import RawEvent
from neardup_core.settings import CoreSettings
from neardup_core.testing.oracle import rule_problems
from neardup_core.testing.synthetic import generate_crawl
from streams.cli.scan import WINDOW_PER_PROCESS, ScanSummary, fingerprinted

K = 3
LSH = CoreSettings().design.lsh  # scan runs with the defaults: MinHash on
ROOT = Path(__file__).resolve().parents[2]
BAD_LINES = [b"{broken json", b'{"url": "https://x.example/a"}', b'{"url": 7, "body": "<p>x</p>"}']


def fetch_of(event: dict) -> Fetch:
    fetch = fingerprint_event(orjson.dumps(event))
    assert isinstance(fetch, Fetch), fetch
    return fetch


def write(path: Path, events: list[dict], extra: list[bytes] = ()) -> Path:
    lines = [orjson.dumps(e) for e in events] + list(extra)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def scan(tmp: Path, name: str, *inputs: Path, state: Path | None = None,
         env: dict[str, str] | None = None) -> tuple[dict[str, dict], Path, Path]:
    out, rejects, hosts = tmp / f"{name}.jsonl", tmp / f"{name}.rejects.jsonl", tmp / f"{name}.hosts.jsonl"
    state = state or tmp / f"{name}.state"
    cmd = [sys.executable, "-m", "streams.cli", "scan", *map(str, inputs), "--state", str(state),
           "--out", str(out), "--rejects", str(rejects), "--hosts", str(hosts), "--no-progress", "--processes", "1"]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **(env or {})},
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert "events read" in result.stderr  # the summary
    return latest(out), rejects, hosts


def latest(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for line in path.read_bytes().splitlines():
        d = orjson.loads(line)
        if d["url"] not in out or d["revision"] > out[d["url"]]["revision"]:
            out[d["url"]] = d
    return out


def said(decisions: dict[str, dict]) -> dict[str, tuple]:
    return {u: (d["verdict"], d["duplicate_of"], d["distance"], d["jaccard"]) for u, d in decisions.items()}


@pytest.fixture(scope="module")
def crawl() -> list[dict]:
    return generate_crawl(seed=21)


@pytest.fixture(scope="module")
def scanned(crawl: list[dict], tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, Path, Path]:
    tmp = tmp_path_factory.mktemp("scan")
    shuffled = crawl[:]
    random.Random(4).shuffle(shuffled)
    first, rejects, hosts = scan(tmp, "a", write(tmp / "in-a.jsonl", crawl, BAD_LINES))
    second, _, _ = scan(tmp, "b", write(tmp / "in-b.jsonl", shuffled))
    return first, second, rejects, hosts


def test_two_input_orders_give_the_oracle_verdicts_and_valid_duplicates(crawl, scanned) -> None:
    first, second, _, _ = scanned
    assert {u: v[0] for u, v in said(first).items()} == {u: v[0] for u, v in said(second).items()}
    fetches = [fetch_of(e) for e in crawl]
    assert LSH is not None
    assert rule_problems(said(first), fetches, K, lsh=LSH) == []
    assert rule_problems(said(second), fetches, K, lsh=LSH) == []
    assert {d["verdict"] for d in first.values()} >= {"unique", "exact_duplicate", "near_duplicate"}


def test_duplicates_name_a_close_page_and_uniques_are_far_apart(crawl, scanned) -> None:
    first, _, _, _ = scanned
    versions = defaultdict(list)  # every fingerprint each URL ever had
    for e in crawl:
        f = fetch_of(e)
        versions[f.url].append(f)
    for url, d in first.items():
        if d["verdict"] in ("exact_duplicate", "near_duplicate"):
            assert d["duplicate_of"] != url
            [mine] = [f.version for f in versions[url] if f.body_sha256 == d["body_sha256"]][:1]
            close = [v for v in versions[d["duplicate_of"]]
                     if v.text_sha256 == d["text_sha256"] or v.body_sha256 == d["body_sha256"]
                     or (v.simhash is not None and d["simhash"] and hamming(v.simhash, from_hex(d["simhash"])) <= K)
                     or (mine is not None and v.version is not None and band_jaccard(mine, v.version, LSH))]
            assert close, f"{url} names {d['duplicate_of']}, which is neither within {K} bits, nor in a band, nor equal"
    uniques = [d for d in first.values() if d["verdict"] == "unique"]
    current = {url: f.version for url, fs in versions.items() for f in fs if f.body_sha256 == first[url]["body_sha256"]}
    for i, a in enumerate(uniques):
        for b in uniques[i + 1:]:
            assert a["text_sha256"] != b["text_sha256"] and a["body_sha256"] != b["body_sha256"]
            if a["simhash"] and b["simhash"]:
                assert hamming(from_hex(a["simhash"]), from_hex(b["simhash"])) > K, (a["url"], b["url"])
            va, vb = current.get(a["url"]), current.get(b["url"])
            if va is not None and vb is not None:
                assert band_jaccard(va, vb, LSH) is None, (a["url"], b["url"])


def test_bad_lines_go_to_the_rejects_file_with_reasons(crawl, scanned) -> None:
    _, _, rejects, _ = scanned
    rows = [orjson.loads(line) for line in rejects.read_bytes().splitlines()]
    assert len(rows) == len(BAD_LINES)
    assert [r["error"].split(":")[0] for r in rows] == ["event is not JSON", "event has neither 'body' nor 'body_b64'",
                                                         "'url' is not a string but int"]
    assert [r["offset"] for r in rows] == [len(crawl) + 1 + i for i in range(len(BAD_LINES))]  # their lines
    assert all(r["topic"].endswith("in-a.jsonl") and r["stage"] == "validate" for r in rows)
    assert [base64.b64decode(r["raw_b64"]) for r in rows] == BAD_LINES


def test_an_event_with_a_huge_url_is_rejected_naming_the_cap_and_the_others_are_decided(
        crawl, tmp_path: Path) -> None:
    """A URL of 500 KB would travel in every record about it: scan rejects it (stage validate, the
    reason names NEARDUP_MAX_URL_BYTES and the URL's length) with a rejects line cut as a dead letter
    is, and decides every other event."""
    good = crawl[:20]
    huge = {**good[0], "url": "https://trap.example/" + "a" * (500_000 - 21)}
    line = orjson.dumps(huge)
    decisions, rejects, _ = scan(tmp_path, "huge", write(tmp_path / "in.jsonl", good[:10] + [huge] + good[10:]))
    assert set(decisions) == {e["url"] for e in good}
    [row] = [orjson.loads(r) for r in rejects.read_bytes().splitlines()]
    assert row["stage"] == "validate"
    assert row["error"] == "'url' has 500000 bytes, over the cap of 8192 (NEARDUP_MAX_URL_BYTES)"
    assert (row["offset"], row["raw_bytes"], row["raw_sha256"]) == (11, len(line), hashlib.sha256(line).hexdigest())
    assert base64.b64decode(row["raw_b64"]) == line  # it fits whole: a line has no key beside it


def test_a_second_run_continues_from_the_state_dir(crawl, scanned, tmp_path: Path) -> None:
    first, _, _, _ = scanned
    state = tmp_path / "state"
    half = len(crawl) // 2
    one, _, _ = scan(tmp_path, "one", write(tmp_path / "in-one.jsonl", crawl[:half]), state=state)
    two, _, _ = scan(tmp_path, "two", write(tmp_path / "in-two.jsonl", crawl[half:]), state=state)
    assert said({**one, **two}) == said(first)


def test_host_signals_penalise_the_trap_and_learn_its_rules(scanned) -> None:
    _, _, _, hosts_file = scanned
    final: dict[str, dict] = {}
    for line in hosts_file.read_bytes().splitlines():
        s = orjson.loads(line)
        if s["window_start"] is None:
            final[s["host"]] = s  # cumulative signals; the last one wins
    trap = next(h for h in final if h.startswith("calendar."))
    assert final[trap]["penalty"] >= 0.5
    rules = {(r["kind"], r["param"]): r for r in final[trap]["url_rules"]}
    sid = rules.get(("ignore_query_param", "sid"))
    assert sid is not None and sid["confidence"] >= 0.9, final[trap]["url_rules"]
    for host, s in final.items():
        assert ("ignore_query_param", "page") not in {(r["kind"], r["param"]) for r in s["url_rules"]}, host
    for host in ("herald.example", "aggregator.example", "blog.pinecone.example"):
        assert final[host]["penalty"] <= 0.1, final[host]
    assert host_of("https://www.DailyLedger.example/x") in final


def test_scan_reads_its_input_one_window_ahead_and_answers_in_order(crawl) -> None:
    """`fingerprinted` pulls at most two windows of events before the first outcome (memory stays flat on a
    large input), answers every event in input order, and extracts each distinct body once."""
    pulled: list[int] = []
    raws = [orjson.dumps(e) for e in crawl[:150]]
    raws += raws[:40]  # the same events again: bodies met before

    def source() -> Iterator[RawEvent]:
        for i, raw in enumerate(raws):
            pulled.append(i)
            yield RawEvent(raw, "crawl.jsonl", i + 1)

    sent: list[int] = []
    with ProcessPoolExecutor(2) as pool:
        class Counting:
            def submit(self, fn: Any, f: Any, jobs: list[Any]) -> Any:
                sent.append(len(jobs))
                return pool.submit(fn, f, jobs)

        summary = ScanSummary()
        results = fingerprinted(source(), CoreSettings(), cast(Executor, Counting()), processes=2, summary=summary)
        first = next(results)
        assert len(pulled) <= 2 * WINDOW_PER_PROCESS * 2
        outcomes = [first, *results]
    expected = [fingerprint_event(raw) for raw in raws]
    assert [o if isinstance(o, Fetch) else o.error for o in outcomes] == \
        [o if isinstance(o, Fetch) else o.reason for o in expected]
    assert sum(sent) <= len({orjson.loads(raw).get("body") for raw in raws})  # each distinct body once at most
    assert summary.bodies_extracted == sum(sent)


def test_scan_with_two_processes_decides_as_with_one(crawl, scanned, tmp_path: Path) -> None:
    events = tmp_path / "crawl.jsonl"
    write(events, crawl)
    out, state = tmp_path / "two.jsonl", tmp_path / "two.state"
    cmd = [sys.executable, "-m", "streams.cli", "scan", str(events), "--state", str(state), "--out", str(out),
           "--no-progress", "--processes", "2"]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
                            timeout=300)
    assert result.returncode == 0, result.stderr
    first = scanned[0]
    assert said(latest(out)) == said(first)


def test_a_line_without_fetched_at_is_decided_at_the_time_it_is_read(crawl, tmp_path: Path) -> None:
    """As the stream decides such an event with its record's timestamp (`neardup publish` stamps a
    record when it sends it), scan decides it with the time it read the line, instead of rejecting it."""
    page = next(e for e in crawl if e["url"].startswith("https://herald.example/"))
    undated = {k: v for k, v in page.items() if k != "fetched_at"}
    copy = {**undated, "url": page["url"] + "?utm_source=feed"}
    started = time.time()
    decisions, rejects, _ = scan(tmp_path, "undated", write(tmp_path / "in-undated.jsonl", [undated, copy]))
    finished = time.time()
    assert rejects.read_bytes() == b""
    assert decisions[page["url"]]["verdict"] == "unique"
    assert decisions[copy["url"]]["verdict"] == "exact_duplicate"
    assert decisions[copy["url"]]["duplicate_of"] == page["url"]
    for d in decisions.values():
        fetched = datetime.fromisoformat(d["fetched_at"].replace("Z", "+00:00")).timestamp()
        assert started - 1 <= fetched <= finished + 1, d["fetched_at"]


def test_two_spellings_of_one_url_are_one_url_a_recrawl_not_a_duplicate(crawl, tmp_path: Path) -> None:
    """DESIGN: `http://example.com` and `http://Example.com:80/` are one URL, so the second file's page is a
    recrawl of the first's (the same body), never a duplicate of it; the decision keeps the URL as received."""
    page = next(e for e in crawl if e["url"].startswith("https://herald.example/"))
    first = {**page, "url": "http://example.com", "fetched_at": "2024-05-01T00:00:00Z"}
    second = {**page, "url": "http://Example.com:80/", "fetched_at": "2024-05-02T00:00:00Z"}
    files = [write(tmp_path / "in-a.jsonl", [first]), write(tmp_path / "in-b.jsonl", [second])]
    out = tmp_path / "spellings.jsonl"
    cmd = [sys.executable, "-m", "streams.cli", "scan", *map(str, files), "--state", str(tmp_path / "spellings.state"),
           "--out", str(out), "--no-progress", "--processes", "1"]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, timeout=300)
    assert result.returncode == 0, result.stderr
    decisions = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert decisions, result.stderr
    assert {d["verdict"] for d in decisions} == {"unique"}, decisions
    assert all(d["duplicate_of"] is None for d in decisions)
    assert {d["url"] for d in decisions} <= {first["url"], second["url"]}
    assert decisions[-1]["fetched_at"].startswith("2024-05-02T00:00:00")  # the recrawl moved the URL's fetch time
    urls_rows = [line.replace("│", " ").split() for line in result.stderr.splitlines() if "URLs" in line]
    assert urls_rows == [["URLs", "unique", "1"]], result.stderr


@pytest.mark.parametrize("clash", ["out is input", "out is ./input", "rejects is a symlink to input",
                                   "report is a hard link to input", "hosts is out"])
def test_an_output_that_is_an_input_or_another_output_is_refused_before_anything_is_written(
        crawl, tmp_path: Path, clash: str) -> None:
    """`--out crawl.jsonl` on the input `crawl.jsonl` would truncate it before it is read: scan refuses
    with one line and exit code 2, and the input is intact, no state dir and no output created."""
    work = tmp_path / "work"
    work.mkdir()
    src = write(work / "crawl.jsonl", crawl[:5])
    before = src.read_bytes()
    (work / "link.jsonl").symlink_to(src)
    (work / "hard.jsonl").hardlink_to(src)
    outputs = {"--out": "out.jsonl", "--rejects": "rejects.jsonl", "--hosts": "hosts.jsonl", "--report": "report.html"}
    expected = {
        "out is input": ("--out", "crawl.jsonl", "is also an input file"),
        "out is ./input": ("--out", "./sub/../crawl.jsonl", "is also an input file"),
        "rejects is a symlink to input": ("--rejects", "link.jsonl", "is also an input file"),
        "report is a hard link to input": ("--report", "hard.jsonl", "is also an input file"),
        "hosts is out": ("--hosts", "out.jsonl", "are the same file"),
    }[clash]
    option, path, words = expected
    (work / "sub").mkdir()
    outputs[option] = path
    cmd = [sys.executable, "-m", "streams.cli", "scan", str(src), "--state", str(work / "state"),
           *[arg for pair in outputs.items() for arg in pair], "--no-progress", "--processes", "1"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neardup scan: ") and words in lines[0], result.stderr
    assert src.read_bytes() == before
    assert sorted(p.name for p in work.iterdir()) == ["crawl.jsonl", "hard.jsonl", "link.jsonl", "sub"]


def test_a_state_built_with_other_state_settings_is_refused_with_exit_code_2(crawl, tmp_path: Path) -> None:
    """`--state` of a scan under k = 3, scanned again under NEARDUP_K=4: one line naming both values and
    exit code 2 (nothing was started, as docs/cli.md says), and no output file created."""
    src = write(tmp_path / "crawl.jsonl", crawl[:5])
    scan(tmp_path, "first", src, state=tmp_path / "state")
    cmd = [sys.executable, "-m", "streams.cli", "scan", str(src), "--state", str(tmp_path / "state"),
           "--out", str(tmp_path / "second.jsonl"), "--no-progress", "--processes", "1"]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={"PATH": "/usr/bin:/bin", "NEARDUP_K": "4"})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neardup scan: ") and "k 3 there, 4 here" in lines[0], \
        result.stderr
    assert not (tmp_path / "second.jsonl").exists()
