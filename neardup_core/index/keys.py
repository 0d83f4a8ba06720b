"""Fixed-width big-endian key encodings of the index, so that byte order is bucket order.

Near-table entry: table (1 byte) | permuted fingerprint (8) | version id (12).
Exact-table entry: kind (1 byte: 0xF0 text digest, 0xF1 body digest) | digest (32) | version id (12).
A bucket is the key range sharing `table | key bits` (near) or `kind | digest` (exact); its
lower bound is also the bucket's name, the routing key of its probes.
"""

from __future__ import annotations

TEXT_TABLE = 0xF0
BODY_TABLE = 0xF1
VERSION_ID_BYTES = 12


def near_entry_key(table: int, permuted_fp: int, version_id: bytes) -> bytes:
    return bytes((table,)) + permuted_fp.to_bytes(8, "big") + version_id


def near_bucket_range(table: int, bucket: int, key_bits: int) -> tuple[bytes, bytes]:
    """[lo, hi) of the entries of a near table whose permuted fingerprint starts with `bucket`."""
    shift = 64 - key_bits
    lo = bytes((table,)) + (bucket << shift).to_bytes(8, "big")
    top = (bucket + 1) << shift
    hi = bytes((table + 1,)) + bytes(8) if top >> 64 else bytes((table,)) + top.to_bytes(8, "big")
    return lo, hi


def exact_entry_key(table: int, digest_hex: str, version_id: bytes) -> bytes:
    return bytes((table,)) + bytes.fromhex(digest_hex) + version_id


def exact_bucket_range(table: int, digest_hex: str) -> tuple[bytes, bytes]:
    prefix = bytes((table,)) + bytes.fromhex(digest_hex)
    return prefix, prefix + b"\xff" * (VERSION_ID_BYTES + 1)


def permuted_of_key(key: bytes) -> int:
    """The permuted fingerprint stored in a near-table key."""
    return int.from_bytes(key[1:9], "big")


def shared_prefix_bytes(min_key_bits: int) -> int:
    """How many leading key bytes all entries of any bucket share, when the narrowest near table
    keys on `min_key_bits` bits (exact buckets share 33): the prefix a store may filter on."""
    return 1 + min_key_bits // 8
