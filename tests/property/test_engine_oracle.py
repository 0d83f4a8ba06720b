"""The decision rule is independent of arrival order, duplicates and recrawls (G2, G3 in one process),
and the work a cluster costs is bounded in any arrival order."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_core.dedup.engine import Engine
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.index.tables import SEED_DESIGN, TableDesign
from neardup_core.settings import CoreSettings
from neardup_core.testing.oracle import oracle_from_fetches, rule_problems
from tests.property.decisions import final_decisions, flip_bits

K = 3



def make_crawl(seed: int, n_clusters: int = 12, hosts: int = 3) -> list[Fetch]:
    """Clusters of near and exact copies, recrawls, pages checked by digest only, skipped pages."""
    rng = random.Random(seed)
    out: list[Fetch] = []
    t0 = 1_700_000_000_000
    for c in range(n_clusters):
        base = rng.getrandbits(64)
        text = f"a{c:04x}" + "0" * 59
        for i in range(rng.randint(1, 5)):
            host = f"h{rng.randrange(hosts)}.example"
            scheme = rng.choice(["http", "https"])
            url = f"{scheme}://{host}/c{c}/" + "/".join("p" for _ in range(rng.randrange(3))) + f"?v={i}"
            kind = rng.random()
            if kind < 0.2:
                fp, tsha = base, text  # same text
            elif kind < 0.3:
                fp, tsha = None, text  # too few features: digest only
            else:
                fp, tsha = flip_bits(base, rng, rng.randint(0, 5)), f"{c:04x}{i:04x}" + "1" * 56
            body = f"{c:08x}{i:08x}" + "2" * 48
            at = t0 + rng.randrange(10_000)
            imp = rng.choice([0.0, 0.0, 1.0])
            f = Fetch(url, host, at, imp, body, tsha, fp)
            out.append(f)
            if rng.random() < 0.3:  # a recrawl of the same body, earlier or later
                out.append(Fetch(url, host, at + rng.randint(-500, 5000), imp, body, tsha, fp))
            if rng.random() < 0.15:  # a recrawl with another body
                out.append(Fetch(url, host, at + 7000, imp, "3" * 64, f"{c:04x}{i:04x}" + "4" * 56,
                                 flip_bits(base, rng, 1)))
            if rng.random() < 0.1:
                out.append(Fetch(url + "&gone", host, at, imp, "5" * 64, None, None, "HTTP status 404"))
    return out



@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), order_seed=st.integers(0, 10_000), design_blocks=st.sampled_from([4, 5, 6]))
def test_any_order_gives_the_oracle(seed: int, order_seed: int, design_blocks: int) -> None:
    fetches = make_crawl(seed)
    shuffled = fetches + random.Random(order_seed).sample(fetches, len(fetches) // 4)  # duplicate deliveries
    random.Random(order_seed).shuffle(shuffled)
    engine = Engine(CoreSettings(k=K, tables=TableDesign(K, design_blocks).name))
    assert rule_problems(final_decisions(engine, shuffled), fetches, K) == []


def cluster(n: int, *, same_text: bool, seed: int = 0) -> list[Fetch]:
    """n copies of one page under n URLs (a soft-404 page, a calendar trap): the same text, or texts
    that differ but have the same SimHash (distance 0), in the worst order: each better than all before."""
    rng = random.Random(seed)
    fp = rng.getrandbits(64)
    out = []
    for i in range(n):
        url = f"https://trap.example/{'x' * (n - i)}"  # shorter URLs later: each new copy ranks best
        text = "a" * 64 if same_text else f"{i:064x}"
        out.append(Fetch(url, "trap.example", 1_700_000_000_000 + i, 0.0, f"{i:064x}", text, fp))
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 60), same_text=st.booleans(), order_seed=st.integers(0, 10_000) | st.none())
def test_a_cluster_in_any_order_costs_at_most_three_decisions_per_url(n: int, same_text: bool,
                                                                      order_seed: int | None) -> None:
    fetches = cluster(n, same_text=same_text)
    if order_seed is not None:
        random.Random(order_seed).shuffle(fetches)
    engine = Engine(CoreSettings(k=K, tables=SEED_DESIGN.name))
    lines: dict[str, int] = {}
    decided: dict[str, tuple] = {}
    for f in fetches:
        for d, _ in engine.decide(f):
            lines[d.url] = lines.get(d.url, 0) + 1
            decided[d.url] = (d.verdict, d.duplicate_of, d.distance)
    assert rule_problems(decided, fetches, K, chains=True) == []
    assert max(lines.values()) <= 3, sorted(lines.values())[-5:]


def test_crawl_has_every_kind_of_decision() -> None:
    expected = oracle_from_fetches(make_crawl(1, n_clusters=40), K)
    verdicts = {v[0] for v in expected.values()}
    assert verdicts == {"unique", "exact_duplicate", "near_duplicate", "skipped"}


def test_state_dir_continues(tmp_path) -> None:
    fetches = make_crawl(5, n_clusters=20)
    half = len(fetches) // 2
    config = CoreSettings(k=K, tables=SEED_DESIGN.name)
    first = Engine(config, tmp_path)
    latest = final_decisions(first, fetches[:half])
    first.close()
    second = Engine(config, tmp_path)
    latest.update(final_decisions(second, fetches[half:]))
    assert rule_problems(latest, fetches, K) == []
