"""`neardup tune`'s cost model (issue 26): lost pages and duplicate entries per million pages from the
counts on labelled pairs, and the cheapest setting, on pairs where the answer is known by construction."""

from __future__ import annotations

from collections import Counter

import pytest

from neardup_core.testing.cost import CostError, CostModel, cheapest, duplicate_rate_of, setting_costs
from neardup_core.testing.evaluate import PairScore, SweepScore, sweep

SIG = bytes(range(32))


def pairs() -> list[PairScore]:
    """Four duplicate pairs (SimHash distances 1, 2, 5, 6) and ten distinct ones, one of them 5 bits
    apart: k = 2 finds half the duplicates and merges nothing; k = 6 finds all and merges one in ten."""
    dups = [PairScore(True, False, d, (SIG, SIG)) for d in (1, 2, 5, 6)]
    distinct = [PairScore(False, False, 5, (SIG, SIG))] + [PairScore(False, False, 30, (SIG, SIG))] * 9
    return dups + distinct


def simhash_at(ks: list[int]) -> list[SweepScore]:
    return [s for s in sweep(pairs(), ks, [], []) if s.method == "simhash"]


def test_the_figures_follow_the_model() -> None:
    score = SweepScore("simhash", 3, None, None, None, tp=90, fp=2, fn=10, tn=98)
    (c,) = setting_costs([score], CostModel(2.0, 1.0, 0.25))
    assert c.false_positive_rate == pytest.approx(0.02)
    assert c.lost_pages == pytest.approx(0.02 * 0.75 * 1_000_000)  # 15,000 of the 750,000 distinct pages
    assert c.duplicate_entries == pytest.approx(0.10 * 0.25 * 1_000_000)  # 25,000 of the 250,000 duplicates
    assert c.cost == pytest.approx(2.0 * 15_000 + 25_000)


def test_expensive_duplicates_pick_the_looser_k() -> None:
    scores = simhash_at([2, 6])
    best = cheapest(scores, CostModel(cost_lost_page=1.0, cost_duplicate_entry=1.0, duplicate_rate=0.5))
    # k=2: 0 lost + 0.5 * 500,000 entries = 250,000; k=6: 0.1 * 500,000 lost + 0 entries = 50,000
    assert best.score.k == 6
    assert (best.lost_pages, best.duplicate_entries, best.cost) == pytest.approx((50_000, 0, 50_000))


def test_expensive_lost_pages_pick_the_stricter_k() -> None:
    scores = simhash_at([2, 6])
    best = cheapest(scores, CostModel(cost_lost_page=100.0, cost_duplicate_entry=1.0, duplicate_rate=0.5))
    # k=2: 250,000; k=6: 100 * 50,000 = 5,000,000
    assert best.score.k == 2
    assert (best.lost_pages, best.duplicate_entries, best.cost) == pytest.approx((0, 250_000, 250_000))


def test_the_duplicate_rate_moves_the_choice() -> None:
    """At 10:1 the looser k wins on a crawl of mostly duplicates and loses on a crawl of few."""
    scores = simhash_at([2, 6])
    assert cheapest(scores, CostModel(10.0, 1.0, 0.9)).score.k == 6  # 0.1*0.1M*10=100k against 0.5*0.9M=450k
    assert cheapest(scores, CostModel(10.0, 1.0, 0.1)).score.k == 2  # 0.1*0.9M*10=900k against 0.5*0.1M=50k


def test_min_precision_stays_a_constraint() -> None:
    scores = simhash_at([2, 6])
    model = CostModel(1.0, 1.0, 0.5)
    assert cheapest(scores, model, min_precision=1.0).score.k == 2  # k=6 is cheaper but has precision 0.8
    with pytest.raises(CostError, match="no setting reaches precision"):
        cheapest([s for s in scores if s.k == 6], model, min_precision=1.0)


def test_minhash_and_both_are_costed_too() -> None:
    """A duplicate only the MinHash bands find: at 1:1 `both` with the bands beats SimHash alone."""
    half = bytes(range(16)) + bytes(16)
    ps = [PairScore(True, False, 20, (SIG, SIG)), PairScore(True, False, 1, (SIG, half)),
          PairScore(False, False, 30, (SIG, bytes(range(100, 132))))]
    scores = sweep(ps, [3], [0.9], [(8, 4)])
    best = cheapest(scores, CostModel(1.0, 1.0, 0.5))
    assert (best.score.method, best.score.k, best.score.bands, best.cost) == ("both", 3, 8, 0.0)
    simhash = next(c for c in setting_costs(scores, CostModel(1.0, 1.0, 0.5)) if c.score.method == "simhash")
    assert simhash.duplicate_entries == pytest.approx(0.5 * 0.5 * 1_000_000)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"cost_lost_page": -1.0}, "cost_lost_page must be a finite number >= 0"),
    ({"cost_duplicate_entry": float("nan")}, "cost_duplicate_entry must be a finite number >= 0"),
    ({"cost_lost_page": 0.0, "cost_duplicate_entry": 0.0}, "cannot both be 0"),
    ({"duplicate_rate": 1.5}, "duplicate_rate must be a number from 0 to 1"),
    ({"duplicate_rate": -0.1}, "duplicate_rate must be a number from 0 to 1"),
])
def test_invalid_models_are_refused_with_the_reason(kwargs: dict[str, float], message: str) -> None:
    args = {"cost_lost_page": 1.0, "cost_duplicate_entry": 1.0, "duplicate_rate": 0.2, **kwargs}
    with pytest.raises(CostError, match=message):
        CostModel(**args)


def test_pairs_without_a_distinct_pair_cannot_be_costed() -> None:
    score = SweepScore("simhash", 3, None, None, None, tp=3, fp=0, fn=1, tn=0)
    with pytest.raises(CostError, match="at least one duplicate and one distinct pair"):
        setting_costs([score], CostModel(1.0, 1.0, 0.2))


def test_the_duplicate_rate_of_verdicts_leaves_skipped_pages_out() -> None:
    verdicts = Counter({"unique": 6, "exact_duplicate": 1, "near_duplicate": 3, "skipped": 5})
    assert duplicate_rate_of(verdicts) == pytest.approx(0.4)
    with pytest.raises(CostError, match="no decided page"):
        duplicate_rate_of(Counter({"skipped": 2}))
