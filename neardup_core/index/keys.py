"""Fixed-width big-endian key encodings of the index, so that byte order is bucket order.

Near-table entry: table (1 byte) | permuted fingerprint (8) | version id (12).
Band-table entry: table (1 byte, from 0xA0) | band hash (4) | signature hash (8) | version id (12).
Containment-table entry: 0xE0 | band (1) | 32-bit minimum (4) | size class (1) | text hash (8) | version id (12).
Exact-table entry: kind (1 byte: 0xF0 text digest, 0xF1 body digest) | digest (32) | version id (12).
A bucket is the key range sharing `table | key bits` (near), `table | band hash` (band),
`0xE0 | band | minimum` (containment) or `kind | digest` (exact); its lower bound is also the bucket's
name, the routing key of its probes (a containment probe reads only some size classes of its bucket).

Within a bucket, the entries of one fingerprint (near), one signature (band) or one digest (exact)
form a **group**, whose key is the entry key without the version id: `table | permuted fingerprint`,
`table | band hash | signature hash`, `0xE0 | band | minimum | size class | text hash` (one main
text) or `kind | digest`. A group of two or more versions keeps its
summary under the group key itself, which sorts before the group's entries. A version's page is
stored once per store, under `0xF2 | version id`; entries hold no page.

With a retention (`NEARDUP_RETENTION_DAYS`), each version record has an expiry key, `0xF3 "expiry"
0x00 0x00 | first fetch (8, ms) | version id (12)`, so the versions to expire are one time-ordered
range (`index/expiry.py`), and the store's event clock sits under `0xF4 "clock"`. The expiry keys'
first 9 bytes are one constant, as long as the longest prefix a store filters on
(`shared_prefix_bytes(64)`), so a range of them lies within one filter prefix.
"""

from __future__ import annotations

BAND_TABLE_BASE = 0xA0
"""Table ids of LSH bands: BAND_TABLE_BASE + band; near tables are numbered below it."""
MAX_BANDS = 64
BAND_BUCKET_BYTES = 5
BAND_GROUP_BYTES = 13
CONTAINMENT_KEY = 0xE0
"""First key byte of every containment-table entry (the band follows)."""
CONTAINMENT_TABLE_BASE = 0x100
"""Table ids of containment bands: CONTAINMENT_TABLE_BASE + band (ids, not key bytes: see CONTAINMENT_KEY)."""
MAX_CONTAINMENT_BANDS = 64
CONTAINMENT_BUCKET_BYTES = 6
CONTAINMENT_GROUP_BYTES = 15
TEXT_TABLE = 0xF0
BODY_TABLE = 0xF1
VERSION_RECORD = 0xF2
VERSION_ID_BYTES = 12
NEAR_GROUP_BYTES = 9
EXACT_GROUP_BYTES = 33
EXPIRY_HEADER = b"\xf3expiry\x00\x00"
INDEX_CLOCK = b"\xf4clock"


def near_entry_key(table: int, permuted_fp: int, version_id: bytes) -> bytes:
    return bytes((table,)) + permuted_fp.to_bytes(8, "big") + version_id


def near_group_key(table: int, permuted_fp: int) -> bytes:
    return bytes((table,)) + permuted_fp.to_bytes(8, "big")


def near_bucket_range(table: int, bucket: int, key_bits: int) -> tuple[bytes, bytes]:
    """[lo, hi) of the entries of a near table whose permuted fingerprint starts with `bucket`."""
    shift = 64 - key_bits
    lo = bytes((table,)) + (bucket << shift).to_bytes(8, "big")
    top = (bucket + 1) << shift
    hi = bytes((table + 1,)) + bytes(8) if top >> 64 else bytes((table,)) + top.to_bytes(8, "big")
    return lo, hi


def band_group_key(table: int, band_hash: int, signature_hash: int) -> bytes:
    return bytes((table,)) + band_hash.to_bytes(4, "big") + signature_hash.to_bytes(8, "big")


def band_bucket_range(table: int, band_hash: int) -> tuple[bytes, bytes]:
    """[lo, hi) of the entries of a band table whose band hash is `band_hash`."""
    lo = bytes((table,)) + band_hash.to_bytes(4, "big")
    top = band_hash + 1
    hi = bytes((table + 1,)) + bytes(4) if top >> 32 else bytes((table,)) + top.to_bytes(4, "big")
    return lo, hi


