"""Recrawls by main text (issue 21): a fetch whose raw bytes moved while its main text stayed is no new
version, and the versions a URL keeps are capped."""

from __future__ import annotations

from neardup_core.dedup.engine import Engine
from neardup_core.dedup.gather import Gather, UrlState
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import fingerprint
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import Probe
from neardup_core.index.tables import SEED_DESIGN
from neardup_core.ingest.event import FetchedPage
from neardup_core.settings import CoreSettings
from neardup_core.store.memory import MemoryStore
from neardup_core.timefmt import ms_to_rfc3339

T0 = 1_700_000_000_000
SETTINGS = CoreSettings(k=3, tables=SEED_DESIGN.name)
ARTICLE = "".join(
    f"<p>Paragraph {i} of the article explains how the river town rebuilt its old stone bridge after the "
    f"spring flood of that year, and why the engineers chose the slower method that kept the arches.</p>"
    for i in range(8))


def page_html(token: int) -> bytes:
    """One article whose raw bytes rotate outside its main text: a token in a script, an ad block (a
    banner) beside the article, and a render time in an attribute."""
    ad = f"<a href='/ad/click?id={token:06d}'><img src='/ad/banner-{token % 13}.png' alt='' width='728'></a>"
    return (f"<html><head><title>Bridge</title><script>window.csrf = 'tok-{token:08x}';</script></head>"
            f"<body data-rendered='{token}'><nav class='ad'>{ad}</nav>"
            f"<article><h1>The bridge</h1>{ARTICLE}</article></body></html>").encode()


def fetched(url: str, token: int, at: int) -> Fetch:
    return fingerprint(FetchedPage(url=url, body=page_html(token), fetched_at_ms=at, content_type="text/html"),
                       SETTINGS)


def index_entries(engine: Engine) -> int:
    assert isinstance(engine.index, MemoryStore)
    return sum(1 for _ in engine.index.scan(b"", b"\xff" * 64))


def url_state(engine: Engine, url: str) -> UrlState:
    return engine.urls.load(url_identity(url))


def test_300_recrawls_whose_bytes_rotate_but_main_text_stays_are_one_version() -> None:
    engine = Engine(SETTINGS)
    canonical = "https://news.example/bridge"
    (first,) = engine.decide(fetched(canonical, 0, T0), T0)
    assert first.decision.verdict == "unique"
    copy = "https://news.example/archive/2026/bridge?utm=feed"
    fetches = [fetched(copy, token, T0 + 1000 * token) for token in range(1, 301)]
    assert len({f.body_sha256 for f in fetches}) == 300 and len({f.text_sha256 for f in fetches}) == 1
    engine.decide(fetches[0], T0)
    entries = index_entries(engine)
    said = set()
    for f in fetches:
        out = engine.decide(f, T0)
        assert len(out) == 1
        d = out[0].decision
        said.add((d.verdict, d.duplicate_of, d.distance, d.text_sha256, d.body_sha256))
        assert d.fetched_at == ms_to_rfc3339(f.fetched_at_ms), "the decision carries the latest fetch"
    assert index_entries(engine) == entries, "a recrawl by main text writes no index entry"
    state = url_state(engine, copy)
    assert len(state.versions) == 1
    assert said == {("exact_duplicate", canonical, 0, fetches[0].text_sha256, fetches[0].body_sha256)}
    (version,) = state.versions.values()
    assert version.last_fetch_ms == fetches[-1].fetched_at_ms and version.fetch.fetched_at_ms == T0 + 1000


def test_a_recrawl_by_main_text_takes_the_unchanged_body_path() -> None:
    gather = Gather(SETTINGS)
    state = UrlState()
    first = fetched("https://a.example/x", 1, T0)
    probes, _ = gather.on_fetch(state, first, T0)
    assert probes and not any(p.remove for p in probes)
    again, _ = gather.on_fetch(state, fetched("https://a.example/x", 2, T0 + 60_000), T0)
    assert again == probes, "the version's round is still open: its probes go out again, for its first body"
    assert len(state.versions) == 1


