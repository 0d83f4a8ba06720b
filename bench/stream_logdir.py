"""What a phase cost the broker's disk, read from its log directory: bytes and record batches per topic.

Records are an easy proxy to count and a poor one for Kafka's cost: the broker's work goes with the
bytes it writes and the batches (and so produce requests) it takes, and one batch may hold one
record or a thousand. Each partition's ``*.log`` segments are a sequence of record batches
(message format v2: ``baseOffset`` int64, ``batchLength`` int32, then ``batchLength`` bytes), so
walking their headers counts the batches and their bytes exactly, compressed as stored, without
Kafka's tools. Only a broker this bench started has a log directory it can read; `--broker` runs
report none.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

_HEADER = struct.Struct(">qi")  # baseOffset, batchLength
_PARTITION_DIR = re.compile(r"(.+)-(\d+)")


@dataclass(frozen=True, slots=True)
class LogUsage:
    """Bytes (record batches as stored, headers included) and record batches of one topic's logs."""

    bytes: int = 0
    batches: int = 0

    def __add__(self, other: LogUsage) -> LogUsage:
        return LogUsage(self.bytes + other.bytes, self.batches + other.batches)


def segment_usage(path: Path) -> LogUsage:
    """The batches of one log segment, up to the last whole one (the broker may be appending)."""
    data = path.read_bytes()
    size = batches = 0
    offset = 0
    while offset + _HEADER.size <= len(data):
        _, length = _HEADER.unpack_from(data, offset)
        if length <= 0 or offset + _HEADER.size + length > len(data):
            break
        offset += _HEADER.size + length
        size += _HEADER.size + length
        batches += 1
    return LogUsage(size, batches)


def topic_usage(log_dir: Path, topics: list[str]) -> dict[str, LogUsage]:
    """Per topic of `topics`, the bytes and batches of its partitions' segments under `log_dir`
    (a topic with no partition directory there gets zeros)."""
    wanted = set(topics)
    out = {t: LogUsage() for t in topics}
    if not log_dir.is_dir():
        return out
    for part in log_dir.iterdir():
        m = _PARTITION_DIR.fullmatch(part.name)
        if m is None or m[1] not in wanted or not part.is_dir():
            continue
        for segment in part.glob("*.log"):
            try:
                out[m[1]] += segment_usage(segment)
            except FileNotFoundError:  # a segment deleted under us (a roll, a cleaner)
                continue
    return out
