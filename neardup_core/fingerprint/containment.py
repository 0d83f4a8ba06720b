"""Containment of one page's main text in another's, estimated from MinHash signatures and shingle counts.

Containment of B in A is ``|A ∩ B| / |B|`` over the distinct shingles (the `features.token_features`
hashes the signature is made of): 1 when all of B's text is in A (a blog post that copies an article
and adds commentary, a digest embedding it), whatever else A holds. It is not symmetric: a small B
inside a large A has containment 1 in A, A has containment ``|B| / |A|`` in B.

The signature gives the Jaccard estimate ``J`` (`minhash.jaccard`, b-bit corrected); with the distinct
shingle counts ``|A|`` and ``|B|`` the intersection follows from ``|A ∪ B| = |A| + |B| - |A ∩ B|``:
``|A ∩ B| = J (|A| + |B|) / (1 + J)``, and the containment is that over ``|B|``, clipped to [0, 1].

Accuracy. ``J`` of P rows has a standard deviation of about ``sqrt(J (1 - J) / P)`` (plus the b-bit
chance agreements, ``2**-b`` per row, which the correction removes on average but not their noise).
The containment multiplies ``J``'s error by ``dC/dJ = (|A| + |B|) / (|B| (1 + J)**2)``, which grows
with the size ratio ``r = |A| / |B|``: for B wholly inside A, ``J = 1 / r`` and the standard deviation
of the estimate is about ``(1 + r) / (1 + 1/r)**2 * sqrt((1/r) (1 - 1/r) / P)`` (`containment_sd`).
With the default 80 rows of 8 bits that is 0.07 at r = 2, 0.15 at r = 4 and 0.30 at r = 10: a small
page inside a large one gets an estimate that can be off by a third either way, while below r ≈ 2 it
is good to about ±0.1. The clip at 1 biases full containment low (about -0.4 sd: the high half of
the error is cut off). Measured on the whole corpus's labelled pairs (2,836 articles embedded at 30
to 95% into other articles' paragraphs, `neardup_core.testing.containment_pairs`;
bench/results/containment.md):
mean absolute error 0.047 at r < 2, 0.089 at 2-4, 0.127 at 4-8 and 0.157 at r >= 8 (90th
percentiles 0.10, 0.19, 0.26, 0.35), at or below the prediction. Every negative pair estimated at
0.5 or more with an exact containment under 0.4 (6 of 2,550) had r >= 3.3. The estimate is
therefore a check for candidates of moderate r, not a finder: a candidate index must not rest on it
alone for large r (datasketch's LSH Ensemble partitions by set size for the same reason).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from neardup_core.fingerprint.features import token_features
from neardup_core.fingerprint.minhash import DEFAULT_BITS, jaccard

DEFAULT_CONTAINMENT = 0.5
"""The containment estimate at or above which a page would be called a partial copy of another: the
default for a future `NEARDUP_CONTAINMENT`, chosen on the labelled corpus pairs
(bench/results/containment.md). "Contains to a large degree" reads as "holds at least half of B"; at
0.5 a flag is wrong by more than 0.1 for under 1% of flags and pairs at 0.6 or more are found 97% of
the time, while 0.3 and 0.4 flag 4.5 and 1.9 times as many same-template page pairs, and would ask a
candidate index for Jaccard similarities of 0.035 and 0.047 (containment t in an A 8 times larger), at the
background of unrelated main texts (Jaccard 99th percentile 0.026 over 1,000 unrelated corpus pairs
at shingle size 2); 0.5 asks for 0.059."""


@dataclass(frozen=True, slots=True)
class ShingleSketch:
    """What a containment estimate needs of one main text: its MinHash signature and its number of
    distinct shingles (the set size the signature does not tell)."""

    signature: bytes
    shingles: int


def containment_from_jaccard(j: float, shingles_a: int, shingles_b: int) -> float:
    """Containment of B in A given their Jaccard similarity (estimated or exact) and distinct shingle
    counts: ``J (|A| + |B|) / ((1 + J) |B|)``, clipped to [0, 1]; 0 when B is empty."""
    if shingles_b <= 0:
        return 0.0
    intersection = j * (shingles_a + shingles_b) / (1.0 + j)
    return min(1.0, max(0.0, intersection / shingles_b))


def containment(a: ShingleSketch, b: ShingleSketch, bits: int = DEFAULT_BITS) -> float:
    """The estimated containment of B's shingles in A's (how much of B's main text A holds)."""
    return containment_from_jaccard(jaccard(a.signature, b.signature, bits), a.shingles, b.shingles)


def containment_sd(c: float, shingles_a: int, shingles_b: int, rows: int, bits: int = DEFAULT_BITS) -> float:
    """The approximate standard deviation of the containment estimate at true containment `c` (delta
    method over the Jaccard estimate's binomial variance, with the b-bit chance agreements): what the
    module docstring works out, for a report or a threshold's margin."""
    if shingles_b <= 0 or rows <= 0:
        return 0.0
    intersection = c * shingles_b
    union = shingles_a + shingles_b - intersection
    j = intersection / union if union > 0 else 1.0
    chance = 2.0 ** -bits
    m = j + (1.0 - j) * chance  # the probability that a row agrees
    sd_j = np.sqrt(m * (1.0 - m) / rows) / (1.0 - chance)
    slope = (shingles_a + shingles_b) / (shingles_b * (1.0 + j) ** 2)
    return float(slope * sd_j)


def exact_containment(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> float:
    """The true containment of the shingle hash set `b` in `a` (for tests and evaluation); 0 for an
    empty `b`."""
    distinct_b = np.unique(b)
    if len(distinct_b) == 0:
        return 0.0
    return len(np.intersect1d(np.unique(a), distinct_b, assume_unique=True)) / len(distinct_b)


CONTAINMENT_BANDS = 48
"""One-row bands of the containment index (`index/tables.py`, `ContainmentDesign`): 32-bit minima of
their own permutations, one table each. Two pages share a one-row band with probability J, so B
with containment c in an A r times larger is found with probability ``1 - (1 - J)**48``,
``J = c / (r + 1 - c)``: at c = 0.5 that is 1.000 at r = 2, 0.996 at r = 4, 0.946 at r = 8 (0.985 at
c = 0.7), 0.77 at r = 16 (24 bands would give 0.77 at r = 8, 32 bands 0.86, 64 bands 0.98 for a third
more tables)."""
DEFAULT_BUCKET_TEXTS = 16
"""The default cap K on a containment bucket's distinct main texts (`ContainmentDesign.bucket_texts`): a
one-row band's bucket holds every page whose minimum there is one shingle, so a text common to many pages (a
template sentence, a widely syndicated article) fills it and a probe would read every one. A bucket into
which more than K texts were ever inserted is saturated: probes read nothing there, and the pairs it found
are withdrawn unless another shared bucket of at most K texts finds them too. K = 16 is the smallest cap
within half a point of the uncapped recall on the labelled corpus pairs (1,811 of 1,820 found; generated
crawls' reads per page 58 instead of 910; bench/RESULTS.md, issue 25, session 15). Its cost: a text copied
by about 2K pages loses some of its partial copies (10-20% at 32 copies, about 40% at 64)."""
MINIMA_SHINGLE_SIZE = 5
"""The containment index's minima are over word 5-grams, not the signature's 2-grams: unrelated pages
share common bigrams ("of the"), so a one-row band over bigram minima put hundreds of unrelated pages
in one bucket (310 entries read per page on the corpus's 783 pages, 7.7 over 5-grams). A page that
copies another's text holds its 5-grams as it holds its bigrams, so the band still finds it; the
estimate is the signature's (`rule.containment_estimate`)."""
MAX_SIZE_CLASSES = 3
"""A probe reads the size classes (`size_class`) within this many of its page's: every B at most 8
times smaller or larger than A is read (floor(log2) classes of sizes within 8x differ by at most 3),
and none more than 16 times, whose containment estimate is too noisy to confirm (`containment_sd`)."""
_MINIMA_SEED = 0x636F6E7461696E  # "contain": the permutations are part of the index format; never change it
_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


def _minima_parameters(count: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    rng = np.random.Generator(np.random.PCG64(_MINIMA_SEED))
    a = rng.integers(0, 1 << 63, size=count, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    c = rng.integers(0, 1 << 63, size=count, dtype=np.uint64) * np.uint64(2) \
        + rng.integers(0, 2, size=count, dtype=np.uint64)
    return a, c


_A, _C = _minima_parameters(CONTAINMENT_BANDS)


def containment_minima(hashes: npt.NDArray[np.uint64], bands: int = CONTAINMENT_BANDS) -> bytes | None:
    """The 32-bit minima of `bands` permutations (independent of the signature's) over a set of shingle
    hashes, little-endian, 4 bytes each (None for an empty set): the containment index's keys."""
    if not 1 <= bands <= CONTAINMENT_BANDS:
        raise ValueError(f"bands must be 1 to {CONTAINMENT_BANDS}, got {bands}")
    if len(hashes) == 0:
        return None
    x = (hashes & _LOW32)[:, None]
    values = np.multiply(x, _A[None, :bands])  # multiply-add-shift, as `minhash.minhash`
    values += _C[None, :bands]
    return (values.min(axis=0) >> _SHIFT).astype("<u4").tobytes()


def text_minima(toks: list[str]) -> bytes | None:
    """`containment_minima` of a main text's word `MINIMA_SHINGLE_SIZE`-grams, given its tokens."""
    return containment_minima(token_features(toks, MINIMA_SHINGLE_SIZE).hashes)


def minimum_of(minima: bytes, band: int) -> int:
    """One band's 32-bit minimum."""
    return int.from_bytes(minima[band * 4:band * 4 + 4], "little")


def size_class(shingles: int) -> int:
    """floor(log2(distinct shingles)), 0 for fewer than 2: the containment index keys entries with it,
    so a probe reads only pages of comparable size (`MAX_SIZE_CLASSES`)."""
    return max(0, shingles.bit_length() - 1)
