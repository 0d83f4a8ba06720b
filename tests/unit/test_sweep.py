"""`neardup tune`'s sweep: SimHash, MinHash and both scored per k, J and bands x rows, and the
recommendation by the issue's goals."""

from __future__ import annotations

from neardup_core.testing.evaluate import PairScore, recommend_by_goals, sweep

SAME = bytes(range(32))
HALF = bytes(range(16)) + bytes(16)  # the first 16 rows equal: J estimate about 0.5, the first bands shared
OTHER = bytes(range(100, 132))


def test_sweep_scores_each_method_and_the_goals_pick_the_fewest_false_positives() -> None:
    pairs = [
        PairScore(True, False, 2, (SAME, SAME)),  # both methods find it
        PairScore(True, False, 9, (SAME, HALF)),  # only MinHash at J <= 0.5
        PairScore(True, False, 1, (SAME, OTHER)),  # only SimHash
        PairScore(False, False, 30, (SAME, HALF)),  # a false positive of MinHash at J <= 0.5
        PairScore(False, False, 30, (SAME, OTHER)),
    ]
    kinds = ["a", "b", "a", "distinct", "distinct"]
    scores = sweep(pairs, range(4), (0.3, 0.5, 0.9), [(8, 4)], kinds)
    by = {(s.method, s.k, s.jaccard): s for s in scores}
    assert (by[("simhash", 3, None)].tp, by[("simhash", 3, None)].fp) == (2, 0)
    assert (by[("minhash", None, 0.3)].tp, by[("minhash", None, 0.3)].fp) == (2, 1)
    assert (by[("minhash", None, 0.9)].tp, by[("minhash", None, 0.9)].fp) == (1, 0)
    assert (by[("both", 3, 0.3)].tp, by[("both", 3, 0.3)].fp) == (3, 1)
    assert dict(by[("both", 3, 0.9)].kind_recall) == {"a": 1.0, "b": 0.0}
    best = recommend_by_goals(scores, k=3, min_precision=0.5, min_recall=0.6, min_kind_recall=0.0)
    assert best is not None and (best.k, best.jaccard, best.fp) == (3, 0.9, 0)
    assert recommend_by_goals(scores, k=3, min_precision=0.5, min_recall=0.6, min_kind_recall=0.5) is not None
    assert recommend_by_goals(scores, k=3, min_precision=0.9, min_recall=1.0, min_kind_recall=0.9) is None