def test_an_earlier_fetch_of_the_same_main_text_moves_the_version_to_its_body() -> None:
    gather = Gather(SETTINGS)
    state = UrlState()
    later, earlier = fetched("https://a.example/x", 2, T0 + 5000), fetched("https://a.example/x", 1, T0)
    gather.on_fetch(state, later, T0)
    probes, _ = gather.on_fetch(state, earlier, T0)
    removed = [p for p in probes if p.remove]
    assert removed and all(p.page.body_sha256 == later.body_sha256 for p in removed)
    assert all(p.page.body_sha256 == earlier.body_sha256 for p in probes if not p.remove)
    assert probes[:len(removed)] == removed, "removals go before the new round's probes"
    (version,) = state.versions.values()
    assert version.fetch == earlier and version.last_fetch_ms == T0 + 5000


def changed(url: str, i: int) -> Fetch:
    """The i-th main text of a page whose text changes on every crawl."""
    simhash = (0x9E3779B97F4A7C15 * (i + 1)) % 2**64
    return Fetch(url, "a.example", T0 + 1000 * i, 0.0, f"{i:064x}", f"{i:063x}f", simhash)


def test_versions_per_url_are_capped_and_their_index_entries_removed() -> None:
    settings = CoreSettings(k=3, tables=SEED_DESIGN.name, max_versions=3, minhash=False)
    engine = Engine(settings)
    url = "https://a.example/changing"
    counts = []
    for i in range(40):
        engine.decide(changed(url, i), T0)
        counts.append(index_entries(engine))
        assert len(url_state(engine, url).versions) <= 3
    assert counts[2:] == [counts[2]] * len(counts[2:]), "after the cap, a new version replaces the oldest"
    kept = sorted(v.fetch.fetched_at_ms for v in url_state(engine, url).versions.values())
    assert kept == [T0 + 1000 * i for i in (37, 38, 39)]


def test_a_page_matching_a_version_let_go_is_unique_and_one_matching_a_kept_one_is_not() -> None:
    settings = CoreSettings(k=3, tables=SEED_DESIGN.name, max_versions=2, minhash=False)
    engine = Engine(settings)
    url = "https://a.example/c"  # short: ranks better than the copies below
    for i in range(5):
        engine.decide(changed(url, i), T0)
    gone, kept = changed("https://b.example/long/copy", 0), changed("https://b.example/long/copy2", 4)
    [d_gone] = [p.decision for p in engine.decide(Fetch(gone.url, "b.example", T0 + 10**6, 0.0, "e" * 64,
                                                         gone.text_sha256, gone.simhash), T0)]
    [d_kept] = [p.decision for p in engine.decide(Fetch(kept.url, "b.example", T0 + 10**6, 0.0, "f" * 64,
                                                         kept.text_sha256, kept.simhash), T0)]
    assert d_gone.verdict == "unique"
    assert (d_kept.verdict, d_kept.duplicate_of) == ("exact_duplicate", url)


def test_a_removal_travels_as_a_probe() -> None:
    f = changed("https://a.example/x", 1)
    assert f.version is not None
    plain = Probe(1, b"a", b"b", b"g", f.version)
    removal = Probe(1, b"a", b"b", b"g", f.version, remove=True)
    assert len(plain.to_list()) == 5, "probes without removal keep their wire form"
    assert Probe.from_list(plain.to_list()) == plain and Probe.from_list(removal.to_list()) == removal


def test_a_removal_survives_the_probes_record() -> None:
    from streams.kafka import records

    f = changed("https://a.example/x", 1)
    assert f.version is not None
    probes = [Probe(1, b"a", b"b", b"g", f.version), Probe(2, b"c", b"d", b"h", f.version, remove=True)]
    [raw] = list(records.probe_records(probes))
    assert records.decode_probes(raw) == probes
