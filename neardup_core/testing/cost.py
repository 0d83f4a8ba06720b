"""The expected cost of a setting on a crawl: lost pages (false merges) against duplicate index entries
(missed duplicates), per million crawled pages, from its counts on labelled pairs (issue 26).

The model. A crawl of N pages holds a share d of duplicates (the duplicate rate: pages that copy or
nearly copy an earlier page) and N (1 - d) pages that copy none. On the labelled pairs a setting has a
recall R = TP / (TP + FN) over the duplicate pairs and a false-positive rate F = FP / (FP + TN) over the
distinct pairs. Then, per N crawled pages:

* duplicate index entries = (1 - R) * d * N: each duplicate the setting misses is indexed as a page of
  its own (one entry per missed duplicate);
* lost pages = F * (1 - d) * N: each page that copies nothing is wrongly merged into another with
  probability F, and a wrong merge loses that page from the index (one lost page per false merge);
* cost = cost_lost_page * lost pages + cost_duplicate_entry * duplicate entries.

The assumptions, plainly: the labelled duplicate pairs stand for the crawl's duplicates (their mix of
kinds: mirrors, changed dates, templates, edits, ...), and the labelled distinct pairs stand for the
closest candidate a different page of the crawl meets (same-site, same-template articles), so their
false-positive rate is the chance that a new page is merged by mistake. Precision on the labelled
pairs is not used: it depends on the set's ratio of duplicates to distinct pairs, which the duplicate
rate replaces. With n distinct pairs and no false positive, F = 0 is only known to be under about
3 / n (the rule of three, 95 %): 783 distinct pairs cannot tell 0 lost pages from a few thousand per
million, so a setting with no false positive is "none seen", not "none". And a page meets one
closest candidate in the model, while in a crawl it is compared with every candidate the index returns:
a loose k whose false merges come from chance SimHash closeness (not from shared templates) merges more
as the index grows, which the labelled pairs cannot show.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from neardup_core.testing.evaluate import SweepScore

PAGES = 1_000_000
"""The figures are per million crawled pages."""

DUPLICATE_VERDICTS = ("exact_duplicate", "near_duplicate")


class CostError(ValueError):
    """An invalid cost model setting, with its name and why."""


@dataclass(frozen=True, slots=True)
class CostModel:
    """What each mistake costs the operator and how many duplicates their crawl holds."""

    cost_lost_page: float
    cost_duplicate_entry: float
    duplicate_rate: float
    pages: int = PAGES

    def __post_init__(self) -> None:
        for name, value in (("cost_lost_page", self.cost_lost_page),
                            ("cost_duplicate_entry", self.cost_duplicate_entry)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                    or value < 0:
                raise CostError(f"{name} must be a finite number >= 0, not {value!r}")
        if self.cost_lost_page == 0 and self.cost_duplicate_entry == 0:
            raise CostError("cost_lost_page and cost_duplicate_entry cannot both be 0: every setting would cost 0")
        rate = self.duplicate_rate
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
            raise CostError(f"duplicate_rate must be a number from 0 to 1, not {rate!r}")
        if isinstance(self.pages, bool) or not isinstance(self.pages, int) or self.pages < 1:
            raise CostError(f"pages must be an integer >= 1, not {self.pages!r}")


@dataclass(frozen=True, slots=True)
class SettingCost:
    """One setting's expected mistakes and cost per `CostModel.pages` crawled pages."""

    score: SweepScore
    false_positive_rate: float
    lost_pages: float
    duplicate_entries: float
    cost: float

    @property
    def label(self) -> str:
        return self.score.label


def setting_costs(scores: Iterable[SweepScore], model: CostModel) -> list[SettingCost]:
    """The expected lost pages, duplicate entries and cost of each setting (the model above)."""
    scores = list(scores)
    if not scores:
        return []
    counts = np.array([(s.tp, s.fp, s.fn, s.tn) for s in scores], dtype=float)
    tp, fp, fn, tn = counts.T
    if not (tp + fn).all() or not (fp + tn).all():
        raise CostError("the labelled pairs need at least one duplicate and one distinct pair")
    fpr = fp / (fp + tn)
    missed = fn / (tp + fn)
    lost = fpr * (1.0 - model.duplicate_rate) * model.pages
    entries = missed * model.duplicate_rate * model.pages
    cost = model.cost_lost_page * lost + model.cost_duplicate_entry * entries
    return [SettingCost(s, float(f), float(lo), float(e), float(c))
            for s, f, lo, e, c in zip(scores, fpr, lost, entries, cost, strict=True)]


def cheapest(scores: Iterable[SweepScore], model: CostModel, *, min_precision: float = 0.0,
             expected_pages: int = 1_000_000, method: str | None = None) -> SettingCost:
    """The setting of least expected cost among those (of `method`, any when None) with precision >=
    `min_precision` on the labelled pairs; ties: the fewest index tables at `expected_pages`, the
    highest J, the smallest k. Raises CostError when no setting reaches the precision."""
    ok = [c for c in setting_costs(scores, model)
          if (method is None or c.score.method == method) and c.score.precision >= min_precision]
    if not ok:
        raise CostError(f"no setting reaches precision >= {min_precision} on the labelled pairs")
    return min(ok, key=lambda c: (round(c.cost, 6), c.score.tables(expected_pages), -(c.score.jaccard or 0.0),
                                  c.score.k or 0))


def duplicate_rate_of(verdicts: Mapping[str, int]) -> float:
    """The share of duplicate verdicts (exact or near) among the decided URLs (`skipped` ones are not
    decided); raises CostError when there is none."""
    decided = sum(n for verdict, n in verdicts.items() if verdict != "skipped")
    if decided == 0:
        raise CostError("the sample has no decided page: no duplicate rate can be estimated from it")
    return sum(verdicts.get(v, 0) for v in DUPLICATE_VERDICTS) / decided
