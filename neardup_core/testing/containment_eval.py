"""How well the containment estimate tells partial copies, on labelled pairs (`containment_pairs`).

Each pair gets the estimate of B in A from the two texts' sketches (`text_fingerprints(...).sketch`:
the signature `neardup scan` makes and the distinct shingle count), and is judged against its exact containment.
"containment >= t" is the test a future `NEARDUP_CONTAINMENT = t` would apply:

- per band of exact containment, the share of pairs the test flags (recall in the bands at or above
  t, false alarms below);
- precision and recall against exact containment >= t (strict: a pair at exact 0.49 flagged at
  t = 0.5 is a false positive), and with a margin (a flag is wrong only when the exact containment
  is below t - margin, a miss counts only at exact >= t + margin), since an estimate with a standard
  deviation of 0.07 or more cannot tell 0.49 from 0.51;
- the estimate's error by size ratio |A| / |B|, where the module docstring of
  `neardup_core.fingerprint.containment` predicts it to grow.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from neardup_core.dedup.rule import containment_estimate, partial_match
from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.containment import ShingleSketch, containment, containment_sd, text_minima
from neardup_core.fingerprint.minhash import minhash, shared_band
from neardup_core.fingerprint.page import _tokens_digest_and_features, text_fingerprints
from neardup_core.fingerprint.simhash import simhash64
from neardup_core.settings import DEFAULT_SETTINGS, CoreSettings
from neardup_core.testing.containment_pairs import EMBEDDED, SAME_GROUP, UNRELATED, ContainmentPair

BANDS = ((0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.0))
"""Bands of exact containment; the last includes 1.0."""
RATIO_BUCKETS = ((1.0, 2.0), (2.0, 4.0), (4.0, 8.0), (8.0, math.inf))
"""Buckets of |A| / |B| for the error table (a ratio under 1 goes to the first)."""
MARGIN = 0.1
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""The thresholds `neardup tune` and the bench score."""
MIN_FLAG_PRECISION = 0.99
"""A recommended threshold's flags must hold at least t - MARGIN of B this often (precision ±MARGIN)."""
MAX_TEMPLATE_FLAGS = 0.02
"""... and flag at most this share of the pairs of different pages of one site (same-group pairs): a
templated site must not read as copying itself."""


@dataclass(frozen=True, slots=True)
class ScoredPair:
    """A labelled pair and its estimated containment of B in A."""

    pair: ContainmentPair
    estimate: float
    found: bool | None = None
    """With `score_index`: whether the partial-copy rule names B in A at the settings' threshold."""

    @property
    def error(self) -> float:
        return self.estimate - self.pair.exact


def score(pairs: Iterable[ContainmentPair], settings: CoreSettings = DEFAULT_SETTINGS) -> list[ScoredPair]:
    """Each pair with its estimate; a text is sketched once (the same B recurs across bands)."""
    cache: dict[str, ShingleSketch | None] = {}

    def sketch(text: str) -> ShingleSketch | None:
        if text not in cache:
            cache[text] = text_fingerprints(text, settings, signed=True).sketch
        return cache[text]

    out = []
    for pair in pairs:
        a, b = sketch(pair.a), sketch(pair.b)
        if a is None or b is None:  # exact_pair left these out already; kept for other pair sources
            continue
        out.append(ScoredPair(pair, containment(a, b)))
    return out


