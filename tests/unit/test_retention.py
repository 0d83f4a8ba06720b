"""Retention (`neardup_core/dedup/retention.py`, `index/expiry.py`): the sweep removes exactly the
expired versions' index entries, records and URL states, keeps group summaries consistent, and a page
arriving after expiry is decided as if the expired versions never existed (the oracle over the rest)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from neardup_core.dedup.engine import Engine
from neardup_core.dedup.gather import Gather, UrlState, UrlStates
from neardup_core.dedup.retention import FUTURE_SLACK_MS, URL_CLOCK, URL_EXPIRY, read_clock
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import Answer, decode_page, decode_summary, probe_batch, probes_for, summary_of
from neardup_core.index.keys import (
    EXPIRY_HEADER,
    VERSION_ID_BYTES,
    VERSION_RECORD,
    expiry_key,
    group_of_key,
    version_record_key,
)
from neardup_core.settings import CoreSettings, SettingError
from neardup_core.store.memory import MemoryStore
from neardup_core.testing.oracle import oracle_from_fetches
from streams.settings import Settings
from tests.property.decisions import final_decisions, flip_bits

K = 3
W = 10_000
T0 = 1_700_000_000_000
NOW = T0 + 10**8


def engine(window_ms: int | None = W) -> Engine:
    return Engine(CoreSettings(k=K, retention_ms=window_ms))


def crawl(seed: int, start: int, span: int, bases: list[int], tag: str) -> list[Fetch]:
    """Pages near or equal to `bases` (some exact, some digest only), fetched within [start, start + span)."""
    rng = random.Random(seed)
    out = []
    for i in range(40):
        c = rng.randrange(len(bases))
        kind = rng.random()
        fp = bases[c] if kind < 0.3 else flip_bits(bases[c], rng, rng.randint(1, 4))
        text = f"{c:04x}" + "0" * 60 if kind < 0.3 else f"{tag}{i:04x}" + "1" * 59
        host = f"h{rng.randrange(3)}.example"
        url = f"{rng.choice(['http', 'https'])}://{host}/{tag}/{i}" + "/p" * rng.randrange(3)
        body = f"{tag}{i:06x}".ljust(64, "2")
        out.append(Fetch(url, host, start + rng.randrange(span), rng.choice([0.0, 1.0]), body, text,
                         None if kind > 0.9 else fp))
    return sorted(out, key=lambda f: f.fetched_at_ms)


def decide_all(e: Engine, fetches: list[Fetch]) -> dict[str, tuple]:
    """URL -> (verdict, duplicate_of, distance, jaccard) of its last decision (a URL whose state expired
    starts again at revision 1, so `final_decisions`' check that revisions grow does not apply)."""
    latest: dict[str, tuple] = {}
    for f in fetches:
        for d, _ in e.decide(f, now_ms=NOW):
            assert d.complete
            latest[d.url] = (d.verdict, d.duplicate_of, d.distance, d.jaccard)
    return latest


def index_versions(store: MemoryStore) -> dict[bytes, int]:
    """Version id -> first fetch of every version record in an index store."""
    return {key[1:]: decode_page(value).fetched_at_ms for key, value in store.items() if key[0] == VERSION_RECORD}


def check_index(store: MemoryStore) -> None:
    """Every entry has its record and every record its expiry key; every group of two or more entries
    has the summary its entries give (`summary_of`), and no other group has one."""
    records = {vid: decode_page(raw) for key, raw in store.items() if key[0] == VERSION_RECORD
               for vid in [key[1:]]}
    expiry = {key[len(EXPIRY_HEADER) + 8:] for key, _ in store.items() if key.startswith(EXPIRY_HEADER)}
    assert expiry == set(records)
    groups: dict[bytes, list[bytes]] = {}
    summaries: dict[bytes, bytes] = {}
    for key, value in store.items():
        if key[0] >= VERSION_RECORD:
            continue
        group = group_of_key(key)
        if key == group:
            summaries[group] = value
        else:
            assert len(key) == len(group) + VERSION_ID_BYTES
            groups.setdefault(group, []).append(key[len(group):])
    for group, vids in groups.items():
        assert all(v in records for v in vids), "an entry without its version record"
        if len(vids) >= 2:
            want = [m.version_id for m in summary_of([records[v] for v in vids])]
            assert [m.version_id for m in decode_summary(summaries[group])] == want
        else:
            assert group not in summaries
    assert set(summaries) <= set(groups)


def test_the_sweep_removes_exactly_the_expired_versions_and_url_states() -> None:
    rng = random.Random(3)
    bases = [rng.getrandbits(64) for _ in range(6)]
    old, mid = crawl(1, T0, 1000, bases, "a"), crawl(2, T0 + 8000, 1000, bases, "c")
    e = engine()
    decide_all(e, old + mid)
    index, urls = e.index, e.urls.store
    assert isinstance(index, MemoryStore) and isinstance(urls, MemoryStore)
    before = index_versions(index)
    assert len(before) == len({(url_identity(f.url), f.body_sha256) for f in old + mid})
    check_index(index)

    late = Fetch("https://z.example/late", "z.example", T0 + 12_500, 0.0, "f" * 64, "e" * 64, rng.getrandbits(64))
    e.decide(late, now_ms=NOW)
    horizon = T0 + 12_500 - W
    after = index_versions(index)
    assert set(after) == {vid for vid, at in before.items() if at >= horizon} | {late.version.version_id}  # type: ignore[union-attr]
    assert e.expired.versions == len(before) + 1 - len(after)
    check_index(index)
    kept_urls = {url_identity(f.url) for f in mid} | {url_identity(late.url)}
    states = {key.decode() for key, _ in urls.items() if key[:1] not in (URL_EXPIRY, URL_CLOCK[:1])}
    assert states == kept_urls
    assert e.expired.urls == len({url_identity(f.url) for f in old} - kept_urls)
    assert {key[9:].decode() for key, _ in urls.items() if key[:1] == URL_EXPIRY} == kept_urls
    assert read_clock(urls, URL_CLOCK) == T0 + 12_500


def test_a_page_after_expiry_is_decided_as_if_the_expired_versions_never_existed() -> None:
    rng = random.Random(5)
    bases = [rng.getrandbits(64) for _ in range(8)]
    old, mid = crawl(11, T0, 1000, bases, "a"), crawl(12, T0 + 8000, 1000, bases, "c")
    new = crawl(13, T0 + 12_000, 1000, bases, "b")
    # and the old URLs fetched again with their old bodies: new versions now
    new += [dataclasses.replace(f, fetched_at_ms=T0 + 12_000 + i) for i, f in enumerate(old[:10])]
    new.sort(key=lambda f: f.fetched_at_ms)
    e = engine()
    decided = decide_all(e, old + mid + new)
    want = oracle_from_fetches(mid + new, K)  # every old version had expired when the new pages came
    latest = {url_identity(f.url) for f in new}
    got = {url_identity(u): d for u, d in decided.items() if url_identity(u) in latest}
    assert got.keys() == latest
    assert {u: d[0] for u, d in got.items()} == {u: want[u][0] for u in latest}
    unexpired = {url_identity(f.url) for f in mid + new}
    assert all(d[1] is None or url_identity(d[1]) in unexpired for d in got.values())
    # the oracle over every version would say otherwise for some: the retention made a difference
    everything = oracle_from_fetches(old + mid + new, K)
    assert any(everything[u][0] != want[u][0] for u in latest)


def test_with_retention_off_nothing_expires_and_no_expiry_keys_are_written() -> None:
    rng = random.Random(3)
    bases = [rng.getrandbits(64) for _ in range(6)]
    fetches = crawl(1, T0, 1000, bases, "a") + crawl(2, T0 + 50_000, 1000, bases, "c")
    e = engine(None)
    final_decisions(e, fetches)
    assert isinstance(e.index, MemoryStore) and isinstance(e.urls.store, MemoryStore)
    assert len(index_versions(e.index)) == len({(url_identity(f.url), f.body_sha256) for f in fetches})
    assert not any(k.startswith(EXPIRY_HEADER) for k, _ in e.index.items())
    assert not any(k[:1] in (URL_EXPIRY, URL_CLOCK[:1]) for k, _ in e.urls.store.items())
    assert e.expired.versions == e.expired.urls == 0


def test_a_fetch_dated_far_in_the_future_moves_the_clock_only_a_day_past_the_wall_clock() -> None:
    e = engine(DAY := 86_400_000)
    page = Fetch("https://a.example/", "a.example", T0, 0.0, "a" * 64, "b" * 64, 12345)
    e.decide(page, now_ms=T0)
    wrong = Fetch("https://b.example/", "b.example", T0 + 80 * 365 * DAY, 0.0, "c" * 64, "d" * 64, 999)
    e.decide(wrong, now_ms=T0)
    assert read_clock(e.urls.store, URL_CLOCK) == T0 + FUTURE_SLACK_MS
    assert page.version is not None and page.version.version_id in index_versions(e.index)  # type: ignore[arg-type]


def test_a_url_state_keeps_its_decision_while_its_expired_versions_go() -> None:
    e = engine()
    url = "https://a.example/x"
    e.decide(Fetch(url, "a.example", T0, 0.0, "a" * 64, "b" * 64, 1), now_ms=NOW)
    e.decide(Fetch(url, "a.example", T0 + 9000, 0.0, "a" * 64, "b" * 64, 1), now_ms=NOW)  # a recrawl
    e.decide(Fetch("https://o.example/", "o.example", T0 + 10_500, 0.0, "c" * 64, "d" * 64, 7), now_ms=NOW)
    state = UrlState.from_bytes(e.urls.store.get(url_identity(url).encode()))
    assert state.published is not None and state.revision == 2 and state.seen_ms == T0 + 9000
    assert e.urls.load(url).versions == {}  # first fetched before the horizon: gone when loaded
    # fetched again: a new version, probed again, the decision's revision goes on growing
    out = e.decide(Fetch(url, "a.example", T0 + 11_000, 0.0, "a" * 64, "b" * 64, 1), now_ms=NOW)
    assert [d.revision for d, _ in out] == [3]


def test_a_fetch_older_than_the_window_gets_its_decision_when_its_answers_come_later() -> None:
    """The stream's order: the fetch in one record, its answers in later ones, sweeps in between."""
    core = CoreSettings(k=K, minhash=False, retention_ms=W)
    rule, store = Gather(core), MemoryStore()
    states = UrlStates(store, core.retention)
    states.horizon_ms = T0 + 50_000  # the clock is far past this fetch
    late = Fetch("https://a.example/old", "a.example", T0, 0.0, "a" * 64, "b" * 64, 0xFFFF)
    state = states.load(late.url)
    probes, published = rule.on_fetch(state, late, NOW)
    assert probes and not published
    states.save(late.url, state)
    assert states.expire(10) == []  # waiting for answers: kept
    state = states.load(late.url)
    for probe in probes:
        published += rule.on_answer(state, Answer(late.url, probe.page.version_id, late.fetched_at_ms,
                                                  (probe.table,), None), NOW)
    assert [(d.verdict, d.complete) for d, _ in published] == [("unique", True)]
    states.save(late.url, state)
    assert [identity for identity, _ in states.expire(10)] == [url_identity(late.url)]  # then forgotten
    assert store.get(url_identity(late.url).encode()) is None


def test_a_body_fetched_again_after_its_version_expired_replaces_a_record_a_lagging_partition_still_holds() -> None:
    """A worker's index partition whose clock lags may still hold the record the URL's state let go;
    the probe of the new version (first fetched more than the window later) replaces it."""
    design = CoreSettings(k=K, minhash=False).design
    first = Fetch("https://a.example/x", "a.example", T0, 0.0, "a" * 64, "b" * 64, 0xFFFF).version
    assert first is not None
    store = MemoryStore()
    probe_batch(store, probes_for(design, first), design, K, T0 - W, W)
    again = first.with_fetched_at(T0 + W + 1)
    probe_batch(store, probes_for(design, again), design, K, T0 - 1, W)  # this partition's horizon: not past T0
    record = store.get(version_record_key(first.version_id))
    assert record is not None and decode_page(record).fetched_at_ms == T0 + W + 1
    assert store.get(expiry_key(T0, first.version_id)) is None
    assert store.get(expiry_key(T0 + W + 1, first.version_id)) == b""
    # within the window, the earliest fetch wins as always
    probe_batch(store, probes_for(design, first.with_fetched_at(T0 + W)), design, K, T0 - 1, W)
    record = store.get(version_record_key(first.version_id))
    assert record is not None and decode_page(record).fetched_at_ms == T0 + W


@pytest.mark.parametrize("value", ["-1", "x", "36601", "nan"])
def test_the_retention_setting_is_checked(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUP_RETENTION_DAYS", value)
    with pytest.raises(SettingError, match="NEARDUP_RETENTION_DAYS"):
        Settings()


@pytest.mark.parametrize(("value", "window_ms"), [("", None), ("off", None), ("0", None), ("7", 7 * 86_400_000),
                                                  ("0.5", 43_200_000)])
def test_the_retention_setting_reaches_the_core(value: str, window_ms: int | None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUP_RETENTION_DAYS", value)
    retention = Settings().core.retention
    assert (retention.window_ms if retention else None) == window_ms


def test_core_retention_is_checked() -> None:
    with pytest.raises(SettingError, match="retention_ms"):
        CoreSettings(retention_ms=0)
