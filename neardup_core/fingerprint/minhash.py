"""MinHash signatures of a main text's shingles, stored as b-bit minima, and their Jaccard estimate.

The features are the SimHash's (`features.token_features`: the distinct word shingles, hashed to 64
bits with mmh3 and mixed); MinHash ignores their weights, it sees the set. Each of P permutations is
a multiply-add-shift hash of a shingle's low 32 bits, ``h_i(x) = ((a_i * x + c_i) mod 2**64) >> 32``
with fixed random odd ``a_i`` and random ``c_i`` (Dietzfelbinger's strongly universal scheme for
32-bit keys), computed for all shingles and all P permutations at once as one (n, P) numpy array;
row i of the signature is the minimum of ``h_i`` over the shingles.

Only the lowest b bits of each minimum are kept (b-bit minwise hashing, Li and König 2010): a row
costs b bits instead of 32, at the price of random agreements (two rows of different minima are equal
with probability 2**-b). The estimate corrects for them: with a fraction ``m`` of equal rows,
``J = (m - 2**-b) / (1 - 2**-b)``, clipped to [0, 1]. The signature is ``P * b / 8`` bytes
(`signature_bytes`): 64 rows of 8 bits are 64 bytes.

LSH bands (`neardup_core/index/tables.py`) cut the signature into groups of rows; two pages share a band
when all its rows are equal.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

DEFAULT_BITS = 8
"""Bits kept of each row's minimum."""
_SEED = 0x6E656172647570  # "neardup": the permutations are part of the index format; never change it
_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)
_MAX_PERMUTATIONS = 1024


def _parameters() -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    rng = np.random.Generator(np.random.PCG64(_SEED))
    a = rng.integers(0, 1 << 63, size=_MAX_PERMUTATIONS, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    c = rng.integers(0, 1 << 63, size=_MAX_PERMUTATIONS, dtype=np.uint64) * np.uint64(2) \
        + rng.integers(0, 2, size=_MAX_PERMUTATIONS, dtype=np.uint64)
    return a, c


_A, _C = _parameters()


def signature_bytes(permutations: int, bits: int = DEFAULT_BITS) -> int:
    return permutations * bits // 8


def minhash(hashes: npt.NDArray[np.uint64], permutations: int, bits: int = DEFAULT_BITS) -> bytes | None:
    """The b-bit MinHash signature of a set of 64-bit shingle hashes (None for an empty set): P rows
    of `bits` bits (8 or 16), little-endian."""
    if bits not in (8, 16):
        raise ValueError(f"bits must be 8 or 16, got {bits}")
    if not 1 <= permutations <= _MAX_PERMUTATIONS:
        raise ValueError(f"permutations must be 1 to {_MAX_PERMUTATIONS}, got {permutations}")
    if len(hashes) == 0:
        return None
    x = (hashes & _LOW32)[:, None]
    values = np.multiply(x, _A[None, :permutations])  # wraps mod 2**64, as the scheme wants
    values += _C[None, :permutations]
    minima = values.min(axis=0) >> _SHIFT  # the shift is monotone: the minimum first, then the shift
    dtype = np.dtype("<u1") if bits == 8 else np.dtype("<u2")
    return minima.astype(dtype).tobytes()  # astype keeps the lowest bits


def rows_of(signature: bytes, bits: int = DEFAULT_BITS) -> npt.NDArray[np.uint16] | npt.NDArray[np.uint8]:
    return np.frombuffer(signature, dtype="<u1" if bits == 8 else "<u2")


def equal_rows(a: bytes, b: bytes, bits: int = DEFAULT_BITS) -> int:
    """How many rows of two signatures of one length are equal."""
    if len(a) != len(b):
        raise ValueError(f"signatures of different lengths: {len(a)} and {len(b)} bytes")
    return int(np.count_nonzero(rows_of(a, bits) == rows_of(b, bits)))


def jaccard_from_rows(equal: int, rows: int, bits: int = DEFAULT_BITS) -> float:
    """The Jaccard estimate from `equal` equal rows of `rows`, corrected for b-bit agreements."""
    chance = 2.0 ** -bits
    estimate = (equal / rows - chance) / (1.0 - chance)
    return min(1.0, max(0.0, estimate))


def jaccard(a: bytes, b: bytes, bits: int = DEFAULT_BITS) -> float:
    """The estimated Jaccard similarity of the shingle sets behind two signatures."""
    rows = len(a) * 8 // bits
    return jaccard_from_rows(equal_rows(a, b, bits), rows, bits)


def shared_band(a: bytes, b: bytes, bands: int, rows: int, bits: int = DEFAULT_BITS) -> int | None:
    """The first band (of `bands` bands of `rows` rows each, from the signatures' first rows) whose
    rows are all equal in both signatures, or None."""
    width = rows * bits // 8
    for band in range(bands):
        lo = band * width
        if a[lo:lo + width] == b[lo:lo + width]:
            return band
    return None


def band_bytes(signature: bytes, band: int, rows: int, bits: int = DEFAULT_BITS) -> bytes:
    """The bytes of one band's rows."""
    width = rows * bits // 8
    return signature[band * width:(band + 1) * width]


def exact_jaccard(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> float:
    """The true Jaccard similarity of two sets of shingle hashes (for tests and evaluation)."""
    union = len(np.union1d(a, b))
    return len(np.intersect1d(a, b)) / union if union else 1.0