def score_index(pairs: Iterable[ContainmentPair], settings: CoreSettings = DEFAULT_SETTINGS) -> list[ScoredPair]:
    """Each pair with the estimate the containment index confirms with (`rule.containment_estimate`: the
    signature's), and `found`: whether the rule would name B in A at
    the settings' threshold (`rule.partial_match`: a shared containment band, size classes, not a
    duplicate, the estimate). What `neardup tune` reports for `NEARDUP_CONTAINMENT`."""
    cache: dict[str, PageVersion | None] = {}

    def page(text: str) -> PageVersion | None:
        if text not in cache:
            toks, digest, features = _tokens_digest_and_features(text, settings)
            if features is None:
                cache[text] = None
            else:
                cache[text] = PageVersion(f"https://pair.invalid/{digest[:16]}", 0.0, 0, digest, digest,
                                          simhash64(features.hashes, features.weights),
                                          minhash(features.hashes, settings.bands * settings.rows),
                                          len(features), text_minima(toks))
        return cache[text]

    out = []
    for pair in pairs:
        a, b = page(pair.a), page(pair.b)
        if a is None or b is None or a.text_sha256 == b.text_sha256:
            continue
        found = partial_match(a, b, settings.design) is not None
        out.append(ScoredPair(pair, containment_estimate(a, b), found))
    return out


def ratio_bucket(ratio: float) -> tuple[float, float]:
    """The `RATIO_BUCKETS` bucket a size ratio falls in (a ratio under 1 in the first)."""
    for lo, hi in RATIO_BUCKETS:
        if ratio < hi:
            return lo, hi
    return RATIO_BUCKETS[-1]


def band_of(c: float) -> tuple[float, float]:
    """The `BANDS` band an exact containment falls in."""
    for lo, hi in BANDS:
        if c < hi:
            return lo, hi
    return BANDS[-1]


@dataclass(frozen=True, slots=True)
class ThresholdRow:
    """The test "estimate >= t" over a pair set."""

    threshold: float
    flagged_by_band: dict[tuple[float, float], tuple[int, int]]
    """Per band of exact containment: (pairs flagged, pairs)."""
    flagged_by_kind: dict[str, tuple[int, int]]
    precision: float
    recall: float
    margin_precision: float
    margin_recall: float


def _ratio(num: int, den: int) -> float:
    return num / den if den else math.nan


def threshold_row(scored: Sequence[ScoredPair], t: float, margin: float = MARGIN) -> ThresholdRow:
    by_band: dict[tuple[float, float], tuple[int, int]] = {band: (0, 0) for band in BANDS}
    by_kind: dict[str, tuple[int, int]] = {}
    tp = fp = fn = mtp = mfp = rtp = rfn = 0
    for s in scored:
        flagged = s.estimate >= t
        exact = s.pair.exact
        band = band_of(exact)
        f, n = by_band[band]
        by_band[band] = (f + flagged, n + 1)
        f, n = by_kind.get(s.pair.kind, (0, 0))
        by_kind[s.pair.kind] = (f + flagged, n + 1)
        tp += flagged and exact >= t
        fp += flagged and exact < t
        fn += not flagged and exact >= t
        mtp += flagged and exact >= t - margin
        mfp += flagged and exact < t - margin
        rtp += flagged and exact >= t + margin
        rfn += not flagged and exact >= t + margin
    return ThresholdRow(t, by_band, by_kind, _ratio(tp, tp + fp), _ratio(tp, tp + fn), _ratio(mtp, mtp + mfp),
                        _ratio(rtp, rtp + rfn))


@dataclass(frozen=True, slots=True)
class ErrorRow:
    """The estimate's error (estimate - exact) over the pairs whose |A| / |B| is in one bucket."""

    bucket: tuple[float, float]
    pairs: int
    bias: float
    mean_abs: float
    p90_abs: float
    predicted_sd: float
    """The mean of `containment_sd` at each pair's exact containment and sizes."""


def error_rows(scored: Sequence[ScoredPair], settings: CoreSettings = DEFAULT_SETTINGS,
               kinds: frozenset[str] | None = None) -> list[ErrorRow]:
    """The error by size-ratio bucket, over the pairs of `kinds` (all when None)."""
    rows = settings.bands * settings.rows
    out = []
    for lo, hi in RATIO_BUCKETS:
        members = [s for s in scored if (kinds is None or s.pair.kind in kinds)
                   and ratio_bucket(s.pair.size_ratio) == (lo, hi)]
        if not members:
            out.append(ErrorRow((lo, hi), 0, math.nan, math.nan, math.nan, math.nan))
            continue
        errors = np.array([s.error for s in members])
        sds = [containment_sd(s.pair.exact, s.pair.shingles_a, s.pair.shingles_b, rows) for s in members]
        out.append(ErrorRow((lo, hi), len(members), float(errors.mean()), float(np.abs(errors).mean()),
                            float(np.quantile(np.abs(errors), 0.9)), float(np.mean(sds))))
    return out


