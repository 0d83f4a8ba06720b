"""The saturated-bucket fields on the wire and in the URL state: a partial copy's band mask, an answer's and a
notice's saturated bands, a version's dead mask; records of the format before (no masks) still read, and
the gather withdraws a partial copy whose every band is dead."""

from __future__ import annotations

import hashlib

import msgpack

from neardup_core.dedup.gather import Gather, UrlState, VersionState
from neardup_core.dedup.rule import ALL_BANDS, Partial, named_partials
from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.index.bucket import Answer, Notice
from neardup_core.settings import CoreSettings
from streams.kafka.records import decode_gather, encode_gather

T0 = 1_700_000_000_000
SETTINGS = CoreSettings(k=3, tables="k3-b4", minhash=True, partial_copies=True)


def fetch(url: str, text: str, at: int = T0) -> Fetch:
    return Fetch(url, url.split("/")[2], at, 0.0, hashlib.sha256(f"{url}{text}".encode()).hexdigest(), text, 0x1234)


def page(url: str, text: str) -> PageVersion:
    version = fetch(url, text).version
    assert version is not None
    return version


def test_masks_travel_in_gather_records_and_the_format_before_reads_without_them() -> None:
    held = Partial(page("https://a.example/x", "a" * 64), 0.75, 0b1010)
    answer = Answer("https://b.example/y", b"v" * 12, T0, (0x100, 0x101), None, (held,), 0b100)
    told = Notice("https://b.example/y", b"v" * 12, None, None, 0b1000)
    found = Notice("https://b.example/y", b"v" * 12, None, held)
    assert decode_gather(encode_gather([answer, told, found])) == [answer, told, found]
    before = msgpack.packb([5, [["A", [*answer.to_list()[:5], [held.to_list()[:2]]]],
                                ["R", found.to_list()[:3] + [held.to_list()[:2]]]]], use_bin_type=True)
    old_answer, old_found = decode_gather(before)
    assert isinstance(old_answer, Answer) and old_answer.dead == 0 and old_answer.partials[0].bands == ALL_BANDS
    assert isinstance(old_found, Notice) and old_found.dead == 0 and old_found.partial is not None
    assert old_found.partial.bands == ALL_BANDS


def test_a_version_keeps_its_dead_bands_and_every_text_it_holds() -> None:
    partials = tuple(Partial(page(f"https://o{i}.example/", f"{i:x}" * 64), 0.9 - i / 10, 1 << i) for i in range(5))
    version = VersionState(fetch("https://c.example/", "c" * 64), T0, 3, partials=partials, dead=0b101)
    again = VersionState.from_list(version.to_list())
    assert again.partials == partials and again.dead == 0b101
    assert [p.bands for p in named_partials(partials, again.dead)] == [0b10, 0b1000, 0b10000]


def test_the_gather_withdraws_a_partial_copy_whose_bands_all_saturate() -> None:
    gather = Gather(SETTINGS)
    state = UrlState()
    holder = fetch("https://copy.example/p", "c" * 64)
    probes, _ = gather.on_fetch(state, holder, T0)
    vid = bytes.fromhex(next(iter(state.versions)))
    original = Partial(page("https://news.example/a", "a" * 64), 0.8, 0b11)
    tables = tuple(sorted({p.table for p in probes}))
    first = gather.on_answer(state, Answer(holder.url, vid, T0, tables, None, (original,)), T0)
    assert [p["url"] for p in first[-1].decision.partial_of] == ["https://news.example/a"]
    assert gather.on_notice(state, Notice(holder.url, vid, None, None, 0b01), T0) == []  # band 1 still finds it
    withdrawn = gather.on_notice(state, Notice(holder.url, vid, None, None, 0b10), T0)
    assert withdrawn and withdrawn[-1].decision.partial_of == []
    replayed = gather.on_notice(state, Notice(holder.url, vid, None, None, 0b10), T0)
    assert [p.decision for p in replayed] == [withdrawn[-1].decision]  # a replay says the same again
