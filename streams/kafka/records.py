"""Wire encodings of the internal topics (msgpack; the schemas themselves live in neardup_core).

Every internal record carries a batch, so a page's Kafka cost does not grow with the number of
tables: what one step sends to one partition travels in one record.

- `neardup.gather`, partitioned by URL (`partition_of(url)`): a list of tagged messages, each a
  fingerprinted fetch, an answer (one page's tables of one index partition), a notice from a
  better page, or a tick.
- `neardup.probes`, partitioned by bucket (`partition_of(probe.lo)`): a list of `Probe`s.
- `neardup.hosts`, partitioned by host: a list of (decision, the URL's decision before it), or a
  tick (the leader's, to every partition: hosts with unsignalled changes send them).

The first element of each record is its format version, so a later format can be told apart.
Format 3 adds the MinHash signature: a `Fetch` list may carry it as a ninth element (base64), a
page version (in a `Probe`) as a seventh (bytes), a `Match` its Jaccard estimate as a fourth. A
format-2 record is a format-3 record without them, so format 2 is still read. A probe that removes
its page's entry (`Probe.remove`) carries `true` as a sixth element; other probes are as before.
Format 4 adds partial copies: a `Fetch` list may carry its shingle count and containment minima
(base64) as tenth and eleventh elements (its ninth, the signature, then present or null), a page
version its shingle count and minima (bytes) as eighth and ninth, an `Answer` its partials as a sixth,
a `Notice` a `Partial` as a fourth (its match then null). Format 3 is format 4 without them.
Format 5: a probe whose page version is that of an earlier probe in the same record carries that
probe's index (an integer) instead of the page version, so a page's probes to one partition carry it
once (a page version with its signature and minima is most of a probe's bytes). Format 4 is format 5
without references. Format 6 adds saturated containment buckets: a `Partial` may carry its band mask as a
third element, an `Answer` its saturated bands' mask as a seventh (its sixth, the partials, then present),
a `Notice` that mask as a fifth (its fourth then a `Partial` or null). Format 5 is format 6 without them
(a partial without a mask is never withdrawn).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

import msgpack

from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.index.bucket import Answer, Notice, Probe
from neardup_core.messages import Decision

VERSION = 6
READABLE = (2, 3, 4, 5, 6)
FETCH, ANSWER, NOTICE, TICK = "F", "A", "R", "T"
GatherMessage = Fetch | Answer | Notice | int
HostChange = tuple[Decision, Decision | None]


_M = 0x5BD1E995


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (the Java client's `Utils.murmur2`, as aiokafka's `partitioner.murmur2`), four
    bytes at a time: it runs for every probe, answer and decision."""
    length = len(data)
    h = 0x9747B28C ^ length
    words = length // 4
    for k in struct.unpack_from(f"<{words}I", data):
        k = (k * _M) & 0xFFFFFFFF
        k ^= k >> 24
        h = ((h * _M) & 0xFFFFFFFF) ^ ((k * _M) & 0xFFFFFFFF)
    tail = data[words * 4:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h = ((h ^ tail[0]) * _M) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * _M) & 0xFFFFFFFF
    return h ^ (h >> 15)


def key_partition(key: bytes, partitions: int) -> int:
    """The partition of a keyed record: Kafka's default partitioner (murmur2)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


@lru_cache(maxsize=1 << 16)
def partition_of(key: bytes, partitions: int) -> int:
    """The partition a URL, a bucket or a host belongs to (`key_partition`, cached: the same keys recur)."""
    return key_partition(key, partitions)


def _pack(data: Any) -> bytes:
    return msgpack.packb(data, use_bin_type=True)


def _unpack(raw: bytes) -> Any:
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


def _body(raw: bytes, what: str) -> list[Any]:
    version, body = _unpack(raw)
    if version not in READABLE:
        raise ValueError(f"{what} record of format {version!r}, this worker reads {', '.join(map(str, READABLE))}")
    return list(body)


def _gather_item(message: GatherMessage) -> list[Any]:
    if isinstance(message, Fetch):
        return [FETCH, message.to_list()]
    if isinstance(message, Answer):
        return [ANSWER, message.to_list()]
    if isinstance(message, Notice):
        return [NOTICE, message.to_list()]
    return [TICK, int(message)]


RECORD_BYTES = 256 * 1024
"""A record a step sends holds items of at most about this many bytes: a take of many records (or a
gather record read again after a crash, which re-publishes many decisions) can cause more than the
producer's request size (1 MiB) for one partition, and a record over it would crash the agent."""


def _records(items: Iterable[Any], max_bytes: int = RECORD_BYTES) -> Iterator[bytes]:
    """`[VERSION, items]` records in order, each of at most about `max_bytes` of packed items (one item
    at least); each item is packed once and the record framed around the packed items."""
    packer = msgpack.Packer(use_bin_type=True)
    return _framed((packer.pack(item) for item in items), max_bytes)


def _framed(packed_items: Iterable[bytes], max_bytes: int = RECORD_BYTES) -> Iterator[bytes]:
    """`_records` of items packed already."""
    packer = msgpack.Packer(use_bin_type=True)
    chunk: list[bytes] = []
    size = 0
    for packed in packed_items:
        if chunk and size + len(packed) > max_bytes:
            yield _frame(packer, chunk)
            chunk, size = [], 0
        chunk.append(packed)
        size += len(packed)
    if chunk:
        yield _frame(packer, chunk)


