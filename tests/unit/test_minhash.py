"""MinHash signatures: deterministic, compact, an unbiased b-bit-corrected Jaccard estimate over the
SimHash's shingles; their place in the fingerprinted page and its wire encodings."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from neardup_core.dedup.gather import UrlState, VersionState
from neardup_core.fingerprint.features import shingle_features
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.minhash import (
    equal_rows,
    exact_jaccard,
    jaccard,
    jaccard_from_rows,
    minhash,
    shared_band,
    signature_bytes,
)
from neardup_core.fingerprint.page import text_fingerprint, text_fingerprints
from neardup_core.settings import CoreSettings
from streams.kafka import records

TEXT = ("The city council voted on Tuesday to expand the bus network with four new lines, after a year of "
        "consultation with residents and businesses along the planned routes. ") * 3


def random_sets(rng: np.random.Generator, n: int, j: float) -> tuple[np.ndarray, np.ndarray]:
    inter = round(2 * n * j / (1 + j))
    common = rng.integers(0, 2**63, size=inter, dtype=np.uint64)
    a = np.concatenate([common, rng.integers(0, 2**63, size=n - inter, dtype=np.uint64)])
    b = np.concatenate([common, rng.integers(0, 2**63, size=n - inter, dtype=np.uint64)])
    return a, b


def test_signatures_are_compact_and_fixed() -> None:
    """The permutations are part of the index format: one set gives one signature, forever."""
    hashes = np.arange(1, 200, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    sig = minhash(hashes, 64)
    assert sig is not None and len(sig) == signature_bytes(64) == 64
    assert minhash(hashes[::-1].copy(), 64) == sig  # a set: order does not matter
    assert minhash(np.concatenate([hashes, hashes]), 64) == sig  # nor repeats
    assert hashlib.sha256(sig).hexdigest()[:16] == "de49a5cfe15a5fa3"  # changing it would need a new index
    wide = minhash(hashes, 64, bits=16)
    assert wide is not None and len(wide) == 128
    assert bytes(wide[::2]) == sig  # the 8-bit rows are the low bytes of the 16-bit ones
    assert minhash(np.zeros(0, np.uint64), 64) is None
    with pytest.raises(ValueError):
        minhash(hashes, 64, bits=4)


def test_the_estimate_is_unbiased_after_the_b_bit_correction() -> None:
    rng = np.random.default_rng(5)
    for j in (0.0, 0.3, 0.6, 0.9):
        errors = []
        for _ in range(60):
            a, b = random_sets(rng, 300, j)
            sa, sb = minhash(a, 128), minhash(b, 128)
            assert sa is not None and sb is not None
            errors.append(jaccard(sa, sb) - exact_jaccard(np.unique(a), np.unique(b)))
        assert abs(float(np.mean(errors))) < 0.02, (j, np.mean(errors))
        assert float(np.std(errors)) < 0.06
    # without the correction, 1 row in 256 of unrelated sets agrees by chance
    assert jaccard_from_rows(0, 64) == 0.0
    assert jaccard_from_rows(64, 64) == 1.0
    assert 0.49 < jaccard_from_rows(32, 64) < 0.5


def test_bands_of_rows() -> None:
    a = bytes(range(16))
    b = bytes([0, 1, 9, 3, 4, 5, 6, 7] + list(range(8, 16)))
    assert shared_band(a, b, 4, 4) == 1  # rows 4-7
    assert shared_band(a, b, 2, 4) == 1
    assert shared_band(a, bytes(16), 4, 4) is None
    assert equal_rows(a, b) == 15


def test_text_fingerprints_share_the_simhash_shingles() -> None:
    on = CoreSettings(minhash=True)
    digest, simhash, sig, shingles = text_fingerprints(TEXT, on)
    assert (digest, simhash) == text_fingerprint(TEXT, on)  # the deprecated name: its first two
    features = shingle_features(TEXT, on.shingle_size)
    assert sig == minhash(features.hashes, on.bands * on.rows) and shingles == len(features)
    assert text_fingerprints(TEXT, CoreSettings(minhash=False)).minhash is None  # off
    assert text_fingerprints(TEXT, CoreSettings(minhash=False), signed=True).minhash == sig  # asked for
    assert text_fingerprints("too short", on)[1:] == (None, None, None)


def fetch(sig: bytes | None, url: str = "https://a.example/x") -> Fetch:
    return Fetch(url, "a.example", 1_700_000_000_000, 0.5, "1" * 64, "2" * 64, 12345, minhash=sig)


def test_a_fetch_with_a_signature_crosses_the_wire_and_the_url_state() -> None:
    sig = bytes(range(64))
    f = fetch(sig)
    assert Fetch.from_list(f.to_list()) == f
    assert records.decode_gather(records.encode_gather([f])) == [f]
    assert Fetch.from_list(fetch(None).to_list()) == fetch(None)
    old = fetch(None).to_list()  # format 2: eight elements
    assert len(old) == 8 and Fetch.from_list(old).minhash is None
    state = UrlState({"v": VersionState(f, f.fetched_at_ms, 3)})
    assert UrlState.from_bytes(state.to_bytes()).versions["v"].fetch == f  # JSON: base64
    version = f.version
    assert version is not None and version.minhash == sig
