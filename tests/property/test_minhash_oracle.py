"""With MinHash on, the engine still decides exactly as the O(n^2) oracle: near = within k bits, or
sharing an LSH band with a Jaccard estimate >= J, in any arrival order, with duplicate deliveries and
recrawls; and a cluster of copies found only through a band costs a bounded number of decisions."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_core.dedup.engine import Engine
from neardup_core.dedup.rule import match_of
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.minhash import minhash
from neardup_core.index.bucket import first_shared_table
from neardup_core.index.tables import BandDesign, TableDesign
from neardup_core.settings import CoreSettings
from neardup_core.testing.oracle import oracle_from_fetches, rule_problems
from tests.property.decisions import final_decisions, flip_bits

K = 3
BANDS, ROWS, J = 8, 2, 0.5
LSH = BandDesign(BANDS, ROWS, J)



def edited(base: list[int], rng: random.Random, share: float) -> list[int]:
    """`base` with a fraction `share` of its elements replaced by new ones."""
    out = list(base)
    for i in rng.sample(range(len(out)), round(share * len(out))):
        out[i] = rng.getrandbits(64)
    return out


def signature(shingles: list[int]) -> bytes:
    sig = minhash(np.array(shingles, dtype=np.uint64), BANDS * ROWS)
    assert sig is not None
    return sig


def make_crawl(seed: int, n_clusters: int = 10, hosts: int = 3) -> list[Fetch]:
    """Clusters whose members relate by digest, by SimHash, by a band, by several or by none: the
    SimHash flips and the shingle edits are drawn independently, so every combination occurs (pages
    in one near bucket more than k bits apart that share a band, pages within k bits that share no
    band, ...), with recrawls, duplicate deliveries, pages checked by digest only, skipped pages."""
    rng = random.Random(seed)
    out: list[Fetch] = []
    t0 = 1_700_000_000_000
    for c in range(n_clusters):
        base_fp = rng.getrandbits(64)
        base_set = [rng.getrandbits(64) for _ in range(24)]
        text = f"a{c:04x}" + "0" * 59
        for i in range(rng.randint(1, 6)):
            host = f"h{rng.randrange(hosts)}.example"
            scheme = rng.choice(["http", "https"])
            url = f"{scheme}://{host}/c{c}/" + "/".join("p" for _ in range(rng.randrange(3))) + f"?v={i}"
            kind = rng.random()
            sig: bytes | None
            if kind < 0.15:
                fp, tsha, sig = base_fp, text, signature(base_set)  # same text
            elif kind < 0.25:
                fp, tsha, sig = None, text, None  # too few features: digest only
            else:
                fp = flip_bits(base_fp, rng, rng.choice([0, 1, 2, 3, 4, 6, 12, 30]))
                tsha = f"{c:04x}{i:04x}" + "1" * 56
                sig = signature(edited(base_set, rng, rng.choice([0.0, 0.0, 0.1, 0.2, 0.3, 0.5, 0.7])))
            body = f"{c:08x}{i:08x}" + "2" * 48
            at = t0 + rng.randrange(10_000)
            imp = rng.choice([0.0, 0.0, 1.0])
            f = Fetch(url, host, at, imp, body, tsha, fp, minhash=sig)
            out.append(f)
            if rng.random() < 0.3:  # a recrawl of the same body, earlier or later
                out.append(Fetch(url, host, at + rng.randint(-500, 5000), imp, body, tsha, fp, minhash=sig))
            if rng.random() < 0.15:  # a recrawl with another body
                out.append(Fetch(url, host, at + 7000, imp, "3" * 64, f"{c:04x}{i:04x}" + "4" * 56,
                                 flip_bits(base_fp, rng, 5), minhash=signature(edited(base_set, rng, 0.2))))
            if rng.random() < 0.1:
                out.append(Fetch(url + "&gone", host, at, imp, "5" * 64, None, None, "HTTP status 404"))
    return out



def minhash_settings(blocks: int = 4) -> CoreSettings:
    return CoreSettings(k=K, tables=TableDesign(K, blocks).name, minhash=True, bands=BANDS, rows=ROWS, jaccard=J)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), order_seed=st.integers(0, 10_000), design_blocks=st.sampled_from([4, 5, 6]))
def test_any_order_gives_the_oracle_with_minhash(seed: int, order_seed: int, design_blocks: int) -> None:
    fetches = make_crawl(seed)
    shuffled = fetches + random.Random(order_seed).sample(fetches, len(fetches) // 4)  # duplicate deliveries
    random.Random(order_seed).shuffle(shuffled)
    engine = Engine(minhash_settings(design_blocks))
    assert rule_problems(final_decisions(engine, shuffled), fetches, K, lsh=LSH) == []


def test_the_crawl_has_matches_of_every_kind() -> None:
    """The generator makes what the rule must tell apart: SimHash-only, band-only and both."""
    fetches = [f for seed in range(3) for f in make_crawl(seed, n_clusters=30)]
    pages = [v for f in fetches if (v := f.version) is not None]
    kinds = set()
    for a in pages:
        for b in pages:
            m = match_of(a, b, K, LSH)
            if m is not None and not m.exact:
                kinds.add((m.distance is not None, m.jaccard is not None))
    assert kinds == {(True, False), (False, True), (True, True)}
    with_minhash = oracle_from_fetches(fetches, K, LSH)
    without = oracle_from_fetches(fetches, K)
    assert sum(v[0] == "near_duplicate" for v in with_minhash.values()) > \
        sum(v[0] == "near_duplicate" for v in without.values())


def test_first_shared_table_is_a_table_whose_probe_finds_the_pair() -> None:
    """Two pages in one near bucket but more than k bits apart, that match through a band: the
    revision must come from the band table (the near probe skips the pair)."""
    design = minhash_settings().design
    assert design.lsh is not None
    rng = random.Random(3)
    shingles = [rng.getrandbits(64) for _ in range(30)]
    fp = rng.getrandbits(64)
    far = fp ^ 0xFF  # 8 bits apart, all in the lowest block: they share the other blocks' buckets
    a = Fetch("https://a.example/", "a.example", 1, 0.0, "1" * 64, "2" * 64, fp, minhash=signature(shingles)).version
    b = Fetch("https://b.example/x", "b.example", 2, 0.0, "3" * 64, "4" * 64, far,
              minhash=signature(shingles)).version
    assert a is not None and b is not None
    assert any(design.bucket(fp, t) == design.bucket(far, t) for t in range(design.table_count))
    assert first_shared_table(design, a, b) == design.lsh.table(0)
    m = match_of(b, a, K, design.lsh)
    assert m is not None and m.distance is None and m.jaccard == 1.0


def band_cluster(n: int, seed: int = 0) -> list[Fetch]:
    """n copies under n URLs that match only through their bands: one shingle set (one signature),
    different texts and SimHashes far apart, each copy better than all before."""
    rng = random.Random(seed)
    sig = signature([rng.getrandbits(64) for _ in range(30)])
    return [Fetch(f"https://trap.example/{'x' * (n - i)}", "trap.example", 1_700_000_000_000 + i, 0.0, f"{i:064x}",
                  f"{i + 1:064x}", rng.getrandbits(64), minhash=sig) for i in range(n)]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 60), order_seed=st.integers(0, 10_000) | st.none())
def test_a_band_only_cluster_in_any_order_costs_at_most_three_decisions_per_url(n: int, order_seed: int | None
                                                                                ) -> None:
    fetches = band_cluster(n)
    if order_seed is not None:
        random.Random(order_seed).shuffle(fetches)
    engine = Engine(minhash_settings())
    lines: dict[str, int] = {}
    decided: dict[str, tuple] = {}
    for f in fetches:
        for d, _ in engine.decide(f):
            lines[d.url] = lines.get(d.url, 0) + 1
            decided[d.url] = (d.verdict, d.duplicate_of, d.distance, d.jaccard)
    assert rule_problems(decided, fetches, K, chains=True, lsh=LSH) == []
    assert sum(v[0] == "near_duplicate" for v in decided.values()) == n - 1
    assert max(lines.values()) <= 3, sorted(lines.values())[-5:]