def _frame(packer: msgpack.Packer, packed_items: list[bytes]) -> bytes:
    """What `_pack([VERSION, items])` gives, from the items already packed."""
    return (packer.pack_array_header(2) + packer.pack(VERSION) + packer.pack_array_header(len(packed_items))
            + b"".join(packed_items))


def encode_gather(messages: Iterable[GatherMessage]) -> bytes:
    return _pack([VERSION, [_gather_item(m) for m in messages]])


def gather_records(messages: Iterable[GatherMessage], max_bytes: int = RECORD_BYTES) -> Iterator[bytes]:
    """The messages in order, as gather records of at most about `max_bytes` each."""
    return gather_records_packed((pack_gather_message(m) for m in messages), max_bytes)


def pack_gather_message(message: GatherMessage) -> bytes:
    """One message as an item of a gather record, packed (`gather_records_packed` frames them)."""
    return _pack(_gather_item(message))


def gather_records_packed(packed: Iterable[bytes], max_bytes: int = RECORD_BYTES) -> Iterator[bytes]:
    """`gather_records` of messages packed already (`pack_gather_message`)."""
    return _framed(packed, max_bytes)


def decode_gather(raw: bytes) -> list[GatherMessage]:
    out: list[GatherMessage] = []
    for tag, body in _body(raw, "gather"):
        if tag == FETCH:
            out.append(Fetch.from_list(body))
        elif tag == ANSWER:
            out.append(Answer.from_list(body))
        elif tag == NOTICE:
            out.append(Notice.from_list(body))
        elif tag == TICK:
            out.append(int(body))
        else:
            raise ValueError(f"unknown gather message tag {tag!r}")
    return out


def encode_probes(probes: Iterable[Probe]) -> bytes:
    """One probes record of all `probes` (`probe_records` without a size limit)."""
    out = probe_records(probes, max_bytes=sys.maxsize)
    return out[0] if out else _pack([VERSION, []])


def probe_records(probes: Iterable[Probe], max_bytes: int = RECORD_BYTES) -> list[bytes]:
    """The probes in order, as probes records of at most about `max_bytes` each; within a record, a
    probe of a page version an earlier probe of the record carried refers to that probe (format 5)."""
    packer = msgpack.Packer(use_bin_type=True)
    out: list[bytes] = []
    chunk: list[bytes] = []
    size = 0
    # id of a page version -> the record's first probe carrying it; the probes of one page share one
    # `PageVersion` object (`probes_for`), and `kept` holds each so that its id is not reused
    carried: dict[int, int] = {}
    kept: list[PageVersion] = []
    for probe in probes:
        page = id(probe.page)
        ref = carried.get(page)
        if ref is None:
            packed = packer.pack(probe.to_list())
        else:  # `Probe.to_list` with the reference in place of the page version
            packed = packer.pack([probe.table, probe.lo, probe.hi, probe.group, ref, True] if probe.remove
                                 else [probe.table, probe.lo, probe.hi, probe.group, ref])
        if chunk and size + len(packed) > max_bytes:
            out.append(_frame(packer, chunk))
            chunk, size, carried = [], 0, {}
            if ref is not None:  # the page version it named is in the record just closed
                packed = packer.pack(probe.to_list())
        if page not in carried:
            carried[page] = len(chunk)
            kept.append(probe.page)
        chunk.append(packed)
        size += len(packed)
    if chunk:
        out.append(_frame(packer, chunk))
    return out


def decode_probes(raw: bytes, pages: dict[tuple[Any, ...], PageVersion] | None = None) -> list[Probe]:
    """The probes of a record; the probes of one page share one `PageVersion` (which computes its
    identity, id and rank once), also across the records decoded with one `pages` memo."""
    pages = {} if pages is None else pages
    out: list[Probe] = []
    for table, lo, hi, group, page, *remove in _body(raw, "probes"):
        if isinstance(page, int):
            if not 0 <= page < len(out):
                raise ValueError(f"probe {len(out)} refers to probe {page}'s page version, not an earlier probe")
            version = out[page].page
        else:
            key = tuple(page)
            known = pages.get(key)
            version = pages[key] = PageVersion.from_list(page) if known is None else known
        out.append(Probe(table, lo, hi, group, version, bool(remove and remove[0])))
    return out


def encode_host_changes(changes: Iterable[HostChange]) -> bytes:
    return _pack([VERSION, [[d.to_json(), before.to_json() if before else None] for d, before in changes]])


def encode_host_changes_capped(changes: Iterable[HostChange], max_bytes: int = RECORD_BYTES) -> Iterator[bytes]:
    """The changes in order, as hosts records of at most about `max_bytes` each (one change at least)."""
    return _records(([d.to_json(), before.to_json() if before else None] for d, before in changes), max_bytes)


def encode_host_tick(now_ms: int) -> bytes:
    return _pack([VERSION, [[TICK, int(now_ms)]]])


def decode_hosts(raw: bytes) -> list[HostChange | int]:
    """A hosts record: its changes, or a tick (an int, the leader's clock)."""
    return [int(second) if first == TICK else
            (Decision.from_json(first), Decision.from_json(second) if second else None)
            for first, second in _body(raw, "hosts")]


def decode_host_changes(raw: bytes) -> list[HostChange]:
    """The changes of a hosts record (none in a tick)."""
    return [item for item in decode_hosts(raw) if not isinstance(item, int)]
