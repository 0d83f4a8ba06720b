"""What a frontier reading only the last signal per host can rely on: every signal carries the host's
cumulative state (penalty, budget factor, rules), signals are numbered and never go back, a host's
changes are settled into a signal, and an input seen again (after a crash) changes nothing and sends
its signals again."""

from __future__ import annotations

import random

import pytest

from neardup_core.hosts.statistics import HostState, budget_factor, penalty
from neardup_core.hosts.tracker import HostTracker
from neardup_core.hosts.url_rules import rules_for
from neardup_core.messages import Decision, HostSignal
from neardup_core.testing.synthetic import TRAP, generate_crawl_with_truth, truth_decisions

HOST = "trap.example"


def decision(path: str, verdict: str = "unique", of: str | None = None, *, at: str, revision: int = 1) -> Decision:
    url = f"https://{HOST}{path}"
    return Decision(url=url, host=HOST, verdict=verdict, duplicate_of=None if of is None else f"https://{HOST}{of}",  # type: ignore[arg-type]
                    distance=None if of is None else 0, simhash=None, text_sha256=None, body_sha256=None,
                    reason="test", revision=revision, complete=True, fetched_at=at, decided_at=at)


def trap_then_quiet_window() -> list[Decision]:
    """Hour 8: one page and 40 session-id copies of it (the penalty crosses 0.5); hour 9: 10 distinct
    pages; hour 11: one page, whose watermark closes hours 8 and 9."""
    out = [decision("/events", at="2026-11-03T08:00:00Z")]
    out += [decision(f"/events?sid={i:04x}", "exact_duplicate", "/events", at=f"2026-11-03T08:{i + 1:02d}:00Z")
            for i in range(40)]
    out += [decision(f"/page-{i}", at=f"2026-11-03T09:{i:02d}:00Z") for i in range(10)]
    out += [decision("/late", at="2026-11-03T11:00:00Z")]
    return out


def feed(tracker: HostTracker, decisions: list[Decision]) -> list[HostSignal]:
    return [s for d in decisions for s in tracker.observe(d, None)]


def test_a_window_signal_after_a_threshold_signal_carries_the_hosts_penalty_and_rules() -> None:
    tracker = HostTracker.open(None)
    signals = feed(tracker, trap_then_quiet_window())
    kinds = [(s.window_start, s.reason.split(":")[0]) for s in signals]
    assert kinds == [(None, "penalty 0.50 reached 0.5"), ("2026-11-03T08:00:00.000Z", "window closed"),
                     ("2026-11-03T09:00:00.000Z", "window closed")], kinds
    threshold, hour8, hour9 = signals
    assert hour9.pages == 10 and hour9.same_host_duplicates == 0, "the window's counts ride along"
    state = tracker.host(HOST)
    assert state is not None
    assert hour9.penalty == round(penalty(state), 4) >= 0.5, "the host's penalty, not the quiet window's 0"
    assert hour9.budget_factor == round(budget_factor(state), 4) <= 0.5
    sid = [r for r in hour9.url_rules if r["kind"] == "ignore_query_param" and r["param"] == "sid"]
    assert sid and hour9.url_rules == [r.to_dict() for r in rules_for(tracker.rules(HOST))]
    assert [r["param"] for r in threshold.url_rules] == [r["param"] for r in hour9.url_rules]
    assert [s.revision for s in signals] == [1, 2, 3]


def test_changes_no_signal_carried_are_settled_into_one_cumulative_signal() -> None:
    tracker = HostTracker.open(None)
    feed(tracker, trap_then_quiet_window())
    assert tracker.settle() == [], "the last signal carries the state already"
    feed(tracker, [decision(f"/more-{i}", at="2026-11-03T11:05:00Z") for i in range(5)])
    [settled] = tracker.settle()
    state = tracker.host(HOST)
    assert state is not None and not state.unsignalled
    assert (settled.window_start, settled.pages, settled.revision) == (None, state.pages, 4)
    assert settled.penalty == round(penalty(state), 4) and settled.reason.startswith("settled")
    assert tracker.settle() == []
    assert tracker.last_signal(HOST) == settled


def test_an_input_seen_again_changes_nothing_and_sends_its_signals_again() -> None:
    """The lost send: the worker wrote the input's state changes, then died before its signals
    reached the broker; the input comes again (its offset was not committed)."""
    decisions = trap_then_quiet_window()
    tracker = HostTracker.open(None)
    first = tracker.apply([(d, None) for d in decisions[:10]], position=0)
    crossing = tracker.apply([(d, None) for d in decisions[10:45]], position=1)  # lost with the worker
    assert [s.reason.split(":")[0] for s in crossing] == ["penalty 0.50 reached 0.5"]
    state = tracker.host(HOST)
    assert tracker.apply([(d, None) for d in decisions[:10]], position=0) == first == []
    assert tracker.apply([(d, None) for d in decisions[10:45]], position=1) == crossing, "sent again, unchanged"
    assert tracker.host(HOST) == state, "counted once"
    rest = tracker.apply([(d, None) for d in decisions[45:]], position=2)
    assert [s.revision for s in crossing + rest] == [1, 2, 3]


def test_a_later_input_sends_the_hosts_latest_signal_again_not_an_older_one() -> None:
    decisions = trap_then_quiet_window()
    tracker = HostTracker.open(None)
    tracker.apply([(d, None) for d in decisions[:45]], position=0)
    late = tracker.apply([(d, None) for d in decisions[45:]], position=1)
    assert tracker.apply([(d, None) for d in decisions[:45]], position=0) == [], \
        "the host's last signal came from the later input"
    assert tracker.apply([(d, None) for d in decisions[45:]], position=1) == late[-1:]


