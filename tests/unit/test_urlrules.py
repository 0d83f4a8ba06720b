"""URL-rule learning: what the evidence supports, nothing more, in bounded memory."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable

import pytest

from neardup_core.hosts.url_rules import (
    DEFAULT_RULE_POLICY,
    RulePolicy,
    RuleState,
    apply_rules,
    evidence,
    learn,
    noise_class,
    rules_for,
)
from neardup_core.hosts.urls import host_of
from neardup_core.messages import Decision, UrlRule
from neardup_core.testing.synthetic import ARCHIVE, TRAP, generate_crawl_with_truth, truth_decisions

HOST = "h.example"


def decision(path: str, verdict: str = "unique", of: str | None = None, *, revision: int = 1,
             host: str = HOST) -> Decision:
    url = path if path.startswith("https://") else f"https://{host}{path}"
    duplicate_of = None if of is None else (of if of.startswith("https://") else f"https://{host}{of}")
    return Decision(url=url, host=host_of(url), verdict=verdict, duplicate_of=duplicate_of,  # type: ignore[arg-type]
                    distance=None, simhash=None, text_sha256=None, body_sha256=None, reason="test",
                    revision=revision, complete=True, fetched_at="2026-11-03T08:00:00Z",
                    decided_at="2026-11-03T08:00:00Z")


def learn_all(decisions: Iterable[Decision],
              policy: RulePolicy = DEFAULT_RULE_POLICY) -> dict[str, RuleState]:
    """Per-host rule states, keeping the latest decision per URL as a caller does."""
    states: dict[str, RuleState] = {}
    latest: dict[str, Decision] = {}
    for new in decisions:
        previous = latest.get(new.url)
        states[new.host] = learn(states.get(new.host), previous, new, policy)
        if previous is None or new.revision >= previous.revision:
            latest[new.url] = new
    return states


def rule_keys(state: RuleState | None) -> set[tuple[str, str | None]]:
    return {(r.kind, r.param) for r in rules_for(state)}


@pytest.fixture(scope="module")
def crawl() -> tuple[list, dict[str, RuleState]]:
    events, truths = generate_crawl_with_truth(7)
    return truths, learn_all(truth_decisions(events, truths))


# --- the synthetic crawl ----------------------------------------------------------------------------

def test_trap_session_parameter_is_learned_with_high_confidence(crawl) -> None:
    _, states = crawl
    rules = {(r.kind, r.param): r for r in rules_for(states[TRAP])}
    sid = rules[("ignore_query_param", "sid")]
    assert sid.confidence >= 0.9 and sid.support >= 40
    assert sid.example is not None and "sid=" in sid.example
    assert ("ignore_query_param", "sort") in rules
    assert ("strip_path_param", "jsessionid") in rules
    assert ("ignore_path_segment", "/calendar/{date}") in rules


def test_no_rule_claims_the_page_parameter(crawl) -> None:
    _, states = crawl
    for state in states.values():
        assert not any(r.param == "page" for r in rules_for(state))
    dup, distinct = evidence(states[ARCHIVE], "ignore_query_param", "page")
    assert dup >= 1 and distinct > 10 * dup  # "/list" is page 1 again, every other page differs


def test_learned_rules_never_merge_urls_of_different_content(crawl) -> None:
    truths, states = crawl
    for host, state in states.items():
        rules = rules_for(state)
        contents_by_key: dict[str, set[str]] = defaultdict(set)
        for truth in truths:
            if host_of(truth.url) == host:
                contents_by_key[apply_rules(truth.url, rules)].add(truth.content)
        assert all(len(contents) == 1 for contents in contents_by_key.values()), host


def test_learned_rules_collapse_the_trap(crawl) -> None:
    truths, states = crawl
    trap_urls = {t.url for t in truths if t.kind == "trap"}
    keys = {apply_rules(url, rules_for(states[TRAP])) for url in trap_urls}
    assert len(trap_urls) > 150 and len(keys) <= 8


def test_rules_fit_the_host_signal_schema(crawl) -> None:
    _, states = crawl
    for rule in rules_for(states[TRAP]):
        data = rule.to_dict()
        assert set(data) >= {"kind", "param", "support", "confidence"}
        assert 0.0 <= data["confidence"] <= 1.0 and data["support"] >= 3


# --- evidence ---------------------------------------------------------------------------------------

def test_a_parameter_that_varies_within_duplicates_is_ignorable() -> None:
    decisions = [decision("/p")] + [decision(f"/p?s={i}", "exact_duplicate", "/p") for i in range(5)]
    rules = rules_for(learn_all(decisions)[HOST])
    assert [(r.kind, r.param) for r in rules] == [("ignore_query_param", "s")]
    assert rules[0].support >= 5


def test_a_parameter_that_changes_content_is_not() -> None:
    decisions = [decision(f"/list?page={n}") for n in range(1, 8)]
    decisions += [decision(f"/list?page={n}&x=1", "exact_duplicate", f"/list?page={n}") for n in range(1, 4)]
    decisions.append(decision("/list?page=9", "exact_duplicate", "/list?page=1"))  # "page=9" is page 1 again
    state = learn_all(decisions)[HOST]
    assert ("ignore_query_param", "x") in rule_keys(state)
    assert ("ignore_query_param", "page") not in rule_keys(state)
    dup, distinct = evidence(state, "ignore_query_param", "page")
    assert dup == 2  # against page=1 and its sibling page=1&x=1
    assert distinct > 5 * dup


def test_distinct_pairs_share_the_blame_between_parameters() -> None:
    state = learn_all([decision("/q?a=1&b=1"), decision("/q?a=2&b=2")])[HOST]
    assert evidence(state, "ignore_query_param", "a") == (0.0, 0.5)
    assert evidence(state, "ignore_query_param", "b") == (0.0, 0.5)


def test_cross_host_copies_teach_nothing() -> None:
    decisions = [decision(f"/p?s={i}", "exact_duplicate", "https://other.example/p") for i in range(6)]
    assert learn_all(decisions)[HOST].candidates == {}


@pytest.mark.parametrize(("variant", "expected"), [
    ("/doc/{i};jsessionid=A1B2C3D4E5F6{i}", {("strip_path_param", "jsessionid")}),
    # "/doc/x/index.php" is "/doc/x/" by the index rule and "/doc/x" only with the slash rule too
    ("/doc/{i}/index.php", {("strip_index_file", "index.php"), ("trailing_slash", None)}),
    ("/DOC/{i}", {("lowercase_path", None)}),
    ("/doc/{i}/", {("trailing_slash", None)}),
])
def test_path_rules_are_learned_where_the_data_supports_them(variant: str,
                                                             expected: set[tuple[str, str | None]]) -> None:
    names = ["alpha", "beta", "gamma", "delta", "epsilon"]
    decisions = [decision(f"/doc/{n}") for n in names]
    decisions += [decision(variant.format(i=n), "exact_duplicate", f"/doc/{n}") for n in names]
    rules = rules_for(learn_all(decisions)[HOST])
    assert {(r.kind, r.param) for r in rules} == expected
    for n in names:
        assert apply_rules(f"https://{HOST}" + variant.format(i=n), rules) == f"https://{HOST}/doc/{n}"


def test_noise_segments_become_templates_and_slugs_do_not() -> None:
    first = "/day/2026-01-01/x"
    decisions = [decision(first)]
    decisions += [decision(f"/day/2026-01-{d:02d}/x", "near_duplicate", first) for d in range(2, 7)]
    slug = "/news/storm-hits-coast"
    decisions += [decision(slug), decision(slug + "-again", "exact_duplicate", slug)]
    rules = rules_for(learn_all(decisions)[HOST])
    assert [(r.kind, r.param) for r in rules] == [("ignore_path_segment", "/day/{date}/x")]
    assert apply_rules(f"https://{HOST}/day/2031-12-24/x?k=1", rules) == f"https://{HOST}/day/{{date}}/x?k=1"
    assert apply_rules(f"https://{HOST}/day/today/x", rules) == f"https://{HOST}/day/today/x"


def test_distinct_pages_block_a_segment_template() -> None:
    decisions = [decision(f"/item/{n}") for n in range(100, 120)]
    decisions += [decision(f"/item/{n}", "exact_duplicate", "/item/1") for n in range(1, 5)]
    state = learn_all(decisions)[HOST]
    assert not any(r.kind == "ignore_path_segment" for r in rules_for(state))


@pytest.mark.parametrize(("segment", "expected"), [
    ("2026-11-03", "date"), ("20261103", "date"), ("4711", "num"), ("9f86d081884c7d65", "hex"),
    ("aZ3-kk_Q9xT7bLm2", "token"), ("top-10-tips-for-2026", None), ("storm-hits-coast", None),
    ("index.html", None), ("2026-13-45", None),
])
def test_noise_classes(segment: str, expected: str | None) -> None:
    assert noise_class(segment) == expected


# --- revisions, purity, bounds, serialisation -------------------------------------------------------

def test_a_revision_takes_back_what_the_previous_decision_said() -> None:
    first, second = decision("/r?v=1"), decision("/r?v=2")
    state = learn_all([first, second])[HOST]
    assert evidence(state, "ignore_query_param", "v") == (0.0, 1.0)
    revised = decision("/r?v=2", "near_duplicate", "/r?v=1", revision=2)
    after = learn(state, second, revised)
    assert evidence(after, "ignore_query_param", "v") == (1.0, 0.0)
    assert evidence(state, "ignore_query_param", "v") == (0.0, 1.0), "learn must not change its input"
    assert learn(after, revised, second) is after, "an older revision is stale"
    assert learn(after, revised, revised) is after, "a replay adds nothing"


def test_memory_per_host_is_bounded() -> None:
    policy = RulePolicy(max_candidates=16, max_groups=32, group_size=3)
    rng = random.Random(1)
    state = None
    for _ in range(3000):
        path = f"/{rng.choice(['a', 'b', 'c'])}/{rng.randrange(200)}"
        query = "&".join(f"p{rng.randrange(60)}={rng.randrange(5)}" for _ in range(rng.randint(0, 3)))
        url = f"{path}?{query}" if query else path
        if rng.random() < 0.5:
            new = decision(url)
        else:
            new = decision(url, "near_duplicate", f"/{rng.choice(['a', 'b'])}/{rng.randrange(5)}")
        state = learn(state, None, new, policy)
    assert state is not None
    assert len(state.candidates) <= 16
    assert len(state.groups) <= 32 and all(len(m) <= 3 for m in state.groups.values())
    assert all(dup >= 0 and distinct >= 0 for dup, distinct, _ in state.candidates.values())
    assert len(state.to_bytes()) < 16 * 200 + 32 * 3 * 120


def test_state_round_trips_through_bytes(crawl) -> None:
    _, states = crawl
    for state in states.values():
        again = RuleState.from_bytes(state.to_bytes())
        assert again == state and rules_for(again) == rules_for(state)


def test_apply_rules_takes_dicts_from_a_signal() -> None:
    rules = [UrlRule("ignore_query_param", "sid", 9, 0.95), UrlRule("trailing_slash", None, 4, 0.9)]
    url = f"https://{HOST}/a/b/?x=1&sid=ff&y=2"
    expected = f"https://{HOST}/a/b?x=1&y=2"
    assert apply_rules(url, rules) == expected
    assert apply_rules(url, [r.to_dict() for r in rules]) == expected
    assert apply_rules(url, []) == url
