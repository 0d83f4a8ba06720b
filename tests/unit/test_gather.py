"""The per-URL state machine: provisional decisions on timeout, completion, recrawls, replays."""

from __future__ import annotations

from neardup_core.dedup.gather import Gather, Published, UrlState
from neardup_core.dedup.rule import Match
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.index.bucket import Answer
from neardup_core.index.tables import SEED_DESIGN
from neardup_core.messages import Decision
from neardup_core.settings import CoreSettings

G = Gather(CoreSettings(k=3, tables=SEED_DESIGN.name, decision_timeout_ms=1000))
T0 = 1_700_000_000_000


def decisions(published: list[Published]) -> list[Decision]:
    return [p.decision for p in published]


def fetch(url: str = "https://a.org/x", at: int = T0, body: str = "b" * 64, fp: int | None = 0xFFFF) -> Fetch:
    return Fetch(url, "a.org", at, 0.0, body, "c" * 64, fp)


def answers(state: UrlState, f: Fetch, best: Match | None = None, tables: list[int] | None = None) -> list:
    version = f.version
    assert version is not None
    out = []
    for table in tables if tables is not None else [0, 1, 2, 3, 0xF0, 0xF1]:
        out += decisions(G.on_answer(state, Answer(f.url, version.version_id, f.fetched_at_ms, (table,), best), T0))
    return out


def test_decision_waits_for_every_table_then_publishes_once() -> None:
    state = UrlState()
    probes, published = G.on_fetch(state, fetch(), T0)
    assert len(probes) == 6 and published == []
    assert answers(state, fetch(), tables=[0, 1, 2, 3, 0xF0]) == []
    (decision,) = answers(state, fetch(), tables=[0xF1])
    assert decision.verdict == "unique" and decision.complete and decision.revision == 1
    replayed = answers(state, fetch(), tables=[0xF1])
    assert replayed == [decision], "a replayed answer re-sends the same decision (its output may be lost)"


def test_timeout_publishes_provisionally_and_late_answers_complete_it() -> None:
    state = UrlState()
    G.on_fetch(state, fetch(), T0)
    assert G.on_tick(state, T0 + 999) == []
    assert G.awaiting(state) == T0 + 1000
    (provisional,) = decisions(G.on_tick(state, T0 + 1000))
    assert not provisional.complete and provisional.verdict == "unique"
    assert G.awaiting(state) is None
    better = fetch("https://a.org/", at=T0 - 5, body="d" * 64)
    assert better.version is not None
    (revised,) = answers(state, fetch(), best=Match(better.version, False, 2), tables=[0])
    assert revised.verdict == "near_duplicate" and not revised.complete and revised.revision == 2
    (done,) = answers(state, fetch(), best=None, tables=[1, 2, 3, 0xF0, 0xF1])
    assert done.complete and done.verdict == "near_duplicate" and done.revision == 3


def test_recrawl_of_an_unchanged_body_is_answered_without_a_probe() -> None:
    state = UrlState()
    G.on_fetch(state, fetch(), T0)
    answers(state, fetch())
    probes, published = G.on_fetch(state, fetch(at=T0 + 60_000), T0)
    (again,) = decisions(published)
    assert probes == [] and again.verdict == "unique" and again.fetched_at.startswith("2023-11-14T22:14:20")
    assert again.revision == 2


def test_a_worse_candidate_never_becomes_duplicate_of() -> None:
    state = UrlState()
    G.on_fetch(state, fetch(), T0)
    worse = fetch("https://a.org/x/y/z?q=1", at=T0 + 5, body="e" * 64)
    assert worse.version is not None
    (decision,) = answers(state, fetch(), best=Match(worse.version, True, 0))
    assert decision.verdict == "unique"
