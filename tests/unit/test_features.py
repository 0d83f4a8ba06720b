"""Features, SimHash and digests against plain-Python references and their stated properties."""

from __future__ import annotations

import hashlib
import math
from collections import Counter

import mmh3
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_core.fingerprint import features
from neardup_core.fingerprint.digests import text_sha256, tokens_sha256
from neardup_core.fingerprint.features import feature_tokens, shingle_features, token_features, token_hash, tokens
from neardup_core.fingerprint.page import text_fingerprints
from neardup_core.fingerprint.simhash import hamming, hamming_many, simhash64
from neardup_core.settings import CoreSettings

MASK = (1 << 64) - 1
WORDS = st.sampled_from("the cat sat on a mat 12 3rd May monday Straße ＡＢＣ ﬁne x² 10_000 5pm".split())


def _mix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def reference_features(text: str, size: int) -> dict[int, float]:
    """Shingle hash -> weight, one shingle at a time in plain Python."""
    toks = feature_tokens(text)
    if not toks:
        return {}
    size = min(size, len(toks))
    counts: Counter[int] = Counter()
    placeholder_only: dict[int, bool] = {}
    for i in range(len(toks) - size + 1):
        h = 0
        for tok in toks[i:i + size]:
            h = _mix((h * 0x9E3779B97F4A7C15 + mmh3.hash64(tok, signed=False)[0]) & MASK)
        counts[h] += 1
        placeholder_only.setdefault(h, all(t in ("#", "@month", "@day") for t in toks[i:i + size]))
    return {h: (1 + math.log(c)) * (0.1 if placeholder_only[h] else 1.0) for h, c in counts.items()}


def as_dict(f: features.Features) -> dict[int, float]:
    return {int(h): float(w) for h, w in zip(f.hashes, f.weights, strict=True)}


@settings(max_examples=200, deadline=None)
@given(st.lists(WORDS, max_size=40), st.integers(1, 4))
def test_features_equal_the_plain_python_reference(words: list[str], size: int) -> None:
    text = " ".join(words)
    got = as_dict(shingle_features(text, size))
    want = reference_features(text, size)
    assert got.keys() == want.keys()
    assert all(math.isclose(got[h], want[h]) for h in want)


def test_the_token_cache_starting_over_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "On 3 May the council met; the council met again on 10 June and on 11 June. " * 3
    before = shingle_features(text, 2)
    monkeypatch.setattr(features, "TOKEN_CACHE_SIZE", 3)
    features._TOKEN_HASHES.clear()
    features._FEATURE_TOKENS.clear()
    after = shingle_features(text, 2)
    assert len(features._TOKEN_HASHES) <= 3
    assert np.array_equal(before.hashes, after.hashes) and np.array_equal(before.weights, after.weights)
    assert features._TOKEN_HASHES[tokens(text)[-1]] == token_hash(tokens(text)[-1])


def test_numbers_and_dates_move_no_features() -> None:
    a = shingle_features("Visitors: 1204 on Monday 3 May 2021 at 5pm. The library opens early.", 2)
    b = shingle_features("Visitors: 88 on Friday 17 December 1999 at 9am. The library opens early.", 2)
    assert np.array_equal(a.hashes, b.hashes)


def test_placeholder_only_shingles_weigh_little() -> None:
    f = as_dict(shingle_features("2021 2022 alpha beta", 2))
    placeholder_shingle = max(f, key=lambda h: -f[h])
    assert f[placeholder_shingle] == pytest.approx(0.1)
    assert sorted(f.values()) == pytest.approx([0.1, 1.0, 1.0])


def test_token_features_is_shingle_features_of_the_tokens() -> None:
    text = "Ｆｕｌｌ-width text, ﬁ ligatures and CASE folding: STRASSE straße."
    a, b = shingle_features(text, 3), token_features(tokens(text), 3)
    assert np.array_equal(a.hashes, b.hashes) and np.array_equal(a.weights, b.weights)


def test_text_digest_is_of_the_normalised_tokens() -> None:
    text = "  Hello,\n\nWORLD!  ﬁne "
    assert text_sha256(text) == hashlib.sha256(b"hello world fine").hexdigest()
    assert tokens_sha256(tokens(text)) == text_sha256(text)
    assert text_fingerprints(text, CoreSettings(min_features=1)).digest == text_sha256(text)


def test_text_fingerprint_needs_min_features() -> None:
    assert text_fingerprints("one two three", CoreSettings(shingle_size=2, min_features=8)).simhash is None
    f = shingle_features("one two three", 2)
    assert text_fingerprints("one two three", CoreSettings(shingle_size=2, min_features=2)).simhash == \
        simhash64(f.hashes, f.weights)


def test_simhash_is_the_weighted_bit_vote() -> None:
    rng = np.random.default_rng(7)
    hashes = rng.integers(0, 2**63, 50, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, 50, dtype=np.uint64)
    weights = rng.random(50) + 0.1
    want = 0
    for bit in range(64):
        votes = sum(w for h, w in zip(hashes, weights, strict=True) if int(h) >> bit & 1)
        if votes * 2 > weights.sum():
            want |= 1 << bit
    assert simhash64(hashes, weights) == want
    assert simhash64(np.zeros(0, np.uint64), np.zeros(0)) == 0
    assert simhash64(hashes[:1], weights[:1]) == int(hashes[0])


def test_hamming_many_equals_hamming() -> None:
    rng = np.random.default_rng(3)
    fps = rng.integers(0, 2**64 - 1, 500, dtype=np.uint64, endpoint=True)
    query = int(fps[0]) ^ 0b1011_0000_0001
    got = hamming_many(query, fps)
    assert [int(d) for d in got] == [hamming(query, int(fp)) for fp in fps]
    assert int(got[0]) == 4
