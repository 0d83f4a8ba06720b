"""Host statistics, penalty, hysteresis and window signals, on hand-made decisions and the synthetic crawl."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import pytest

from neardup_core.hosts.statistics import (
    DEFAULT_POLICY,
    HostPolicy,
    HostState,
    apply_decision,
    apply_window_decision,
    budget_factor,
    close_windows,
    observe,
    penalty,
    signal_for,
    supersedes,
    threshold_signal,
    window_start_of,
)
from neardup_core.hosts.url_rules import RuleState, learn, rules_for
from neardup_core.hosts.urls import host_of
from neardup_core.messages import Decision, HostSignal
from neardup_core.testing.synthetic import (
    AGGREGATOR,
    ARCHIVE,
    BLOG,
    HERALD,
    TRAP,
    generate_crawl_with_truth,
    truth_decisions,
)

HOST = "h.example"
H8, H9, H10 = "2026-11-03T08:00:00.000Z", "2026-11-03T09:00:00.000Z", "2026-11-03T10:00:00.000Z"


def decision(path: str, verdict: str = "unique", of: str | None = None, *, at: str = "2026-11-03T08:10:00Z",
             revision: int = 1, host: str = HOST) -> Decision:
    url = f"https://{host}{path}"
    duplicate_of = None if of is None else (of if of.startswith("https://") else f"https://{host}{of}")
    return Decision(url=url, host=host_of(url), verdict=verdict, duplicate_of=duplicate_of,  # type: ignore[arg-type]
                    distance=None if of is None else 0, simhash=None, text_sha256=None, body_sha256=None,
                    reason="test", revision=revision, complete=True, fetched_at=at, decided_at=at)


class Book:
    """What a caller keeps: the latest decision per URL, host and window states, rule states."""

    def __init__(self, policy: HostPolicy = DEFAULT_POLICY) -> None:
        self.policy = policy
        self.latest: dict[str, Decision] = {}
        self.hosts: dict[str, HostState] = {}
        self.windows: dict[tuple[str, str], HostState] = {}
        self.rules: dict[str, RuleState] = {}
        self.signals: list[HostSignal] = []

    def lookup(self, host: str) -> Callable[[str], HostState | None]:
        return lambda start: self.windows.get((host, start))

    def feed(self, decisions: Iterable[Decision]) -> list[HostSignal]:
        out = []
        for new in decisions:
            previous = self.latest.get(new.url)
            self.rules[new.host] = learn(self.rules.get(new.host), previous, new)
            update = observe(self.hosts.get(new.host), self.lookup(new.host), previous, new,
                             rules=rules_for(self.rules[new.host]), policy=self.policy)
            self.hosts[new.host] = update.host
            self.windows.update({(new.host, start): w for start, w in update.windows.items()})
            out.extend(update.signals)
            if supersedes(previous, new):
                self.latest[new.url] = new
        self.signals.extend(out)
        return out

    def flush(self) -> list[HostSignal]:
        out = []
        for host, state in self.hosts.items():
            update = close_windows(state, self.lookup(host), flush=True, policy=self.policy)
            self.hosts[host] = update.host
            self.windows.update({(host, start): w for start, w in update.windows.items()})
            out.extend(update.signals)
        self.signals.extend(out)
        return out


@pytest.fixture(scope="module")
def crawl_book() -> Book:
    events, truths = generate_crawl_with_truth(7)
    book = Book()
    book.feed(truth_decisions(events, truths))
    book.flush()
    return book


def counts(state: HostState) -> tuple[int, int, int, int, int]:
    return (state.pages, state.exact_duplicates, state.near_duplicates, state.same_host_duplicates,
            state.skipped)


# --- the synthetic crawl ----------------------------------------------------------------------------

def test_trap_host_is_penalised_and_flagged(crawl_book: Book) -> None:
    state = crawl_book.hosts[TRAP]
    assert penalty(state) >= 0.5
    assert state.flagged
    raised = [s for s in crawl_book.signals if s.host == TRAP and s.window_start is None]
    assert len(raised) == 1 and raised[0].penalty >= 0.5 and "reached" in raised[0].reason
    assert raised[0].budget_factor == pytest.approx(1 - raised[0].penalty, abs=1e-3)
    assert any(r["param"] == "sid" for r in raised[-1].url_rules)


def test_hosts_with_distinct_or_syndicated_pages_stay_unpenalised(crawl_book: Book) -> None:
    for host in (HERALD, BLOG, AGGREGATOR, ARCHIVE):
        state = crawl_book.hosts[host]
        assert penalty(state) <= 0.1, host
        assert not state.flagged
    aggregator = crawl_book.hosts[AGGREGATOR]
    assert aggregator.duplicates > 10 and aggregator.same_host_duplicates == 0
    assert not any(s.host != TRAP and s.window_start is None for s in crawl_book.signals)


def test_counts_agree_with_the_truth(crawl_book: Book) -> None:
    events, truths = generate_crawl_with_truth(7)
    for host, state in crawl_book.hosts.items():
        latest = {t.url: t for t in truths if host_of(t.url) == host}
        assert state.pages == len(latest)
        assert state.duplicates == sum(t.duplicate_of is not None for t in latest.values())
        same = sum(t.duplicate_of is not None and host_of(t.duplicate_of) == host for t in latest.values())
        assert state.same_host_duplicates == same
        windows = [w for (h, _), w in crawl_book.windows.items() if h == host]
        assert sum(w.pages for w in windows) == sum(host_of(e["url"]) == host for e in events)  # per fetch


def test_every_window_closes_once_with_a_signal(crawl_book: Book) -> None:
    window_signals = [s for s in crawl_book.signals if s.window_start is not None]
    keys = [(s.host, s.window_start) for s in window_signals]
    assert len(keys) == len(set(keys)) == len(crawl_book.windows)
    assert all(w.closed for w in crawl_book.windows.values())
    assert all(not state.open_windows for state in crawl_book.hosts.values())
    trap = [s for s in window_signals if s.host == TRAP]
    assert len(trap) >= 4 and all(s.penalty >= 0.5 for s in trap)


# --- counting and revisions -------------------------------------------------------------------------

def test_a_revision_moves_the_page_instead_of_counting_it_twice() -> None:
    book = Book()
    book.feed([decision("/a"), decision("/b")])
    first = decision("/a-copy")
    book.feed([first])
    before = book.hosts[HOST]
    window_before = book.windows[(HOST, window_start_of(first.fetched_at))]
    revised = dataclasses.replace(first, verdict="near_duplicate", duplicate_of=f"https://{HOST}/a",
                                  revision=2)
    book.feed([revised])
    after = book.hosts[HOST]
    window_after = book.windows[(HOST, window_start_of(first.fetched_at))]
    assert counts(before) == (3, 0, 0, 0, 0)
    assert counts(after) == (3, 0, 1, 1, 0)
    assert counts(window_before) == (3, 0, 0, 0, 0)
    assert counts(window_after) == (3, 0, 1, 1, 0)


def test_replays_and_stale_revisions_change_nothing() -> None:
    book = Book()
    one = decision("/x")
    two = dataclasses.replace(one, verdict="exact_duplicate", duplicate_of=f"https://{HOST}/y", revision=2)
    book.feed([decision("/y"), one, two])
    state = book.hosts[HOST]
    window = dict(book.windows)
    book.feed([two, one, two])  # at-least-once: a duplicate delivery and an older revision
    assert book.hosts[HOST] == state
    assert book.windows == window
    assert counts(state) == (2, 1, 0, 1, 0)


def test_a_recrawl_is_one_url_but_a_fetch_in_each_window() -> None:
    book = Book()
    book.feed([decision("/r", at="2026-11-03T08:10:00Z"), decision("/r", at="2026-11-03T10:30:00Z",
                                                                   revision=2)])
    assert book.hosts[HOST].pages == 1
    assert book.windows[(HOST, H8)].pages == 1
    assert book.windows[(HOST, H10)].pages == 1


def test_skipped_pages_are_not_pages() -> None:
    state = None
    for d in (decision("/ok"), decision("/err", "skipped"), decision("/pdf", "skipped")):
        state = apply_decision(state, None, d)
    assert state is not None and counts(state) == (1, 0, 0, 0, 2)
    revived = apply_decision(state, decision("/err", "skipped"), decision("/err", revision=2))
    assert counts(revived) == (2, 0, 0, 0, 1)


def test_www_mirror_counts_as_same_host_and_syndication_does_not() -> None:
    mirror = decision("/a", "exact_duplicate", "https://www.h.example/a")
    copy = decision("/b", "exact_duplicate", "https://other.example/b")
    state = apply_decision(apply_decision(None, None, mirror), None, copy)
    assert (state.exact_duplicates, state.same_host_duplicates) == (2, 1)


def test_a_window_state_only_takes_its_own_window() -> None:
    window = apply_window_decision(None, None, decision("/a", at="2026-11-03T08:59:59Z"))
    assert (window.window_start, window.window_end) == (H8, H9)
    with pytest.raises(ValueError):
        apply_window_decision(window, None, decision("/b", at="2026-11-03T09:00:00Z"))


# --- penalty and hysteresis -------------------------------------------------------------------------

@pytest.mark.parametrize(("pages", "same"), [(0, 0), (1, 1), (10, 5), (100, 90), (1000, 1000), (50, 0)])
def test_penalty_is_same_host_duplicates_over_pages_plus_n0(pages: int, same: int) -> None:
    state = HostState(HOST, pages=pages, near_duplicates=same, same_host_duplicates=same)
    assert penalty(state) == pytest.approx(same / (pages + 20) if pages else 0.0)
    assert 0.0 <= penalty(state) < 1.0
    assert budget_factor(state) == pytest.approx(max(0.05, 1 - penalty(state)))


def test_penalty_grows_with_the_sample_at_a_fixed_ratio() -> None:
    values = [penalty(HostState(HOST, pages=n, exact_duplicates=n // 2, same_host_duplicates=n // 2))
              for n in (4, 20, 100, 1000)]
    assert values == sorted(values) and values[-1] > 0.48
    million = 10**6
    everything = HostState(HOST, pages=million, exact_duplicates=million, same_host_duplicates=million)
    assert budget_factor(everything) == 0.05


def test_hysteresis_flags_at_up_and_unflags_only_at_down() -> None:
    state = HostState(HOST)
    sent = []
    # duplicates push the penalty past 0.5; then unique pages pull it down through 0.5 and 0.3
    steps = [(1, 0)] + [(1, 1)] * 40 + [(1, 0)] * 200
    for new_pages, new_same in steps:
        state = dataclasses.replace(state, pages=state.pages + new_pages,
                                    near_duplicates=state.near_duplicates + new_same,
                                    same_host_duplicates=state.same_host_duplicates + new_same)
        state, signal = threshold_signal(state)
        if signal:
            sent.append((state.pages, signal))
    assert [s.reason.split()[2] for _, s in sent] == ["reached", "fell"]
    (up_at, up), (down_at, down) = sent
    assert up.penalty >= 0.5 and down.penalty <= 0.3
    before_up = HostState(HOST, pages=up_at - 1, same_host_duplicates=up_at - 2, near_duplicates=up_at - 2)
    assert penalty(before_up) < 0.5
    between = [penalty(HostState(HOST, pages=n, same_host_duplicates=40, near_duplicates=40))
               for n in range(up_at, down_at)]
    assert any(p < 0.5 for p in between), "the penalty went below up without an unflag signal"
    assert not state.flagged


def test_hysteresis_thresholds_are_settings() -> None:
    state = HostState(HOST, pages=30, near_duplicates=10, same_host_duplicates=10)  # penalty 0.2
    assert threshold_signal(state)[1] is None
    flagged, signal = threshold_signal(state, policy=HostPolicy(up=0.2, down=0.1))
    assert flagged.flagged and signal is not None


# --- windows ----------------------------------------------------------------------------------------

def test_a_window_closes_when_the_watermark_passes_its_end_plus_grace() -> None:
    book = Book(HostPolicy(window_s=3600, grace_s=600))
    book.feed([decision("/a", at="2026-11-03T08:05:00Z"), decision("/b", "near_duplicate", "/a",
                                                                    at="2026-11-03T08:50:00Z")])
    assert book.feed([decision("/c", at="2026-11-03T09:09:59Z")]) == []
    closing = book.feed([decision("/d", at="2026-11-03T09:10:00Z")])
    assert len(closing) == 1
    signal = closing[0]
    assert (signal.window_start, signal.window_end) == (H8, H9)
    assert (signal.pages, signal.near_duplicates, signal.same_host_duplicates) == (2, 1, 1)
    assert signal.reason.startswith("window closed")
    assert book.hosts[HOST].open_windows == (H9,)


def test_a_late_decision_for_a_closed_window_counts_but_sends_nothing() -> None:
    book = Book()
    book.feed([decision("/a", at="2026-11-03T08:05:00Z"), decision("/z", at="2026-11-03T12:00:00Z")])
    late = decision("/late", "exact_duplicate", "/a", at="2026-11-03T08:30:00Z")
    assert book.feed([late]) == []
    window = book.windows[(HOST, H8)]
    assert window.closed and window.pages == 2
    assert H8 not in book.hosts[HOST].open_windows


def test_open_windows_are_bounded() -> None:
    policy = HostPolicy(max_open_windows=3, grace_s=10**9)
    state = None
    for hour in range(10):
        state = apply_decision(state, None, decision(f"/{hour}", at=f"2026-11-03T{hour:02d}:30:00Z"), policy)
    assert state is not None
    assert state.open_windows == tuple(f"2026-11-03T{h:02d}:00:00.000Z" for h in (7, 8, 9))


# --- messages and serialisation ---------------------------------------------------------------------

def test_signal_follows_the_topic_schema() -> None:
    state = HostState(HOST, pages=40, exact_duplicates=10, near_duplicates=10, same_host_duplicates=15)
    rules = rules_for(None)
    signal = signal_for(state, rules=rules)
    assert HostSignal.from_json(signal.to_json()) == signal
    assert signal.window_start is None and signal.dup_ratio == 0.5 and signal.penalty == 0.25
    assert signal.budget_factor == 0.75 and "15 of 40" in signal.reason


def test_states_round_trip_through_bytes(crawl_book: Book) -> None:
    for state in [*crawl_book.hosts.values(), *crawl_book.windows.values()]:
        assert HostState.from_bytes(state.to_bytes()) == state
    with_windows = apply_decision(None, None, decision("/a"))
    assert with_windows.open_windows and HostState.from_bytes(with_windows.to_bytes()) == with_windows


def test_a_states_dict_is_what_asdict_gives(crawl_book: Book) -> None:
    """`to_dict` copies the fields shallowly (cheaper than `dataclasses.asdict`): the same dict, and the
    same bytes stored."""
    states = [*crawl_book.hosts.values(), *crawl_book.windows.values(), apply_decision(None, None, decision("/a"))]
    assert any(state.open_windows for state in states) and any(state.window_start for state in states)
    for state in states:
        assert state.to_dict() == dataclasses.asdict(state)
        assert [type(v) for v in state.to_dict().values()] == [type(v) for v in dataclasses.asdict(state).values()]
