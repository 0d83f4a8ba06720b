"""Features of a main text: normalised word shingles, hashed with mmh3, with weights.

Numbers and calendar words become placeholders, so a changed counter or date moves no bits.
A shingle's weight grows with the log of its count, so one repeated line (a table row, a
left-over menu) cannot outvote the rest of the text, and shingles made only of placeholders
weigh little, so numeric tables do not pull different pages onto one fingerprint.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import mmh3
import numpy as np
import numpy.typing as npt

_TOKEN = re.compile(r"\w+", re.UNICODE)
_NUMBER = re.compile(r"^\d[\d_]*$|^\d+(st|nd|rd|th|am|pm|h|s|m|k)$")
_CALENDAR = {
    w: "@month" for w in (
        "january february march april may june july august september october november december "
        "jan feb mar apr jun jul aug sep sept oct nov dec").split()
} | {
    w: "@day" for w in (
        "monday tuesday wednesday thursday friday saturday sunday "
        "mon tue tues wed thu thur thurs fri sat sun").split()
}
_PLACEHOLDERS = frozenset({"#", "@month", "@day"})
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_PLACEHOLDER_WEIGHT = 0.1


@dataclass(frozen=True, slots=True)
class Features:
    """Distinct shingle hashes and their weights."""

    hashes: npt.NDArray[np.uint64]
    weights: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.hashes)


def tokens(text: str) -> list[str]:
    """Case-folded NFKC word tokens."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def normalise_text(text: str) -> str:
    """The text as a canonical token sequence: what the text digest is taken of."""
    return " ".join(tokens(text))


def feature_tokens(text: str) -> list[str]:
    """Tokens with numbers and calendar words replaced by placeholders."""
    out = []
    for tok in tokens(text):
        if tok[0].isdigit() and _NUMBER.match(tok):
            out.append("#")
        else:
            out.append(_CALENDAR.get(tok, tok))
    return out


def _mix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finaliser: spreads combined token hashes over all 64 bits."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def shingle_features(text: str, size: int = 3) -> Features:
    """Weighted hashes of the word `size`-shingles of a text (of its tokens if it has fewer)."""
    toks = feature_tokens(text)
    if not toks:
        return Features(np.zeros(0, np.uint64), np.zeros(0, np.float64))
    vocab: dict[str, int] = {}
    ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t in toks), dtype=np.int64, count=len(toks))
    token_hashes = np.fromiter((mmh3.hash64(t, signed=False)[0] for t in vocab), dtype=np.uint64,
                               count=len(vocab))
    placeholder = np.fromiter((t in _PLACEHOLDERS for t in vocab), dtype=bool, count=len(vocab))
    n = max(1, len(toks) - size + 1)
    size = min(size, len(toks))
    with np.errstate(over="ignore"):
        combined = np.zeros(n, np.uint64)
        all_placeholder = np.ones(n, bool)
        for offset in range(size):
            window = ids[offset:offset + n]
            combined = _mix(combined * _GOLDEN + token_hashes[window])
            all_placeholder &= placeholder[window]
    uniq, first, counts = np.unique(combined, return_index=True, return_counts=True)
    weights = 1.0 + np.log(counts.astype(np.float64))
    weights[all_placeholder[first]] *= _PLACEHOLDER_WEIGHT
    return Features(uniq, weights)
