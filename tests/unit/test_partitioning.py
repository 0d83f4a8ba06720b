"""`records.partition_of` is Kafka's default partitioner (murmur2) however it is computed, and a
record's probes of one page share one decoded page."""

from __future__ import annotations

import random

from aiokafka.partitioner import murmur2 as aiokafka_murmur2

from neardup_core.dedup.version import PageVersion
from neardup_core.index.bucket import probes_for
from neardup_core.settings import CoreSettings
from streams.kafka import records


def test_murmur2_equals_aiokafka_for_every_length_and_byte() -> None:
    rng = random.Random(3)
    keys = [b"", b"a", b"ab", b"abc", b"abcd", "https://bücher.example/ü?q=1".encode(), bytes(range(256))]
    keys += [rng.randbytes(rng.randrange(0, 90)) for _ in range(2000)]
    for key in keys:
        assert records.murmur2(key) == aiokafka_murmur2(key), key
        assert records.partition_of(key, 8) == (aiokafka_murmur2(key) & 0x7FFFFFFF) % 8


def test_the_probes_of_one_page_share_one_decoded_page() -> None:
    core = CoreSettings()
    pages = [PageVersion(f"https://news.example/{i}", 0.5, 1_780_000_000_000 + i, f"{i:064x}", f"{i + 1:064x}",
                         0x0123456789ABCDEF ^ i, bytes(80)) for i in range(2)]
    probes = [p for page in pages for p in probes_for(core.design, page)]
    decoded = records.decode_probes(records.encode_probes(probes))
    assert [p.to_list() for p in decoded] == [p.to_list() for p in probes]
    assert len({id(p.page) for p in decoded}) == 2
