"""Wire encodings of the internal topics (msgpack; the schemas themselves live in neardup_core).

`neardup.gather` carries tagged messages keyed by URL: a fingerprinted fetch, a table's answer,
a revision from a better page, or a tick. `neardup.probes` carries `Probe`s keyed by bucket.
`neardup.hosts` carries a decision with what the URL's previous decision said, keyed by host.
"""

from __future__ import annotations

from typing import Any

import msgpack

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.index.bucket import Answer, Probe, Revision
from neardup_core.messages import Decision

FETCH, ANSWER, REVISION, TICK = "F", "A", "R", "T"
GatherMessage = Fetch | Answer | Revision | int


def _pack(data: Any) -> bytes:
    return msgpack.packb(data, use_bin_type=True)


def _unpack(raw: bytes) -> Any:
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


def encode_gather(message: GatherMessage) -> bytes:
    if isinstance(message, Fetch):
        return _pack([FETCH, message.to_list()])
    if isinstance(message, Answer):
        return _pack([ANSWER, message.to_list()])
    if isinstance(message, Revision):
        return _pack([REVISION, message.to_list()])
    return _pack([TICK, int(message)])


def decode_gather(raw: bytes) -> GatherMessage:
    tag, body = _unpack(raw)
    if tag == FETCH:
        return Fetch.from_list(body)
    if tag == ANSWER:
        return Answer.from_list(body)
    if tag == REVISION:
        return Revision.from_list(body)
    if tag == TICK:
        return int(body)
    raise ValueError(f"unknown gather message tag {tag!r}")


def encode_probe(probe: Probe) -> bytes:
    return _pack(probe.to_list())


def decode_probe(raw: bytes) -> Probe:
    return Probe.from_list(_unpack(raw))


def encode_host_change(decision: Decision, previous: Decision | None) -> bytes:
    return _pack([decision.to_json(), previous.to_json() if previous else None])


def decode_host_change(raw: bytes) -> tuple[Decision, Decision | None]:
    decision, previous = _unpack(raw)
    return Decision.from_json(decision), Decision.from_json(previous) if previous else None
