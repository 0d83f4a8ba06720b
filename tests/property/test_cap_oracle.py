"""With versions per URL capped (`CoreSettings.max_versions`), the engine decides as the oracle that lets
the same versions go in the same arrival order; recrawls whose bytes move under an unchanged main text
are no new versions; and the index holds at most the cap's versions of each URL."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_core.dedup.engine import Engine
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.hosts.urls import url_identity
from neardup_core.index.tables import SEED_DESIGN
from neardup_core.settings import CoreSettings
from neardup_core.testing.oracle import rule_problems
from tests.property.decisions import final_decisions, flip_bits

K = 3
T0 = 1_700_000_000_000


def changing_crawl(seed: int, n_clusters: int = 6) -> list[Fetch]:
    """Pages whose main text changes from crawl to crawl, into texts other URLs hold (the same text, or
    one within a few bits); each URL's fetches in fetch-time order, the URLs interleaved at random, with
    recrawls whose raw bytes moved and duplicate deliveries."""
    rng = random.Random(seed)
    per_url: list[list[Fetch]] = []
    for c in range(n_clusters):
        texts = [(f"{c:04x}{j:04x}" + "a" * 56, rng.getrandbits(64)) for j in range(6)]
        for i in range(rng.randint(1, 4)):
            url = f"https://h{rng.randrange(2)}.example/c{c}/" + "p/" * rng.randrange(3) + f"?v={i}"
            host = url.split("/")[2]
            imp = rng.choice([0.0, 0.0, 1.0])
            at = T0 + rng.randrange(1000)
            fetches: list[Fetch] = []
            for crawl in range(rng.randint(1, 7)):
                at += rng.randint(1, 1000)
                j = rng.randrange(len(texts))
                text, fp = texts[j]
                if rng.random() < 0.3:  # a near copy: another text within a few bits
                    text, fp = f"{c:04x}{i:04x}{crawl:04x}" + "b" * 52, flip_bits(fp, rng, rng.randint(1, 4))
                fetches.append(Fetch(url, host, at, imp, f"{c:04x}{i:04x}{crawl:04x}" + "c" * 52, text, fp))
                if rng.random() < 0.3:  # the same main text again, its raw bytes moved
                    at += 1
                    fetches.append(Fetch(url, host, at, imp, f"{c:04x}{i:04x}{crawl:04x}" + "d" * 52, text, fp))
            per_url.append(fetches)
    out: list[Fetch] = []
    while per_url:  # interleave the URLs, each in its own order
        queue = rng.choice(per_url)
        out.append(queue.pop(0))
        if rng.random() < 0.1:
            out.append(out[-1])  # a duplicate delivery
        if not queue:
            per_url.remove(queue)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), cap=st.sampled_from([1, 2, 3, 64]))
def test_capped_versions_give_the_capped_oracle(seed: int, cap: int) -> None:
    fetches = changing_crawl(seed)
    engine = Engine(CoreSettings(k=K, tables=SEED_DESIGN.name, minhash=False, max_versions=cap))
    decided = final_decisions(engine, fetches)
    assert rule_problems(decided, fetches, K, max_versions=cap) == []
    for identity in {url_identity(f.url) for f in fetches}:
        assert len(engine.urls.load(identity).versions) <= cap


def test_the_cap_bites_in_these_crawls() -> None:
    """Some URL holds more main texts than a cap of 2 keeps, and some verdict depends on it."""
    from neardup_core.testing.oracle import oracle_from_fetches

    differ = 0
    for seed in range(30):
        fetches = changing_crawl(seed)
        capped, uncapped = oracle_from_fetches(fetches, K, max_versions=1), oracle_from_fetches(fetches, K)
        differ += sum(capped[u][0] != uncapped[u][0] for u in capped)
    assert differ > 0
