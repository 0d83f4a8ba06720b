"""Records a step sends stay under the producer's request size however much a take causes."""

from __future__ import annotations

import msgpack

from neardup_core.index.bucket import Answer
from streams import records


def answers(n: int) -> list[Answer]:
    return [Answer(f"https://site.example/page/{i}", bytes([i % 256]) * 16, 1_700_000_000_000 + i, (0, 1, 2), None)
            for i in range(n)]


def test_a_framed_record_is_the_record_packed_whole() -> None:
    messages = [*answers(3), 1_700_000_000_000]
    [one] = records.gather_records(messages)
    assert one == records.encode_gather(messages)


def test_many_messages_go_out_as_several_records_in_order_each_under_the_cap() -> None:
    messages = [*answers(5000), 1_700_000_000_999]
    out = list(records.gather_records(messages, max_bytes=16 * 1024))
    assert len(out) > 10
    assert all(len(raw) <= 16 * 1024 + 200 for raw in out)  # the cap plus one item and the frame
    decoded = [m for raw in out for m in records.decode_gather(raw)]
    assert decoded == messages


def test_an_item_over_the_cap_still_goes_alone() -> None:
    big = [["x" * 50_000]]
    [raw] = list(records._records(big, max_bytes=1000))
    assert msgpack.unpackb(raw, raw=False) == [records.VERSION, big]
