"""`neardup tune` with costs on the corpus's curated pairs (`PAIRS.jsonl`, real pages): the default's
figures are those of the pairs it is known to miss, and the cheapest setting at 100:1 merges none of
the curated distinct pairs. docs/EVALUATION.md reports the whole labelled set at 1:1 and 100:1."""

from __future__ import annotations

import pytest

from neardup_core.testing.cost import CostModel
from neardup_core.testing.labelled import curated_rows, write_rows
from streams.cli.tune import TuneResult, run_tune
from streams.settings import Settings
from tests.corpus.corpus import CORPUS, NEEDS_CORPUS
from tests.corpus.test_corpus_pairs import CURATED_KNOWN

pytestmark = NEEDS_CORPUS

RATE = 0.3


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[float, tuple[TuneResult, str]]:
    """(the result, the Markdown report) at 100:1 and 1:1 lost page against duplicate entry."""
    tmp = tmp_path_factory.mktemp("tune")
    pairs = tmp / "curated.jsonl"
    write_rows(curated_rows(CORPUS), pairs)
    out = {}
    for lost in (100.0, 1.0):
        report = tmp / f"tune-{lost:g}.md"
        result = run_tune(pairs, plot=None, max_k=12, settings=Settings(), report=report,
                          cost=CostModel(lost, 1.0, RATE))
        out[lost] = (result, report.read_text())
    return out


def test_the_defaults_figures_are_its_known_misses(runs: dict[float, tuple[TuneResult, str]]) -> None:
    result, report = runs[100.0]
    assert result.cost is not None
    default = result.cost.default
    assert default.label == "both k=3, 20x4 J=0.75"
    # the curated duplicates it misses are the two same-URL recaptures of CURATED_KNOWN, and it merges none
    assert (default.score.fn, default.score.fp) == (len(CURATED_KNOWN), 0)
    duplicates = default.score.tp + default.score.fn
    assert default.duplicate_entries == pytest.approx(len(CURATED_KNOWN) / duplicates * RATE * 1_000_000)
    assert default.lost_pages == 0
    assert "| default: both k=3, 20x4 J=0.75 |" in report


def test_the_cheapest_at_100_to_1_merges_no_curated_distinct_pair(
        runs: dict[float, tuple[TuneResult, str]]) -> None:
    strict, even = runs[100.0][0].cost, runs[1.0][0].cost
    assert strict is not None and even is not None
    assert strict.recommended.score.fp == 0
    assert strict.recommended.cost <= strict.default.cost
    # pricing lost pages 100 times higher never buys more of them
    assert strict.recommended.lost_pages <= even.recommended.lost_pages
    assert strict.recommended.duplicate_entries >= even.recommended.duplicate_entries
