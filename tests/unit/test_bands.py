"""LSH bands as tables of the index: design names, band probes and keys, and the rule's MinHash match."""

from __future__ import annotations

import pytest

from neardup_core.dedup.rule import Match, match_of
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.index.bucket import probes_for, table_ids
from neardup_core.index.keys import BAND_TABLE_BASE, TEXT_TABLE, group_of_key
from neardup_core.index.tables import BandDesign, TableDesign, design_named
from neardup_core.settings import CoreSettings, SettingError
from streams.kafka import records


def test_band_designs() -> None:
    lsh = BandDesign(16, 4, 0.5)
    assert lsh.permutations == 64 and lsh.name == "l16x4-j50"
    assert 0.63 < lsh.band_probability(0.5) < 0.65
    with pytest.raises(ValueError):
        BandDesign(16, 4, 0.555)


def test_design_names_with_bands() -> None:
    design = TableDesign(3, 5, BandDesign(16, 4, 0.6))
    assert design.name == "k3-b5-t10-l16x4-j60"
    assert design_named(design.name) == design
    assert design_named("k3-b5") == TableDesign(3, 5)
    assert CoreSettings(minhash=True, bands=8, rows=5, jaccard=0.7).design.name == "k3-b5-t10-l8x5-j70"
    assert CoreSettings(minhash=False).design.lsh is None
    with pytest.raises(SettingError):
        CoreSettings(minhash=True, tables="k3-b5-t10-l8x5-j70")  # the name says other bands than the settings
    for bad in (dict(bands=0), dict(rows=0), dict(jaccard=0.0), dict(jaccard=1.5), dict(minhash="yes")):
        with pytest.raises(SettingError):
            CoreSettings(**bad)  # type: ignore[arg-type]


def fetch(sig: bytes | None, url: str = "https://a.example/x") -> Fetch:
    return Fetch(url, "a.example", 1_700_000_000_000, 0.5, "1" * 64, "2" * 64, 12345, minhash=sig)


def test_band_probes() -> None:
    version = fetch(bytes(range(CoreSettings().bands * CoreSettings().rows))).version
    assert version is not None
    design = CoreSettings(minhash=True).design
    probes = probes_for(design, version)
    assert design.lsh is not None
    bands = design.lsh.bands
    assert len(probes) == design.table_count + bands + 2 == len(table_ids(design, version))
    assert records.decode_probes(records.encode_probes(probes)) == probes
    band = [p for p in probes if p.table >= BAND_TABLE_BASE and p.table < TEXT_TABLE]
    assert len(band) == bands and all(group_of_key(p.entry_key) == p.group and len(p.group) == 13 for p in band)
    assert all(p.lo <= p.group < p.hi for p in probes)
    # a page without a signature (MinHash was off when it was fingerprinted) is probed without bands
    plain = fetch(None).version
    assert plain is not None and len(table_ids(design, plain)) == design.table_count + 2


def test_a_match_names_its_candidate_without_the_signature() -> None:
    lsh = BandDesign(16, 4, 0.5)
    a, b = fetch(bytes(64), "https://a.example/").version, fetch(bytes(64), "https://b.example/y").version
    assert a is not None and b is not None
    b = type(b)(b.url, b.importance, b.fetched_at_ms, "3" * 64, "4" * 64, 12345 ^ 0xFFFF, b.minhash)
    m = match_of(b, a, 3, lsh)
    assert m is not None and not m.exact and m.distance is None and m.jaccard == 1.0
    assert m.candidate.minhash is None and m.candidate.version_id == a.version_id
    assert Match.from_list(m.to_list()) == m
    assert match_of(b, a, 3) is None  # MinHash off: 16 bits apart