def containment_group_key(band: int, minimum: int, size_class: int, text_sha256: str) -> bytes:
    return (bytes((CONTAINMENT_KEY, band)) + minimum.to_bytes(4, "big") + bytes((size_class,))
            + bytes.fromhex(text_sha256)[:8])


def containment_bucket_range(band: int, minimum: int, classes: range) -> tuple[bytes, bytes]:
    """The bucket of one containment band's minimum (its lower bound, the probe's routing key) and the
    upper bound of its entries whose size class is below `classes.stop`; a probe reads from
    `containment_read_from` (its lowest class), not from the bucket's start."""
    bucket = bytes((CONTAINMENT_KEY, band)) + minimum.to_bytes(4, "big")
    return bucket, containment_read_to(bucket, classes)


def containment_read_from(bucket: bytes, classes: range) -> bytes:
    """Where a probe of `bucket` reading the size classes `classes` starts."""
    return bucket[:CONTAINMENT_BUCKET_BYTES] + bytes((classes.start,))


def containment_read_to(bucket: bytes, classes: range) -> bytes:
    """Where a probe of `bucket` reading the size classes `classes` stops (exclusive)."""
    return bucket[:CONTAINMENT_BUCKET_BYTES] + bytes((min(255, classes.stop),))


def is_containment_table(table: int) -> bool:
    return CONTAINMENT_TABLE_BASE <= table < CONTAINMENT_TABLE_BASE + MAX_CONTAINMENT_BANDS


def is_band_table(table: int) -> bool:
    return BAND_TABLE_BASE <= table < BAND_TABLE_BASE + MAX_BANDS


def exact_entry_key(table: int, digest_hex: str, version_id: bytes) -> bytes:
    return bytes((table,)) + bytes.fromhex(digest_hex) + version_id


def exact_group_key(table: int, digest_hex: str) -> bytes:
    return bytes((table,)) + bytes.fromhex(digest_hex)


def exact_bucket_range(table: int, digest_hex: str) -> tuple[bytes, bytes]:
    return group_range(exact_group_key(table, digest_hex))


def group_range(group: bytes) -> tuple[bytes, bytes]:
    """[lo, hi) of a group: its summary (the group key itself) and its entries."""
    return group, group + b"\xff" * (VERSION_ID_BYTES + 1)


def group_of_key(key: bytes) -> bytes:
    """The group an index key belongs to (a summary key is its own group)."""
    table = key[0]
    size = NEAR_GROUP_BYTES if table < BAND_TABLE_BASE else BAND_GROUP_BYTES if table < CONTAINMENT_KEY \
        else CONTAINMENT_GROUP_BYTES if table < TEXT_TABLE else EXACT_GROUP_BYTES
    return key[:size]


def version_record_key(version_id: bytes) -> bytes:
    return bytes((VERSION_RECORD,)) + version_id


def expiry_key(fetched_at_ms: int, version_id: bytes) -> bytes:
    """The key that dates a version record by its first fetch: the sweep reads them oldest first."""
    return EXPIRY_HEADER + fetched_at_ms.to_bytes(8, "big") + version_id


def expired_range(horizon_ms: int) -> tuple[bytes, bytes]:
    """[lo, hi) of the expiry keys of versions first fetched before `horizon_ms`."""
    return EXPIRY_HEADER, EXPIRY_HEADER + max(0, horizon_ms).to_bytes(8, "big")


def expiry_of_key(key: bytes) -> tuple[int, bytes]:
    """(first fetch ms, version id) of an expiry key."""
    at = len(EXPIRY_HEADER)
    return int.from_bytes(key[at:at + 8], "big"), key[at + 8:]


def permuted_of_key(key: bytes) -> int:
    """The permuted fingerprint stored in a near-table key."""
    return int.from_bytes(key[1:9], "big")


def shared_prefix_bytes(min_key_bits: int) -> int:
    """How many leading key bytes all entries of any bucket share, when the narrowest near table
    keys on `min_key_bits` bits (exact buckets share 33): the prefix a store may filter on."""
    return 1 + min_key_bits // 8