def test_a_tick_seen_again_sends_what_it_settled_again() -> None:
    tracker = HostTracker.open(None)
    tracker.apply([(d, None) for d in trap_then_quiet_window()[:20]], position=0)
    settled = tracker.settle(position=1)
    assert len(settled) == 1 and settled[0].revision == 1
    assert tracker.settle(position=1) == settled
    assert tracker.settle(position=2) == []


def test_old_states_without_signal_counts_still_load() -> None:
    raw = b'{"host": "a.example", "pages": 3, "flagged": true, "open_windows": []}'
    state = HostState.from_bytes(raw)
    assert (state.signals, state.unsignalled, state.pages) == (0, False, 3)
    assert HostSignal.from_json(b'{"host": "a.example", "window_start": null, "window_end": null, "pages": 1, '
                                b'"exact_duplicates": 0, "near_duplicates": 0, "same_host_duplicates": 0, '
                                b'"dup_ratio": 0.0, "penalty": 0.0, "budget_factor": 1.0}').revision == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_in_any_order_signals_grow_and_the_settled_last_one_is_the_hosts_state(seed: int) -> None:
    """The synthetic crawl's decisions in a random order (each URL's revisions in order), settled now
    and then as ticks would: per host the revisions grow by one, and after the last settle the last
    signal carries the cumulative penalty and budget factor of scan's order, and the same rules."""
    events, truths = generate_crawl_with_truth(7)
    decisions = truth_decisions(events, truths)
    rng = random.Random(seed)
    shuffled = rng.sample(decisions, len(decisions))
    by_url: dict[str, list[Decision]] = {}
    for d in decisions:
        by_url.setdefault(d.url, []).append(d)
    next_of = {url: iter(ds) for url, ds in by_url.items()}
    order = [next(next_of[d.url]) for d in shuffled]

    def run(order: list[Decision], settle_every: int) -> tuple[HostTracker, list[HostSignal]]:
        tracker, latest, out = HostTracker.open(None), {}, []
        for i, d in enumerate(order):
            out += tracker.observe(d, latest.get(d.url))
            latest[d.url] = d
            if i % settle_every == 0:
                out += tracker.settle()
        return tracker, out + tracker.settle()

    stream, sent = run(order, settle_every=37)
    scan = HostTracker.open(None)
    scanned = {}
    for s in feed_in_order(scan, decisions) + scan.flush():
        scanned[s.host] = s
    last: dict[str, HostSignal] = {}
    for s in sent:
        assert s.revision == (last[s.host].revision + 1 if s.host in last else 1), s
        last[s.host] = s
    assert set(last) == set(scanned)
    for host, signal in last.items():
        assert (signal.penalty, signal.budget_factor) == (scanned[host].penalty, scanned[host].budget_factor), host
        assert {(r["kind"], r["param"]) for r in signal.url_rules} == \
            {(r["kind"], r["param"]) for r in scanned[host].url_rules}, host
    assert last[TRAP].penalty >= 0.5 and stream.host(TRAP) is not None


def feed_in_order(tracker: HostTracker, decisions: list[Decision]) -> list[HostSignal]:
    latest: dict[str, Decision] = {}
    out: list[HostSignal] = []
    for d in decisions:
        out += tracker.observe(d, latest.get(d.url))
        latest[d.url] = d
    return out


def test_host_changes_travel_in_records_under_the_cap_in_order() -> None:
    """A gather record read again after a crash re-publishes thousands of decisions: one hosts record
    of them all would pass the producer's request size and crash the gather agent, losing them."""
    from streams.kafka import records

    changes = [(decision(f"/p{i}", at="2026-11-03T08:00:00Z"), decision(f"/p{i}", at="2026-11-03T08:00:00Z"))
               for i in range(3000)]
    encoded = list(records.encode_host_changes_capped(changes, max_bytes=records.RECORD_BYTES))
    assert len(encoded) > 1 and all(len(raw) < 2 * records.RECORD_BYTES for raw in encoded)
    assert [c for raw in encoded for c in records.decode_host_changes(raw)] == changes
    assert list(records.encode_host_changes_capped([])) == []


def test_counts_follow_each_urls_latest_decision_whatever_its_message_says_it_replaces() -> None:
    """The gather agent, reading its input again after a crash, sends a URL's last decision again as a
    change from itself; when the first send was lost with the worker, it must still count."""
    first = decision("/events", at="2026-11-03T08:00:00Z")
    copy = decision("/events?sid=1", "exact_duplicate", "/events", at="2026-11-03T08:01:00Z")
    revised = decision("/events?sid=1", "unique", at="2026-11-03T08:01:00Z", revision=2)
    tracker = HostTracker.open(None)
    tracker.observe(first, None)
    tracker.observe(copy, copy)  # its first send, (copy, None), never arrived
    tracker.observe(copy, copy)  # and a duplicate delivery
    state = tracker.host(HOST)
    assert state is not None and (state.pages, state.same_host_duplicates) == (2, 1)
    tracker.observe(revised, None)  # the message's idea of the previous decision is not needed
    tracker.observe(copy, None)  # stale: an older revision changes nothing
    state = tracker.host(HOST)
    assert state is not None and (state.pages, state.same_host_duplicates) == (2, 0)
    assert tracker.decision(copy.url, HOST) == revised
