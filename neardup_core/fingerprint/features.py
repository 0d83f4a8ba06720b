"""Features of a main text: normalised word shingles, hashed with mmh3, with weights.

Numbers and calendar words become placeholders, so a changed counter or date moves no bits.
A shingle's weight grows with the log of its count, so one repeated line (a table row, a
left-over menu) cannot outvote the rest of the text, and shingles made only of placeholders
weigh little, so numeric tables do not pull different pages onto one fingerprint.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
_PLACEHOLDERS = ("#", "@month", "@day")
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_PLACEHOLDER_WEIGHT = 0.1
# Distinct tokens whose hashes a process keeps; past this the cache starts over (~25 MB at most).
TOKEN_CACHE_SIZE = 200_000


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


def feature_token(token: str) -> str:
    """A token as a feature sees it: numbers and calendar words become placeholders."""
    if token[0].isdigit() and _NUMBER.match(token):
        return "#"
    return _CALENDAR.get(token, token)


def token_hash(token: str) -> int:
    """The 64-bit mmh3 hash of a token's feature form."""
    return int(mmh3.hash64(feature_token(token), signed=False)[0])


class _Memo(dict[str, Any]):
    """Token -> `function(token)`, computed on first sight and kept for the process (up to
    TOKEN_CACHE_SIZE tokens, then it starts over). Words repeat across the pages of a crawl, so a
    C-level dict lookup replaces the Python work for almost every token."""

    def __init__(self, function: Callable[[str], Any]) -> None:
        super().__init__()
        self.function = function

    def __missing__(self, token: str) -> Any:
        if len(self) >= TOKEN_CACHE_SIZE:
            self.clear()
        value = self[token] = self.function(token)
        return value


_FEATURE_TOKENS = _Memo(feature_token)
_TOKEN_HASHES = _Memo(token_hash)
_PLACEHOLDER_HASHES = np.array([mmh3.hash64(p, signed=False)[0] for p in _PLACEHOLDERS], dtype=np.uint64)


def feature_tokens(text: str) -> list[str]:
    """Tokens with numbers and calendar words replaced by placeholders."""
    return list(map(_FEATURE_TOKENS.__getitem__, tokens(text)))


def _mix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finaliser: spreads combined token hashes over all 64 bits."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def shingle_features(text: str, size: int = 3) -> Features:
    """Weighted hashes of the word `size`-shingles of a text (of its tokens if it has fewer)."""
    return token_features(tokens(text), size)


def token_features(toks: list[str], size: int = 3) -> Features:
    """`shingle_features` of a text given its `tokens`."""
    if not toks:
        return Features(np.zeros(0, np.uint64), np.zeros(0, np.float64))
    token_hashes = np.fromiter(map(_TOKEN_HASHES.__getitem__, toks), dtype=np.uint64, count=len(toks))
    placeholder = token_hashes == _PLACEHOLDER_HASHES[0]
    for h in _PLACEHOLDER_HASHES[1:]:
        placeholder |= token_hashes == h
    n = max(1, len(toks) - size + 1)
    size = min(size, len(toks))
    # uint64 arrays wrap on overflow, as the hash arithmetic wants
    combined = _mix(token_hashes[:n])
    all_placeholder = placeholder[:n].copy()
    for offset in range(1, size):
        combined = _mix(combined * _GOLDEN + token_hashes[offset:offset + n])
        all_placeholder &= placeholder[offset:offset + n]
    # distinct shingles (sorted) with their counts; equal shingles share their placeholder flag
    order = np.argsort(combined)
    ordered = combined[order]
    first = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = np.diff(np.append(first, n))
    weights = 1.0 + np.log(counts.astype(np.float64))
    weights[all_placeholder[order[first]]] *= _PLACEHOLDER_WEIGHT
    return Features(ordered[first], weights)
