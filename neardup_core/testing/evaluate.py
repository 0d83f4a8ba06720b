"""Precision, recall and F1 of the near-duplicate test on labelled page pairs: for each k (SimHash),
and swept over k, J and bands x rows with MinHash (`sweep`): SimHash alone, MinHash alone (equal
digests or a shared band with a Jaccard estimate >= J) and both (the decision rule: either)."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from neardup_core.fingerprint.minhash import jaccard, shared_band
from neardup_core.fingerprint.simhash import hamming
from neardup_core.index.tables import BandDesign, choose_design
from neardup_core.ingest.decode import decode_body

METHODS = ("simhash", "minhash", "both")


@dataclass(frozen=True, slots=True)
class PairScore:
    """What the fingerprints say of one pair: equal digests, the SimHash distance if both have one,
    and both MinHash signatures (of the most rows any band design needs) if both have one."""

    duplicate: bool
    exact: bool
    distance: int | None
    signatures: tuple[bytes, bytes] | None = None

    def predicted(self, k: int) -> bool:
        return self.exact or (self.distance is not None and self.distance <= k)

    def band_match(self, bands: int, rows: int) -> tuple[bool, float]:
        """(whether the signatures cut to bands * rows rows share a band, their Jaccard estimate)."""
        if self.signatures is None:
            return False, 0.0
        n = bands * rows
        a, b = self.signatures[0][:n], self.signatures[1][:n]
        if len(a) < n or len(b) < n:
            raise ValueError(f"signatures of {len(a)} rows, the design needs {n}")
        return shared_band(a, b, bands, rows) is not None, jaccard(a, b)

    def predicted_by(self, method: str, k: int, lsh: BandDesign | None) -> bool:
        """The decision rule's verdict on the pair: `simhash` (digests or within k), `minhash`
        (digests or a shared band with an estimate >= J) or `both` (either)."""
        if self.exact or (method != "minhash" and self.distance is not None and self.distance <= k):
            return True
        if method == "simhash" or lsh is None:
            return False
        shared, estimate = self.band_match(lsh.bands, lsh.rows)
        return shared and estimate >= lsh.jaccard


class Rates:
    """Precision, recall and F1 of counts `tp`, `fp` and `fn`."""

    __slots__ = ()
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True, slots=True)
class KScore(Rates):
    k: int
    tp: int
    fp: int
    fn: int
    tn: int


@dataclass(frozen=True, slots=True)
class SweepScore(Rates):
    """The counts of one setting: a method, k (SimHash; None for MinHash alone), and the bands x rows
    and J (MinHash; None for SimHash alone)."""

    method: str
    k: int | None
    bands: int | None
    rows: int | None
    jaccard: float | None
    tp: int
    fp: int
    fn: int
    tn: int
    kind_recall: tuple[tuple[str, float], ...] = ()
    """Recall per kind of duplicate pair, when `sweep` was given the kinds."""

    @property
    def lsh(self) -> BandDesign | None:
        if self.bands is None or self.rows is None or self.jaccard is None:
            return None
        return BandDesign(self.bands, self.rows, self.jaccard)

    def tables(self, expected_pages: int) -> int:
        """Index tables of the setting at `expected_pages`: near tables (`choose_design`) + bands."""
        near = choose_design(self.k, expected_pages).table_count if self.k is not None else 0
        return near + (self.bands or 0)

    @property
    def label(self) -> str:
        parts = [f"k={self.k}"] if self.k is not None else []
        if self.bands is not None:
            parts.append(f"{self.bands}x{self.rows} J={self.jaccard:.2f}")
        return f"{self.method} " + ", ".join(parts)


def sweep(pairs: Iterable[PairScore], ks: Iterable[int], jaccards: Iterable[float],
          band_designs: Iterable[tuple[int, int]], kinds: Iterable[str] | None = None) -> list[SweepScore]:
    """Every setting of the three methods: SimHash alone per k; MinHash alone per bands x rows and J;
    both per k, bands x rows and J. Vectorised over the pairs; with `kinds` (one per pair), the recall
    of each kind of duplicate pair too."""
    pairs = list(pairs)
    kind_of = np.array(list(kinds) if kinds is not None else [""] * len(pairs))
    masks = {str(kind): (kind_of == kind) & np.array([p.duplicate for p in pairs], dtype=bool)
             for kind in sorted(set(kind_of.tolist())) if kinds is not None}
    masks = {kind: mask for kind, mask in masks.items() if mask.any()}
    ks, jaccards, band_designs = list(ks), list(jaccards), list(band_designs)
    truth = np.array([p.duplicate for p in pairs], dtype=bool)
    exact = np.array([p.exact for p in pairs], dtype=bool)
    dist = np.array([p.distance if p.distance is not None else 1_000 for p in pairs])

    def counts(method: str, k: int | None, design: tuple[int, int] | None, j: float | None,
               predicted: np.ndarray) -> SweepScore:
        tp = int(np.count_nonzero(predicted & truth))
        fp = int(np.count_nonzero(predicted & ~truth))
        fn = int(np.count_nonzero(~predicted & truth))
        per_kind = tuple((kind, float(np.count_nonzero(predicted & mask)) / float(np.count_nonzero(mask)))
                         for kind, mask in masks.items())
        return SweepScore(method, k, design[0] if design else None, design[1] if design else None, j,
                          tp, fp, fn, len(pairs) - tp - fp - fn, per_kind)

    out = [counts("simhash", k, None, None, exact | (dist <= k)) for k in ks]
    for design in band_designs:
        matches = [p.band_match(*design) for p in pairs]
        shared = np.array([m[0] for m in matches], dtype=bool)
        estimate = np.array([m[1] for m in matches])
        for j in jaccards:
            band = shared & (estimate >= j - 1e-12)
            out.append(counts("minhash", None, design, j, exact | band))
            out += [counts("both", k, design, j, exact | (dist <= k) | band) for k in ks]
    return out


def recommend(scores: list[SweepScore], *, min_precision: float = 0.998, expected_pages: int = 1_000_000,
              method: str = "both") -> SweepScore:
    """The setting of `method` with the best recall among those with precision >= min_precision;
    ties: the fewest index tables at `expected_pages`, then the highest J, then the smallest k.
    The best F1 when none reaches the precision."""
    candidates = [s for s in scores if s.method == method]
    ok = [s for s in candidates if s.precision >= min_precision]

    def cheap(s: SweepScore) -> tuple[Any, ...]:
        return (-s.tables(expected_pages), s.jaccard or 0.0, -(s.k or 0))

    if ok:
        return max(ok, key=lambda s: (s.recall, *cheap(s)))
    return max(candidates, key=lambda s: (s.f1, *cheap(s)))


def meets_goals(s: SweepScore, *, min_precision: float, min_recall: float, min_kind_recall: float,
                kind_filter: Callable[[str], bool] = lambda kind: True) -> bool:
    """Whether a setting reaches the precision and recall goals and every kind (of those `kind_filter`
    keeps) reaches `min_kind_recall`."""
    return s.precision >= min_precision and s.recall >= min_recall and \
        all(r >= min_kind_recall for kind, r in s.kind_recall if kind_filter(kind))


def recommend_by_goals(scores: list[SweepScore], *, k: int | None, min_precision: float, min_recall: float,
                       min_kind_recall: float, expected_pages: int = 1_000_000,
                       kind_filter: Callable[[str], bool] = lambda kind: True) -> SweepScore | None:
    """Among the settings of both methods (at SimHash distance `k`, any k when None) that reach the
    goals (`meets_goals`): the fewest false positives, then the best recall, then the fewest index
    tables, then the highest J. None when no setting reaches them."""
    ok = [s for s in scores if s.method == "both" and (k is None or s.k == k)
          and meets_goals(s, min_precision=min_precision, min_recall=min_recall, min_kind_recall=min_kind_recall,
                          kind_filter=kind_filter)]
    if not ok:
        return None
    return min(ok, key=lambda s: (s.fp, -s.recall, s.tables(expected_pages), -(s.jaccard or 0.0)))


def score_per_k(pairs: Iterable[PairScore], max_k: int = 12) -> list[KScore]:
    pairs = list(pairs)
    out = []
    for k in range(max_k + 1):
        tp = sum(p.duplicate and p.predicted(k) for p in pairs)
        fp = sum(not p.duplicate and p.predicted(k) for p in pairs)
        fn = sum(p.duplicate and not p.predicted(k) for p in pairs)
        out.append(KScore(k, tp, fp, fn, len(pairs) - tp - fp - fn))
    return out


def recommend_k(scores: list[KScore], min_precision: float = 0.99) -> KScore:
    """The k with the best recall among those with precision >= min_precision (ties: the smaller
    k); the best F1 when none reaches it."""
    ok = [s for s in scores if s.precision >= min_precision]
    if ok:
        return max(ok, key=lambda s: (s.recall, -s.k))
    return max(scores, key=lambda s: (s.f1, -s.k))


def load_page(ref: Any, base: Path) -> tuple[str, str]:
    """("html" | "text", content) of a pair member: a path (relative to the pairs file), or an
    object with `html` or `text`."""
    if isinstance(ref, dict):
        if "html" in ref:
            return "html", ref["html"]
        if "text" in ref:
            return "text", ref["text"]
        raise ValueError(f"a pair member needs 'html' or 'text': {list(ref)}")
    path = Path(ref)
    if not path.is_absolute():
        path = base / path
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return "html", decode_body(raw).text


def read_pairs(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not JSON ({exc})") from None
            if not isinstance(row, dict) or not {"a", "b", "duplicate"} <= row.keys():
                raise ValueError(f"{path}:{n}: a labelled pair needs 'a', 'b' and 'duplicate'")
            out.append(row)
    return out


def pair_score(duplicate: bool, a: tuple[Any, ...], b: tuple[Any, ...]) -> PairScore:
    """From (text digest, SimHash) or (text digest, SimHash, MinHash signature) of each side."""
    exact = a[0] is not None and a[0] == b[0]
    distance = hamming(a[1], b[1]) if a[1] is not None and b[1] is not None else None
    sig_a, sig_b = (a[2] if len(a) > 2 else None), (b[2] if len(b) > 2 else None)
    signatures = (sig_a, sig_b) if sig_a is not None and sig_b is not None else None
    return PairScore(duplicate, exact, distance, signatures)
