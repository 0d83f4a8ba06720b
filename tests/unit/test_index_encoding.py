"""The index's stored forms of page versions: a version record and a group summary are the msgpack of
`PageVersion.to_list()` (and of their list), however they are built (`PageVersion.packed` once per object)."""

from __future__ import annotations

import msgpack

from neardup_core.dedup.version import PageVersion
from neardup_core.index.bucket import decode_page, decode_summary, encode_page, encode_summary


def versions() -> list[PageVersion]:
    with_sketches = [PageVersion(f"https://a{i}.example/x", 0.5, 1_700_000_000_000 + i, f"{i:02x}" * 32, "cd" * 32,
                                 (1 << 63) + i, bytes([i]) * 80, 300 + i, b"\x02" * 192) for i in range(20)]
    return [*with_sketches, PageVersion("https://b.example/", 0.0, 1, "ef" * 32, "01" * 32, None),
            PageVersion("https://c.example/", 1.0, 2, "ab" * 32, "23" * 32, 5, b"\x03" * 80)]


def test_records_and_summaries_are_the_msgpack_of_their_lists() -> None:
    pages = versions()
    for page in pages:
        assert encode_page(page) == msgpack.packb(page.to_list(), use_bin_type=True)
        assert decode_page(encode_page(page)) == page
    for n in (0, 1, 2, 3, 15, 16, 17, len(pages)):  # msgpack's array header changes form at 16 items
        members = pages[:n]
        raw = encode_summary(members)
        assert raw == msgpack.packb([m.to_list() for m in members], use_bin_type=True)
        assert decode_summary(raw) == members
