"""The containment estimate (`neardup_core.fingerprint.containment`) on constructed shingle sets.

Sets are seeded random 64-bit hashes: B of |B| shingles, A holding a share c of B's shingles and
shingles of its own, so the exact containment of B in A is c by construction. The tolerances are
stated in standard deviations of the estimate (`containment_sd`, the delta method over the Jaccard
estimate's binomial variance), which grow with |A| / |B|.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from neardup_core.fingerprint.containment import (
    ShingleSketch,
    containment,
    containment_from_jaccard,
    containment_sd,
    exact_containment,
)
from neardup_core.fingerprint.features import token_features, tokens
from neardup_core.fingerprint.minhash import exact_jaccard, jaccard, minhash
from neardup_core.fingerprint.page import text_fingerprints
from neardup_core.settings import CoreSettings
from neardup_core.testing.containment_eval import BANDS, ThresholdRow, recommend_threshold, template_flag_share
from neardup_core.testing.containment_pairs import SAME_GROUP

ROWS = CoreSettings().bands * CoreSettings().rows  # 80: the signature scan makes


def _sets(b_size: int, share: float, own: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(A, B): B random, A = the first `share` of B plus `own` shingles of its own."""
    rng = np.random.default_rng(seed)
    b = np.unique(rng.integers(0, 2**63, size=b_size, dtype=np.uint64))
    a = np.concatenate([b[:round(share * len(b))], rng.integers(2**63, 2**64 - 1, size=own, dtype=np.uint64)])
    return a, b


def _sketch(hashes: np.ndarray, rows: int = ROWS) -> ShingleSketch:
    signature = minhash(hashes, rows)
    assert signature is not None
    return ShingleSketch(signature, len(np.unique(hashes)))


@pytest.mark.parametrize(("b_size", "share", "own"), [
    (100, 1.0, 50), (100, 0.5, 100), (1000, 0.9, 500), (1000, 0.6, 1000), (1000, 0.3, 2000),
    (5000, 0.8, 5000), (5000, 1.0, 20000), (300, 0.7, 3000),
])
def test_estimate_within_four_sd_of_exact(b_size: int, share: float, own: int) -> None:
    a, b = _sets(b_size, share, own, seed=b_size + own)
    exact = exact_containment(a, b)
    assert exact == pytest.approx(share, abs=0.01)
    sd = containment_sd(exact, len(a), len(b), ROWS)
    assert abs(containment(_sketch(a), _sketch(b)) - exact) <= 4 * sd + 0.01


@pytest.mark.parametrize(("share", "own", "sd_range"), [(1.0, 500, (0.03, 0.06)), (0.6, 1000, (0.06, 0.1)),
                                                        (1.0, 3000, (0.12, 0.18)), (0.5, 9000, (0.2, 0.4))])
def test_mean_error_over_draws_is_the_predicted_one(share: float, own: int,
                                                    sd_range: tuple[float, float]) -> None:
    """Over 40 draws the mean absolute error is at most the predicted sd (a normal error's mean absolute
    value is 0.8 sd), and the prediction grows with |A| / |B| (1.5, 1.6, 4, 9.5 here)."""
    a, b = _sets(1000, share, own, seed=0)
    sd = containment_sd(share, len(a), len(b), ROWS)
    assert sd_range[0] <= sd <= sd_range[1]
    errors = []
    for seed in range(40):
        a, b = _sets(1000, share, own, seed=seed)
        errors.append(containment(_sketch(a), _sketch(b)) - exact_containment(a, b))
    assert np.mean(np.abs(errors)) <= 1.1 * sd
    if share < 1.0:
        assert abs(np.mean(errors)) <= 0.5 * sd  # no large bias
    else:  # the clip at 1 cuts off the high half: a bias of about -0.4 sd, never an estimate above 1
        assert all(e <= 0 for e in errors)
        assert -0.6 * sd <= np.mean(errors) <= 0


def test_subset_is_contained_and_identical_sets_are_one() -> None:
    a, b = _sets(2000, 1.0, 1000, seed=3)
    assert containment(_sketch(a), _sketch(b)) >= 0.9
    assert containment(_sketch(b), _sketch(b)) == 1.0


def test_disjoint_sets_are_near_zero() -> None:
    rng = np.random.default_rng(5)
    for size_a, size_b in [(100, 100), (1000, 200), (200, 1000), (5000, 5000)]:
        a = rng.integers(0, 2**63, size=size_a, dtype=np.uint64)
        b = rng.integers(2**63, 2**64 - 1, size=size_b, dtype=np.uint64)
        assert exact_containment(a, b) == 0.0
        # chance agreements of 8-bit rows (1/256 each) leave a little after the correction
        assert containment(_sketch(a), _sketch(b)) <= 0.1 * max(1.0, size_a / size_b)


