"""Host signals survive a crash: a worker SIGKILLed after its hosts agent wrote a host's state and
before the signal left (the trap host's threshold crossing, the signal a frontier most needs) sends it
after its restart, counts nothing twice, and at the end the last signal per host on
`frontier.host-signals` carries the host's cumulative state as `neardup scan --hosts` gives it for the
same input (G3 for hosts): the same penalty and budget factor, the same rules. What is sent again is
the host's last signal: when the record that died produced later signals of the host too (a window
closing after the crossing), the last of them comes instead of the crossing, with the same cumulative
state or a newer one.

The kill is deterministic: the workers load `tests/reliability/killpoint/sitecustomize.py`, which
SIGKILLs the worker (the kernel's SIGKILL, nothing caught) right before the trap host's first
threshold signal is sent, once (a marker file holds the signal it stopped)."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import orjson

from neardup_core.testing.synthetic import TRAP, generate_crawl
from streams.cli.scan import run_scan
from streams.dev import Cluster, all_complete
from streams.settings import Settings
from tests.integration.checks import WORKER_ENV, K, check_g1_g3

KILLPOINT = Path(__file__).parent / "killpoint"


def cumulative(signal: dict[str, Any]) -> tuple[Any, ...]:
    """What every signal says of its host, whatever its window: penalty, budget factor and the rules
    (kind and parameter: their support and confidence depend on the order the decisions came in)."""
    rules = sorted((r["kind"], r["param"] or "") for r in signal["url_rules"])
    return signal["penalty"], signal["budget_factor"], rules


def last_per_host(signals: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What a frontier keeps: per host, the signal with the highest revision (the last of equals)."""
    last: dict[str, dict[str, Any]] = {}
    for s in signals:
        if s["host"] not in last or s.get("revision", 0) >= last[s["host"]].get("revision", 0):
            last[s["host"]] = s
    return last


class Settled:
    """Whether the last signal per host carries the cumulative state scan gives (a `read_until`
    condition; `why_not` lists the hosts that differ)."""

    def __init__(self, expected: dict[str, dict[str, Any]]) -> None:
        self.expected = expected

    def differ(self, signals: list[dict[str, Any]]) -> dict[str, tuple[Any, Any]]:
        last = last_per_host(signals)
        return {h: (cumulative(last[h]) if h in last else None, cumulative(s)) for h, s in self.expected.items()
                if h not in last or cumulative(last[h]) != cumulative(s)}

    def __call__(self, signals: list[dict[str, Any]]) -> bool:
        return not self.differ(signals)

    def why_not(self, signals: list[dict[str, Any]]) -> str:
        last = last_per_host(signals)
        return "; ".join(f"{h}: the stream's last {got} ({last[h]['reason'] if h in last else ''}), scan's {want}"
                         for h, (got, want) in self.differ(signals).items())


def signals_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The signals read from the topic, without the record key `read_until` adds."""
    return [{k: v for k, v in m.items() if k != "_key"} for m in messages]


def scan_hosts(events: list[dict[str, Any]], workdir: Path) -> dict[str, dict[str, Any]]:
    """`neardup scan --hosts` of the events: the last line per host."""
    path, hosts = workdir / "hosts-input.jsonl", workdir / "scan-hosts.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    run_scan(Settings(k=K), [path], state=workdir / "hosts-scan-state", out=workdir / "hosts-scan-decisions.jsonl",
             hosts=hosts, progress=False)
    return {s["host"]: s for s in map(orjson.loads, hosts.read_bytes().splitlines())}


def test_a_signal_lost_in_a_crash_is_sent_after_the_restart_and_the_last_ones_equal_scan(
        pipeline: Cluster) -> None:
    events = generate_crawl(seed=13)
    marker = pipeline.workdir / "killed-before-sending"
    pipeline.worker_env = {**WORKER_ENV, "PYTHONPATH": str(KILLPOINT), "KILLPOINT_HOST": TRAP,
                           "KILLPOINT_REASON": "reached", "KILLPOINT_MARKER": str(marker)}
    worker = pipeline.start_worker("a")
    pipeline.wait_balanced(["a"])
    pipeline.publish(events)
    deadline = time.monotonic() + 360
    while worker.poll() is None and time.monotonic() < deadline:  # it kills itself at the trap's crossing
        time.sleep(1)
    assert worker.returncode == -signal.SIGKILL and marker.exists(), \
        f"the worker did not die at the kill point (exit {worker.returncode}):\n{pipeline.log_tail()}"
    lost = orjson.loads(marker.read_bytes())
    pipeline.kill_worker("a")  # reaps it (and anything of its group)
    before = signals_of(pipeline.read_until("frontier.host-signals", lambda _: True, settle_s=1))
    assert not [s for s in before if s["host"] == TRAP and "reached" in s["reason"]], "the send was lost"

    pipeline.start_worker("a")
    decisions = pipeline.read_until("dedup.decisions", all_complete({e["url"] for e in events}), timeout_s=360)
    check_g1_g3(pipeline, events, decisions)
    expected = scan_hosts(events, pipeline.workdir)
    assert expected[TRAP]["penalty"] >= 0.5

    signals = signals_of(pipeline.read_until("frontier.host-signals", Settled(expected), timeout_s=180, settle_s=3))
    # the lost signal reached the topic after the restart, unchanged, or a later one of its record did
    # (the host's last signal is what is sent again; it carries the same cumulative state or a newer one)
    later = [s for s in signals if s["host"] == TRAP and s.get("revision", 0) >= lost.get("revision", 1)]
    assert later, f"nothing the trap host sent from the lost signal on reached the topic: {lost}"
    assert lost in signals or later[0]["revision"] > lost["revision"], later[0]
    assert later[0]["penalty"] >= 0.5, "the first signal after the lost one still says the host is a trap"
    last = last_per_host(signals)
    assert set(last) == set(expected)
    for host, scanned in expected.items():
        assert cumulative(last[host]) == cumulative(scanned), host
    assert [r for r in last[TRAP]["url_rules"] if (r["kind"], r["param"]) == ("ignore_query_param", "sid")]

    by_host: dict[str, list[dict[str, Any]]] = {}
    for s in signals:  # one key, one partition: in the order sent
        by_host.setdefault(s["host"], []).append(s)
    for host, sent in by_host.items():
        revisions = [s["revision"] for s in sent]
        assert revisions == sorted(revisions), f"{host}: the revisions go back: {revisions}"
        for s in sent:  # a revision seen twice is a signal sent again: the same signal
            assert s == next(t for t in sent if t["revision"] == s["revision"]), host
