"""64-bit SimHash over weighted feature hashes, and Hamming distance.

Each feature votes its weight for or against each bit of its 64-bit hash; a fingerprint bit is
set where the votes for it win. Near texts share most features, so most votes and bits agree.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

_BIT_WEIGHTS = (np.uint64(1) << np.arange(64, dtype=np.uint64)).astype(np.uint64)


def simhash64(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.float64]) -> int:
    """The SimHash of features given as 64-bit hashes with non-negative weights."""
    if len(hashes) == 0:
        return 0
    # little-endian bytes -> bits: column j of `bits` is bit j of each hash
    bits = np.unpackbits(hashes.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    votes = weights @ bits  # total weight voting for each bit being 1
    ones = votes * 2.0 > weights.sum()
    return int(_BIT_WEIGHTS[ones].sum(dtype=np.uint64))


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two 64-bit fingerprints."""
    return (a ^ b).bit_count()


def hamming_many(query: int, fps: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Hamming distances of one fingerprint to many, vectorised."""
    return np.bitwise_count(np.bitwise_xor(fps, np.uint64(query)))


def to_hex(fp: int) -> str:
    return f"{fp:016x}"


def from_hex(text: str) -> int:
    return int(text, 16)
