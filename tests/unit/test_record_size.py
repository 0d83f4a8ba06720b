"""Records a step sends stay under the producer's request size however much a take causes."""

from __future__ import annotations

import random

import msgpack
import pytest

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.index.bucket import Answer, Probe, probes_for, removals_for
from neardup_core.settings import CoreSettings
from streams.kafka import records


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


def page_probes(n: int) -> list[Probe]:
    """The probes of `n` pages (MinHash and partial copies on), the pages' probes interleaved as a take
    sends them to one partition after another."""
    settings = CoreSettings(partial_copies=True)
    rng = random.Random(n)
    per_page = []
    for i in range(n):
        fetch = Fetch(f"https://site.example/{i}", "site.example", 1_700_000_000_000 + i, 0.5, f"{i:064x}",
                      f"{i + 1:064x}", 12345 + i, minhash=rng.randbytes(settings.bands * settings.rows), shingles=400,
                      minima=rng.randbytes(192))
        assert fetch.version is not None
        per_page.append(probes_for(settings.design, fetch.version))
    return [p for group in zip(*per_page, strict=True) for p in group]


def test_a_probes_record_carries_each_page_version_once() -> None:
    probes = page_probes(3)
    probes += removals_for(CoreSettings(partial_copies=True).design, probes[0].page)  # a removal refers too
    raw = records.encode_probes(probes)
    assert records.decode_probes(raw) == probes
    for page in {p.page for p in probes}:
        assert page.minhash is not None and raw.count(page.minhash) == 1
    format_4 = msgpack.packb([4, [p.to_list() for p in probes]], use_bin_type=True)
    assert len(raw) * 5 < len(format_4)
    assert records.decode_probes(format_4) == probes  # the format before still reads


def test_probes_split_over_records_refer_only_within_their_record() -> None:
    probes = page_probes(4)
    out = records.probe_records(probes, max_bytes=2048)
    assert len(out) > 3
    decoded = [records.decode_probes(raw) for raw in out]  # each record alone
    assert [p for d in decoded for p in d] == probes
    for raw, d in zip(out, decoded, strict=True):
        for page in {p.page for p in d}:
            assert page.minhash is not None and raw.count(page.minhash) == 1


def test_a_reference_to_a_later_probe_is_refused() -> None:
    [first, second] = page_probes(1)[:2]
    bad = msgpack.packb([records.VERSION, [[*first.to_list()[:4], 1, *first.to_list()[5:]], second.to_list()]],
                        use_bin_type=True)
    with pytest.raises(ValueError, match="refers to probe 1"):
        records.decode_probes(bad)
