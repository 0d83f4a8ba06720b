"""Precision, recall and F1 of the near-duplicate test for each k, on labelled page pairs."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from neardup_core.fingerprint.simhash import hamming
from neardup_core.ingest.decode import decode_body


@dataclass(frozen=True, slots=True)
class PairScore:
    """What the fingerprints say of one pair: equal digests, and the SimHash distance if both have one."""

    duplicate: bool
    exact: bool
    distance: int | None

    def predicted(self, k: int) -> bool:
        return self.exact or (self.distance is not None and self.distance <= k)


@dataclass(frozen=True, slots=True)
class KScore:
    k: int
    tp: int
    fp: int
    fn: int
    tn: int

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
            row = orjson.loads(line)
            if "duplicate" not in row:
                raise ValueError(f"{path}:{n}: a labelled pair needs 'a', 'b' and 'duplicate'")
            out.append(row)
    return out


def pair_score(duplicate: bool, a: tuple[str | None, int | None], b: tuple[str | None, int | None]) -> PairScore:
    """From (text digest, SimHash) of each side."""
    exact = a[0] is not None and a[0] == b[0]
    distance = hamming(a[1], b[1]) if a[1] is not None and b[1] is not None else None
    return PairScore(duplicate, exact, distance)
