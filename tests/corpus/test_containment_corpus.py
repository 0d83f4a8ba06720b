"""The containment estimate on labelled pairs from the real-web corpus (`NEARDUP_CORPUS`, docs/corpus.md).

A seeded sample (60 pages, 40 same-group page pairs, 60 unrelated pairs: a few seconds) of
`neardup_core.testing.containment_pairs`, judged by `containment_eval`; `bench/bench_containment.py`
measures the whole corpus (bench/results/containment.md). The floors are this sample's measured values
rounded down, so a change that makes the estimate or the pairs worse fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from neardup_core.fingerprint.containment import DEFAULT_CONTAINMENT, containment_sd
from neardup_core.settings import CoreSettings
from neardup_core.testing.containment_eval import (
    MARGIN,
    MAX_TEMPLATE_FLAGS,
    MIN_FLAG_PRECISION,
    THRESHOLDS,
    ScoredPair,
    error_rows,
    score,
    threshold_row,
)
from neardup_core.testing.containment_pairs import (
    EMBEDDED,
    SAME_GROUP,
    UNRELATED,
    ContainmentSet,
    build_containment_pairs,
)
from tests.corpus.corpus import CORPUS, NEEDS_CORPUS
from tests.functional.test_tune_cost import run, text_pairs

pytestmark = NEEDS_CORPUS

SAMPLE, SAME_GROUP_PAIRS, UNRELATED_PAIRS = 60, 40, 60


@pytest.fixture(scope="module")
def made() -> ContainmentSet:
    return build_containment_pairs(CORPUS, sample=SAMPLE, same_group=SAME_GROUP_PAIRS, unrelated=UNRELATED_PAIRS)


@pytest.fixture(scope="module")
def scored(made: ContainmentSet) -> list[ScoredPair]:
    return score(made.pairs)


def test_the_pairs_are_what_they_say(made: ContainmentSet) -> None:
    """Every article is embedded once per band; the exact containment of an embedded run of f of B's
    words is at least about f (more when A's own text shares common shingles with B); unrelated pages of
    other sites share little."""
    assert made.articles >= 50
    assert made.count(EMBEDDED) >= 4 * made.articles - 4
    assert made.count(SAME_GROUP) >= 60
    assert made.count(UNRELATED) == UNRELATED_PAIRS
    for pair in made.pairs:
        if pair.kind == EMBEDDED:
            assert pair.fraction is not None
            assert pair.exact >= pair.fraction - 0.05, pair.base
        elif pair.kind == UNRELATED:
            assert pair.exact < 0.3, (pair.base, pair.other)


def test_the_default_threshold_meets_its_bars(scored: list[ScoredPair]) -> None:
    row = threshold_row(scored, DEFAULT_CONTAINMENT)
    assert row.margin_precision >= 0.99  # a flag at exact < t - 0.1: at most 1 in 100
    assert row.margin_recall >= 0.95  # pairs at exact >= t + 0.1 found
    assert row.precision >= 0.94
    assert row.recall >= 0.94
    assert row.flagged_by_kind[UNRELATED][0] == 0
    flagged, pairs = row.flagged_by_band[(0.0, 0.3)]
    assert flagged == 0
    flagged, pairs = row.flagged_by_band[(0.9, 1.0)]
    assert flagged == pairs


def test_flagged_negatives_are_shared_text_or_a_predicted_error(scored: list[ScoredPair]) -> None:
    """A same-template or unrelated pair flagged at the default is either one whose extracted main texts do
    share that much (kept sidebars, a shared notice: exact containment >= t - 0.1), or an estimate error
    within 4 predicted standard deviations (a small B beside a large A: on the whole corpus, 6 such pairs
    of 2,550 at |A| / |B| of 3.3 to 38, bench/results/containment.md)."""
    rows = CoreSettings().bands * CoreSettings().rows
    for s in scored:
        p = s.pair
        if p.kind in (SAME_GROUP, UNRELATED) and s.estimate >= DEFAULT_CONTAINMENT \
                and p.exact < DEFAULT_CONTAINMENT - MARGIN:
            assert s.error <= 4 * containment_sd(p.exact, p.shingles_a, p.shingles_b, rows), (p.base, p.other)
            assert p.size_ratio >= 3, (p.base, p.other)


def test_the_error_grows_with_the_size_ratio(scored: list[ScoredPair]) -> None:
    """The mean absolute error of the estimate on embedded pairs stays within its prediction per size-ratio
    bucket, and is small where B is at least half of A."""
    rows = error_rows(scored, kinds=frozenset({EMBEDDED}))
    assert rows[0].pairs >= 50
    assert rows[0].mean_abs <= 0.06
    for row in rows:
        if row.pairs >= 10:
            assert row.mean_abs <= row.predicted_sd, row
            assert abs(row.bias) <= 0.1, row


def test_tune_prints_reports_and_plots_the_containment_threshold(tmp_path: Path) -> None:
    """`neardup tune --containment-corpus` on the whole corpus: the threshold table, the recommendation
    (the lowest threshold that meets both floors on the pairs it printed) with the configured threshold's
    figures beside it, and its plot, beside the duplicate tables."""
    pairs = tmp_path / "pairs.jsonl"
    text_pairs(pairs)
    report, plot = tmp_path / "tune.md", tmp_path / "tune.png"
    result = run(["--pairs", str(pairs), "--containment-corpus", str(CORPUS), "--report", str(report), "--plot",
                  str(plot), "--max-k", "4"], tmp_path)
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "containment recommended: t = " in out and "set NEARDUP_CONTAINMENT=" in out
    assert f"NEARDUP_CONTAINMENT {DEFAULT_CONTAINMENT:.2f} (default {DEFAULT_CONTAINMENT}): precision" in out
    chosen = float(out.split("containment recommended: t = ")[1].split()[0])
    text = report.read_text()
    section = text[text.index("### partial copies: containment per threshold"):]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| 0.")]
    assert [float(r[0]) for r in rows] == sorted({*THRESHOLDS, DEFAULT_CONTAINMENT})

    def meets(row: list[str]) -> bool:
        flagged, same_site = (int(x) for x in row[6].split("/"))
        return float(row[-2]) >= MIN_FLAG_PRECISION and flagged <= MAX_TEMPLATE_FLAGS * same_site

    assert [float(r[0]) for r in rows if meets(r)][0] == chosen
    assert plot.with_name("tune-containment.png").stat().st_size > 10_000
