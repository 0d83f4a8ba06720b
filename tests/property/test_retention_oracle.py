"""With a retention, pages whose versions are created after the old ones expired are decided as the
oracle decides over the unexpired versions only (a version expires by its first fetch: recrawls do not
renew it), in any order within each phase, with duplicate
deliveries, and also when the sweep lags behind (a few versions per step)."""

from __future__ import annotations

import dataclasses
import hashlib
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_core.dedup.engine import Engine
from neardup_core.dedup.retention import Retention
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.hosts.urls import url_identity
from neardup_core.settings import CoreSettings
from neardup_core.testing.oracle import oracle_from_fetches
from tests.property.test_engine_oracle import make_crawl

K = 3
W = 10_000
T0 = 1_700_000_000_000
NOW = T0 + 10**8


def phase(seed: int, start: int) -> list[Fetch]:
    """A crawl (`make_crawl`: clusters, recrawls, other bodies, skipped pages) squeezed into [start, start + 1000).

    A body has one main text (extraction is a function of the body), and a recrawl with the main text of a
    version its URL holds is no new version: the crawls of two seeds put one body under two main texts at
    one URL, which no real crawl can, so each body here is named by its body and its main text together."""
    return [dataclasses.replace(f, fetched_at_ms=start + (f.fetched_at_ms - T0 + 500) // 20,
                                body_sha256=hashlib.sha256(f"{f.body_sha256}{f.text_sha256}".encode()).hexdigest())
            for f in make_crawl(seed)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), order_seed=st.integers(0, 10_000), sweep_max=st.sampled_from([1, 3, 256]))
def test_pages_after_expiry_are_decided_by_the_oracle_over_the_unexpired(seed: int, order_seed: int,
                                                                         sweep_max: int) -> None:
    old, mid, new = phase(seed, T0), phase(seed + 1, T0 + 8000), phase(seed + 2, T0 + 12_000)
    # old expires once the new phase starts (its clock >= T0 + 12000, the horizon >= T0 + 2000); mid does not
    rng = random.Random(order_seed)
    for part in (old, mid, new):
        part += rng.sample(part, len(part) // 5)  # duplicate deliveries
        rng.shuffle(part)
    core = CoreSettings(k=K, minhash=False, retention_ms=W)
    core.__dict__["retention"] = Retention(W, sweep_max)  # a sweep that lags behind
    engine = Engine(core)
    decided: dict[str, tuple] = {}
    for f in old + mid + new:
        for d, _ in engine.decide(f, now_ms=NOW):
            decided[url_identity(d.url)] = (d.verdict, d.duplicate_of)
    # a version is (URL, body) first fetched in the old phase (recrawls in mid do not renew it) expires;
    # fetched again in the new phase, it is a new version
    old_versions = {(url_identity(f.url), f.body_sha256) for f in old}
    unexpired = [f for f in mid if (url_identity(f.url), f.body_sha256) not in old_versions] + new
    want = oracle_from_fetches(unexpired, K)
    # the URLs whose decision is about a version first fetched in the new phase (an unchanged mid
    # version keeps the decision it got while the old versions were still there)
    first: dict[tuple[str, str], int] = {}
    latest: dict[str, Fetch] = {}
    for f in unexpired:
        key = (url_identity(f.url), f.body_sha256)
        first[key] = min(first.get(key, f.fetched_at_ms), f.fetched_at_ms)
        u = key[0]
        if u not in latest or (f.fetched_at_ms, f.body_sha256) > (latest[u].fetched_at_ms, latest[u].body_sha256):
            latest[u] = f
    fresh = {u for u, f in latest.items() if first[(u, f.body_sha256)] >= T0 + 12_000}
    assert fresh
    problems = [f"{u}: decided {decided.get(u)}, the oracle over the unexpired says {want[u]}"
                for u in sorted(fresh) if decided.get(u, (None,))[0] != want[u][0]]
    assert not problems, problems
    assert all(decided[u][1] is None or url_identity(decided[u][1]) in {url_identity(f.url) for f in unexpired}
               for u in fresh)