def test_the_intersection_estimate_is_symmetric_but_containment_is_not() -> None:
    """Both directions estimate the same |A ∩ B|: C(B in A) |B| = C(A in B) |A| (when neither is clipped).
    Containment itself is symmetric only for sets of one size: a small B wholly inside a large A is ~1
    in A, while A is ~|B|/|A| in B."""
    a, b = _sets(500, 0.8, 1600, seed=11)  # |A| = 400 + 1600 = 4 |B|
    sa, sb = _sketch(a), _sketch(b)
    b_in_a, a_in_b = containment(sa, sb), containment(sb, sa)
    assert 0 < b_in_a < 1
    assert b_in_a * sb.shingles == pytest.approx(a_in_b * sa.shingles)
    assert b_in_a == pytest.approx(0.8, abs=0.15)
    assert a_in_b == pytest.approx(0.8 * len(b) / len(a), abs=0.05)
    assert jaccard(sa.signature, sb.signature) == jaccard(sb.signature, sa.signature)
    same_size = _sets(800, 0.6, 320, seed=12)  # |A| = 480 + 320 = |B|
    sa, sb = _sketch(same_size[0]), _sketch(same_size[1])
    assert sa.shingles == sb.shingles
    assert containment(sa, sb) == containment(sb, sa)


def test_exact_jaccard_gives_exact_containment() -> None:
    """The formula is exact: only the Jaccard estimate is noisy."""
    for share, own in [(1.0, 0), (0.7, 300), (0.2, 5000), (0.0, 100)]:
        a, b = _sets(1000, share, own, seed=17)
        j = exact_jaccard(a, b)
        assert containment_from_jaccard(j, len(a), len(b)) == pytest.approx(exact_containment(a, b))


def test_edges() -> None:
    assert containment_from_jaccard(0.5, 10, 0) == 0.0
    assert containment_from_jaccard(1.0, 100, 10) == 1.0  # an inconsistent J is clipped
    assert exact_containment(np.zeros(0, np.uint64), np.zeros(0, np.uint64)) == 0.0
    duplicates = np.array([1, 1, 2, 3], dtype=np.uint64)
    assert exact_containment(np.array([1, 2], dtype=np.uint64), duplicates) == pytest.approx(2 / 3)


def test_text_sketch_is_the_fetch_signature_with_the_shingle_count() -> None:
    settings = CoreSettings()
    text = ("The committee met on Tuesday to discuss the budget for the coming year and agreed to "
            "postpone the vote on the new library until the auditors report in the spring.")
    sketch = text_fingerprints(text, settings, signed=True).sketch
    assert sketch is not None
    assert sketch.signature == text_fingerprints(text, settings).minhash
    assert sketch.shingles == len(token_features(tokens(text), settings.shingle_size))
    assert text_fingerprints("too short", settings, signed=True).sketch is None


def _row(t: float, margin_precision: float, template: tuple[int, int]) -> ThresholdRow:
    bands = {band: (0, 0) for band in BANDS}
    return ThresholdRow(t, bands, {SAME_GROUP: template}, 0.9, 0.9, margin_precision, 0.9)


def test_the_recommended_threshold_is_the_lowest_within_both_floors() -> None:
    rows = [_row(0.5, 0.992, (18, 1550)), _row(0.3, 0.995, (81, 1550)), _row(0.4, 0.993, (34, 1550)),
            _row(0.6, 0.98, (8, 1550))]
    chosen = recommend_threshold(rows)
    assert chosen is not None and chosen.threshold == 0.5  # 0.3 and 0.4 flag 5.2% and 2.2% of same-site pairs
    looser = recommend_threshold(rows, max_template_flags=0.03)
    assert looser is not None and looser.threshold == 0.4
    any_site = recommend_threshold(rows, min_precision=0.994, max_template_flags=1.0)
    assert any_site is not None and any_site.threshold == 0.3
    assert recommend_threshold(rows, min_precision=0.999) is None


def test_a_threshold_without_flags_or_same_site_pairs_is_not_recommended() -> None:
    assert recommend_threshold([_row(0.9, math.nan, (0, 10))]) is None
    assert recommend_threshold([_row(0.5, 0.995, (0, 0))]) is None
    assert template_flag_share(_row(0.5, 0.995, (3, 12))) == 0.25