@dataclass(frozen=True, slots=True)
class BandRow:
    """How many partial copies (exact containment >= a threshold) of one size-ratio bucket share an
    LSH band with their original under a band design: what today's band tables would offer a
    containment check as candidates."""

    bucket: tuple[float, float]
    pairs: int
    sharing: int


def band_rows(scored: Sequence[ScoredPair], threshold: float, settings: CoreSettings = DEFAULT_SETTINGS
              ) -> list[BandRow]:
    """Per size-ratio bucket, the embedded pairs at exact containment >= `threshold` and how many of
    them share one of the settings' bands (`settings.bands` bands of `settings.rows` rows)."""
    cache: dict[str, ShingleSketch | None] = {}

    def signature(text: str) -> bytes | None:
        if text not in cache:
            cache[text] = text_fingerprints(text, settings, signed=True).sketch
        sketch = cache[text]
        return None if sketch is None else sketch.signature

    out = []
    members = [s for s in scored if s.pair.kind == EMBEDDED and s.pair.exact >= threshold]
    for lo, hi in RATIO_BUCKETS:
        pairs = sharing = 0
        for s in members:
            if ratio_bucket(s.pair.size_ratio) == (lo, hi):
                a, b = signature(s.pair.a), signature(s.pair.b)
                pairs += 1
                sharing += a is not None and b is not None and \
                    shared_band(a, b, settings.bands, settings.rows) is not None
        out.append(BandRow((lo, hi), pairs, sharing))
    return out


def template_flag_share(row: ThresholdRow) -> float:
    """The share of same-group (different pages of one template group) pairs a threshold flags."""
    flagged, pairs = row.flagged_by_kind.get(SAME_GROUP, (0, 0))
    return _ratio(flagged, pairs)


def recommend_threshold(rows: Sequence[ThresholdRow], min_precision: float = MIN_FLAG_PRECISION,
                        max_template_flags: float = MAX_TEMPLATE_FLAGS) -> ThresholdRow | None:
    """The lowest threshold (the most partial copies found) whose flags hold at least t - MARGIN of B
    `min_precision` of the time and that flags at most `max_template_flags` of the same-group pairs; None
    when no threshold does. A threshold that cannot be measured (no flags, no same-group pairs) is not
    recommended."""
    def fits(row: ThresholdRow) -> bool:
        share = template_flag_share(row)
        return (not math.isnan(row.margin_precision) and row.margin_precision >= min_precision
                and not math.isnan(share) and share <= max_template_flags)

    return next((row for row in sorted(rows, key=lambda r: r.threshold) if fits(row)), None)


def _cell(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def threshold_table(rows: Sequence[ThresholdRow]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the per-threshold table the bench and `neardup tune` print: pairs flagged per
    band of exact containment and per negative kind, precision and recall strict and with MARGIN."""
    header = ["t", *(f"exact {lo:.1f}-{hi:.1f}" for lo, hi in BANDS), "same-group", "unrelated",
              "precision", "recall", f"precision ±{MARGIN}", f"recall ±{MARGIN}"]
    out = []
    for row in rows:
        cells = [f"{row.threshold:.2f}"]
        cells += [f"{f}/{n}" for f, n in (row.flagged_by_band[band] for band in BANDS)]
        cells += [f"{f}/{n}" for f, n in (row.flagged_by_kind.get(kind, (0, 0)) for kind in (SAME_GROUP, UNRELATED))]
        cells += [_cell(row.precision), _cell(row.recall), _cell(row.margin_precision), _cell(row.margin_recall)]
        out.append(cells)
    return header, out
