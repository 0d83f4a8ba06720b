"""Issue 25, the model of a design built since (`NEARDUP_CONTAINMENT_BUCKET_TEXTS`, `index/bucket.py`,
`_saturation`; its cost: `bench_partial_cost.py`): "saturated containment buckets are not evidence". A
containment bucket (band, minimum) holding more than K distinct texts is skipped by probes, and the pairs it
found are withdrawn unless another bucket of at most K texts supports them. This measures, for several K, bucket
populations, the groups a page's probes would read, the labelled positives kept, saturations and their
retraction work, and what happens to an article copied by many pages.

    python bench/bench_containment_saturation.py build      # extract + sketch the corpus and the pairs, cached
    python bench/bench_containment_saturation.py report     # tables from the cache
    python bench/bench_containment_saturation.py popular    # one article copied by N pages
    python bench/bench_containment_saturation.py synthetic  # the generated crawls, in crawl order

The tables go to bench/results/containment-saturation*.md. Uses the project's own extraction
(`containment_pairs._main_text`, as scan), tokens, features and minima (`_tokens_digest_and_features`,
`text_minima`), size classes (`size_class`), and the rule (`partial_match`, `shared_minimum`) with
CoreSettings(partial_copies=True) (48 one-row bands, containment 0.5, MAX_SIZE_CLASSES 3). Measures
counts, not time.
"""

from __future__ import annotations

import pickle
import random
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path

import numpy as np

from neardup_core.dedup.rule import partial_match
from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.containment import MAX_SIZE_CLASSES, size_class, text_minima
from neardup_core.fingerprint.minhash import minhash
from neardup_core.fingerprint.page import _tokens_digest_and_features
from neardup_core.fingerprint.simhash import simhash64
from neardup_core.settings import CoreSettings
from neardup_core.testing import containment_pairs as cp
from neardup_core.testing.corpus import corpus_dir

RESULTS = Path(__file__).resolve().parent / "results"


def write_result(name: str, text: str) -> None:
    """The tables, under a line with the date and the command."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join(["python bench/bench_containment_saturation.py", *sys.argv[1:]])
    (RESULTS / name).write_text(f"Generated on {when} by `{command}`.\n\n{text}\n")

CACHE = Path(tempfile.gettempdir()) / "neardup-containment-saturation.pkl"
SETTINGS = CoreSettings(partial_copies=True)
DESIGN = SETTINGS.design
assert DESIGN.partial is not None
BANDS = DESIGN.partial.bands
THRESHOLD = DESIGN.partial.containment
KS = (4, 8, 16, 32, 64)
SEED = 25
POP_BINS = ((1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 32), (33, 10**9))


# ---------------------------------------------------------------- build
def sketch(text: str):
    toks, digest, features = _tokens_digest_and_features(text, SETTINGS)
    if features is None:
        return digest, None
    return digest, dict(shingles=len(features), minima=text_minima(toks),
                        minhash=minhash(features.hashes, SETTINGS.bands * SETTINGS.rows),
                        simhash=simhash64(features.hashes, features.weights))


def build() -> None:
    corpus = corpus_dir().resolve()
    seen: dict[str, cp._Text | None] = {}
    original = cp._main_text

    def recording(c, path):  # the corpus pages' main texts, as scan extracts them, recorded on the way
        if path not in seen:
            seen[path] = original(c, path)
        return seen[path]

    cp._main_text = recording
    made = cp.build_containment_pairs(corpus, sample=None, same_group=None, unrelated=1000, settings=SETTINGS)
    cp._main_text = original
    # every manifest page (build_containment_pairs with sample=None reads all of them)
    for page in cp.read_manifest(corpus):
        recording(corpus, page.path)
    texts: dict[str, dict | None] = {}
    corpus_digests: list[str] = []
    host_of: dict[str, str] = {}
    site = {p.path: p.site for p in cp.read_manifest(corpus)}
    for path, t in seen.items():
        if t is None:
            continue
        d, s = sketch(t.text)
        texts[d] = s
        if s is not None and d not in host_of:
            corpus_digests.append(d)
            host_of[d] = site[path]
    pairs = []
    made_digests: list[str] = []
    for p in made.pairs:
        da, sa = sketch(p.a)
        db, sb = sketch(p.b)
        texts.setdefault(da, sa)
        texts.setdefault(db, sb)
        if p.kind == cp.EMBEDDED and sa is not None and da not in host_of and da not in made_digests:
            made_digests.append(da)
        pairs.append((p.kind, da, db, p.exact, p.fraction, p.shingles_a, p.shingles_b))
    paragraphs = {}
    for path, t in seen.items():
        if t is not None and not t.fallback and t.words >= 50:
            paragraphs[path] = (site[path], t.language, t.paragraphs, sketch(t.text)[0])
    CACHE.write_bytes(pickle.dumps(dict(texts=texts, corpus=corpus_digests, made=made_digests, pairs=pairs,
                                        host=host_of, articles=made.articles, paragraphs=paragraphs)))
    print(f"texts {len(texts)}, corpus distinct indexed {len(corpus_digests)}, made {len(made_digests)}, "
          f"pairs {len(pairs)}")


# ---------------------------------------------------------------- analysis
class Index:
    """End-of-input buckets over a set of texts: (band, minimum) -> digests."""

    def __init__(self, digests, info):
        self.info = info
        self.buckets: dict[tuple[int, int], list[str]] = defaultdict(list)
        for d in digests:
            for band, m in enumerate(info[d]["mins"]):
                self.buckets[(band, m)].append(d)

    def pop(self, key) -> int:
        return len(self.buckets.get(key, ()))


def page_of(d: str, s: dict) -> PageVersion:
    return PageVersion(f"https://t.invalid/{d[:16]}", 0.0, 0, d, d, s["simhash"], s["minhash"], s["shingles"],
                       s["minima"])


def prep(texts):
    info = {}
    for d, s in texts.items():
        if s is None:
            continue
        mins = np.frombuffer(s["minima"], "<u4", BANDS).tolist()
        info[d] = dict(s, mins=mins, cls=size_class(s["shingles"]), page=page_of(d, s))
    return info


def window(info, a, b) -> bool:
    return abs(info[a]["cls"] - info[b]["cls"]) <= MAX_SIZE_CLASSES


def pop_table(idx: Index) -> tuple[list[int], int]:
    counts = [0] * len(POP_BINS)
    for members in idx.buckets.values():
        n = len(members)
        for i, (lo, hi) in enumerate(POP_BINS):
            if lo <= n <= hi:
                counts[i] += 1
    return counts, len(idx.buckets)


def reads_end(idx: Index, digests, k: int | None):
    """Per page: over its 48 buckets, the other texts in the bucket within +-3 size classes, counting a
    bucket only when its population (all size classes, end of input) <= k (all buckets when k is None)."""
    info = idx.info
    tot = 0
    mx = 0
    for d in digests:
        r = 0
        for band, m in enumerate(info[d]["mins"]):
            members = idx.buckets[(band, m)]
            if k is not None and len(members) > k:
                continue
            r += sum(1 for o in members if o != d and window(info, d, o))
        tot += r
        mx = max(mx, r)
    return tot / len(digests), mx


def online(order, info, k: int | None, count_retractions: bool = False):
    """Insert `order` one text at a time. A probe of bucket b by text p: the bucket's distinct texts so far
    (all size classes) n; after inserting p, if n + 1 > k the bucket is saturated and the probe reads 0
    groups; else it reads the earlier texts within +-3 classes. Saturation events: n goes k -> k + 1.
    With count_retractions, at each event: the pairs among the k + 1 texts within the size window (the
    pairs to re-examine), those the rule finds (partial_match, either way), and of those the ones with
    no other shared bucket still <= k (retracted)."""
    buckets: dict[tuple[int, int], list[str]] = defaultdict(list)
    reads = 0
    events = 0
    pairs_examined = 0
    found_at_event = 0
    retracted = 0
    for d in order:
        for band, m in enumerate(info[d]["mins"]):
            members = buckets[(band, m)]
            n = len(members)
            if k is None or n + 1 <= k:
                reads += sum(1 for o in members if window(info, d, o))
            members.append(d)
            if k is not None and n + 1 == k + 1:
                events += 1
                if count_retractions:
                    for a, b in combinations(members, 2):
                        if not window(info, a, b):
                            continue
                        pairs_examined += 1
                        pa, pb = info[a]["page"], info[b]["page"]
                        if partial_match(pa, pb, DESIGN) is None and partial_match(pb, pa, DESIGN) is None:
                            continue
                        found_at_event += 1
                        ma, mb = info[a]["mins"], info[b]["mins"]
                        if not any(ma[i] == mb[i] and i != band and len(buckets[(i, ma[i])]) <= k
                                   for i in range(BANDS)):
                            retracted += 1
    n = len(order)
    return dict(reads=reads / n, events=events, per1000=1000 * events / n, examined=pairs_examined,
                found=found_at_event, retracted=retracted)


def shares(info, idx: Index | None, a: str, b: str, k: int | None, extra: dict | None = None) -> bool:
    """Whether a and b share a (band, minimum) within the size window and (with k) whose population is <= k;
    `extra` adds texts' populations to idx's (a pair's made page alone)."""
    if not window(info, a, b):
        return False
    ma, mb = info[a]["mins"], info[b]["mins"]
    for i in range(BANDS):
        if ma[i] != mb[i]:
            continue
        if k is None:
            return True
        key = (i, ma[i])
        n = idx.pop(key) + (extra.get(key, 0) if extra else 0)
        if n <= k:
            return True
    return False


def fmt_row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def report() -> None:
    data = pickle.loads(CACHE.read_bytes())
    info = prep(data["texts"])
    corpus = [d for d in data["corpus"] if d in info]
    made = [d for d in data["made"] if d in info and d not in set(corpus)]
    out: list[str] = []
    pr = out.append
    pr(f"corpus distinct indexed main texts: {len(corpus)}; made (embedded A) texts: {len(made)}; "
       f"bands {BANDS}, threshold {THRESHOLD}, window +-{MAX_SIZE_CLASSES} classes")

    # 2. populations
    idx_c = Index(corpus, info)
    idx_all = Index(corpus + made, info)
    pr("\n## Bucket populations (distinct texts per (band, minimum), all size classes, end of input)\n")
    pr(fmt_row(["collection", "buckets", *[f"{lo}" if lo == hi else (f">{lo - 1}" if hi > 10**6 else f"{lo}-{hi}")
                                          for lo, hi in POP_BINS], "max"]))
    pr("|" + "---|" * (3 + len(POP_BINS)))
    for name, idx in (("corpus", idx_c), ("corpus + made pages", idx_all)):
        counts, total = pop_table(idx)
        mx = max(len(v) for v in idx.buckets.values())
        pr(fmt_row([name, total, *counts, mx]))
    # share of texts' bucket memberships in buckets by population (what a page sees)
    pr("\nPage-bucket memberships (text x band) by the bucket's population:\n")
    pr(fmt_row(["collection", "memberships", *[f"{lo}-{hi}" if hi < 10**6 else f">{lo - 1}" for lo, hi in POP_BINS]]))
    pr("|" + "---|" * (2 + len(POP_BINS)))
    for name, idx, ds in (("corpus", idx_c, corpus), ("corpus + made pages", idx_all, corpus + made)):
        counts = [0] * len(POP_BINS)
        for members in idx.buckets.values():
            n = len(members)
            for i, (lo, hi) in enumerate(POP_BINS):
                if lo <= n <= hi:
                    counts[i] += n
        pr(fmt_row([name, len(ds) * BANDS, *counts]))
    # the largest buckets, by same-host share
    host = data["host"]
    pr("\nLargest corpus buckets (population, distinct hosts among them):\n")
    big = sorted(idx_c.buckets.items(), key=lambda kv: -len(kv[1]))[:8]
    pr(", ".join(f"{len(v)} ({len({host.get(d) for d in v})} hosts)" for _, v in big))

    # 3a end-state reads
    pr("\n## Reads per page, end of input (other texts within +-3 classes in the page's buckets; a bucket "
       "counts only if its population <= K)\n")
    pr(fmt_row(["collection", "no cap", *[f"K={k}" for k in KS]]))
    pr("|" + "---|" * (2 + len(KS)))
    for name, idx, ds in (("corpus", idx_c, corpus), ("corpus + made pages", idx_all, corpus + made)):
        cells = []
        for k in (None, *KS):
            mean, mx = reads_end(idx, ds, k)
            cells.append(f"{mean:.2f} (max {mx})")
        pr(fmt_row([name, *cells]))

    # 3a/3c online
    rng = random.Random(SEED)
    order_c = corpus[:]
    rng.shuffle(order_c)
    order_all = corpus + made
    rng.shuffle(order_all)
    pr(f"\n## Online (shuffled, seed {SEED}): groups read per page at insertion, saturations, retraction work\n")
    pr(fmt_row(["collection", "K", "reads/page", "saturations", "per 1000 texts", "pairs to re-examine (within window)",
                "of them found by the rule", "retracted (no other shared bucket <= K)"]))
    pr("|" + "---|" * 8)
    for name, order in (("corpus", order_c), ("corpus + made pages", order_all)):
        for k in (None, *KS):
            r = online(order, info, k, count_retractions=k is not None)
            if k is None:
                pr(fmt_row([name, "none", f"{r['reads']:.2f}", "-", "-", "-", "-", "-"]))
            else:
                pr(fmt_row([name, k, f"{r['reads']:.2f}", r["events"], f"{r['per1000']:.1f}", r["examined"],
                            r["found"], r["retracted"]]))

    # 4 growth
    for title, order in ((f"\n## Growth: corpus texts (shuffled, seed {SEED}), prefixes\n", order_c),
                         ("\nSame, corpus + made pages shuffled together:\n", order_all)):
        pr(title)
        pr(fmt_row(["prefix", "texts", "end-state no cap", *[f"end K={k}" for k in KS], "online no cap",
                    *[f"online K={k}" for k in KS]]))
        pr("|" + "---|" * (3 + 2 * len(KS) + 1))
        for label, frac in (("quarter", 4), ("half", 2), ("all", 1)):
            sub = order[:len(order) // frac]
            idx = Index(sub, info)
            ends = [f"{reads_end(idx, sub, k)[0]:.2f}" for k in (None, *KS)]
            ons = [f"{online(sub, info, k)['reads']:.2f}" for k in (None, *KS)]
            pr(fmt_row([label, len(sub), *ends, *ons]))

    # 3b recall
    pairs = [p for p in data["pairs"] if p[1] in info and p[2] in info and p[1] != p[2]]
    found_today = {}
    for _kind, a, b, _exact, *_ in pairs:
        found_today[(a, b)] = partial_match(info[a]["page"], info[b]["page"], DESIGN) is not None
    corpus_set = set(corpus)
    pr("\n## Labelled pairs: found by the rule today vs with saturated buckets (population > K) not counting\n")
    pr("Populations: (i) corpus + all made pages at the end of input; (ii) corpus + only this pair's made page "
       "(A) (the pair alone arriving in the real corpus; B is a corpus text).\n")
    groups = [
        (f"embedded, exact >= {THRESHOLD:.2g} (positives)", lambda p: p[0] == cp.EMBEDDED and p[3] >= THRESHOLD),
        (f"embedded, exact < {THRESHOLD:.2g}", lambda p: p[0] == cp.EMBEDDED and p[3] < THRESHOLD),
        ("same-group", lambda p: p[0] == cp.SAME_GROUP),
        ("unrelated", lambda p: p[0] == cp.UNRELATED),
    ]
    pr(fmt_row(["pairs", "n", "pop.", "share a bucket today", "found today",
                *[f"found K={k}" for k in KS], *[f"share<=K K={k}" for k in KS]]))
    pr("|" + "---|" * (5 + 2 * len(KS)))
    for gname, pred in groups:
        sel = [p for p in pairs if pred(p)]
        for popname in ("(i)", "(ii)"):
            share_today = sum(1 for p in sel if shares(info, None, p[1], p[2], None))
            ft = sum(1 for p in sel if found_today[(p[1], p[2])])
            fk, sk = [], []
            for k in KS:
                f = s = 0
                for p in sel:
                    a, b = p[1], p[2]
                    if popname == "(i)":
                        sh = shares(info, idx_all, a, b, k)
                    else:
                        extra = {} if a in corpus_set else {(i, m): 1 for i, m in enumerate(info[a]["mins"])}
                        sh = shares(info, idx_c, a, b, k, extra)
                    s += sh
                    f += sh and found_today[(a, b)]
                fk.append(f)
                sk.append(s)
            if ft or True:
                pr(fmt_row([gname, len(sel), popname, share_today, ft,
                            *[f"{f} ({f / ft:.3f})" if ft else f for f in fk], *sk]))
    # recall by size ratio for positives under (ii)
    pr("\nPositives found, by |A|/|B| (population (ii)):\n")
    pr(fmt_row(["|A|/|B|", "n", "found today", *[f"K={k}" for k in KS]]))
    pr("|" + "---|" * (3 + len(KS)))
    pos = [p for p in pairs if p[0] == cp.EMBEDDED and p[3] >= THRESHOLD]
    for lo, hi in ((0, 2), (2, 4), (4, 8), (8, 1e9)):
        sel = [p for p in pos if lo <= p[5] / p[6] < hi]
        ft = sum(1 for p in sel if found_today[(p[1], p[2])])
        cells = []
        for k in KS:
            f = 0
            for p in sel:
                a, b = p[1], p[2]
                extra = {} if a in corpus_set else {(i, m): 1 for i, m in enumerate(info[a]["mins"])}
                f += shares(info, idx_c, a, b, k, extra) and found_today[(a, b)]
            cells.append(f)
        pr(fmt_row([f"{lo}-{hi:g}", len(sel), ft, *cells]))

    # the least-populated shared bucket of each positive found today
    pr("\nPositives found today: the population of their least-populated shared bucket (within window):\n")
    pr(fmt_row(["pop.", *[f"{lo}-{hi}" if hi < 10**6 else f">{lo - 1}" for lo, hi in POP_BINS]]))
    pr("|" + "---|" * (1 + len(POP_BINS)))
    for popname in ("(i)", "(ii)"):
        counts = [0] * len(POP_BINS)
        for p in pos:
            a, b = p[1], p[2]
            if not found_today[(a, b)]:
                continue
            ma, mb = info[a]["mins"], info[b]["mins"]
            if popname == "(i)":
                least = min(idx_all.pop((i, ma[i])) for i in range(BANDS) if ma[i] == mb[i])
            else:
                extra = 0 if a in corpus_set else 1
                least = min(idx_c.pop((i, ma[i])) + extra for i in range(BANDS) if ma[i] == mb[i])
            for j, (lo, hi) in enumerate(POP_BINS):
                if lo <= least <= hi:
                    counts[j] += 1
        pr(fmt_row([popname, *counts]))

    # corpus-internal partial pairs today vs capped
    pr("\n## Corpus-internal pairs the rule finds (either way), today vs only through buckets <= K\n")
    cand = set()
    for members in idx_c.buckets.values():
        for a, b in combinations(sorted(members), 2):
            if window(info, a, b):
                cand.add((a, b))
    found = [(a, b) for a, b in cand if partial_match(info[a]["page"], info[b]["page"], DESIGN) is not None
             or partial_match(info[b]["page"], info[a]["page"], DESIGN) is not None]
    same_host = sum(1 for a, b in found if host.get(a) == host.get(b))
    cells = [sum(1 for a, b in found if shares(info, idx_c, a, b, k)) for k in KS]
    pr(f"candidate pairs (share a bucket within window): {len(cand)}; found: {len(found)} ({same_host} same host); "
       + ", ".join(f"K={k}: {c}" for k, c in zip(KS, cells, strict=True)))
    text = "\n".join(out)
    print(text)
    write_result("containment-saturation.md", text)


def popular() -> None:
    """One article B copied (partially) by N pages: the corpus plus N made pages A_1..A_N (`embed`, as
    `containment_pairs._embedded`: fraction uniform in [0.5, 0.95], own text log-uniform 0.2-16x the excerpt from
    other sites' articles). For each K: of the (A_i, B) pairs with exact containment >= threshold that the rule
    finds today, how many still share a bucket with population <= K (corpus + these N copies)."""
    import math

    from neardup_core.fingerprint.containment import exact_containment
    from neardup_core.fingerprint.features import token_features, tokens

    data = pickle.loads(CACHE.read_bytes())
    info = prep(data["texts"])
    corpus = [d for d in data["corpus"] if d in info]
    idx_c = Index(corpus, info)
    arts = data["paragraphs"]
    paths = sorted(arts)
    rng = random.Random(SEED)
    chosen = rng.sample(paths, 40)
    ns = (1, 4, 8, 16, 32, 64)
    found = {n: 0 for n in ns}
    kept = {(n, k): 0 for n in ns for k in KS}
    positives = {n: 0 for n in ns}
    for path in chosen:
        site, lang, paras, bd = arts[path]
        btext = "\n".join(paras)
        if bd not in info:
            continue
        donors = [p for p in paths if arts[p][0] != site and arts[p][1] == lang]
        if len(donors) < 3:
            donors = [p for p in paths if arts[p][0] != site]
        fb = token_features(tokens(btext), SETTINGS.shingle_size).hashes
        copies = []
        for i in range(max(ns)):
            r = random.Random(f"popular:{path}:{i}")
            f = r.uniform(0.5, 0.95)
            ratio = math.exp(r.uniform(math.log(0.2), math.log(16.0)))
            order = r.sample(donors, len(donors))
            own = (pp for d in order for pp in arts[d][2])
            a = cp.embed(btext, own, f, ratio, r)
            ad, s = sketch(a)
            if s is None:
                copies.append(None)
                continue
            exact = exact_containment(token_features(tokens(a), SETTINGS.shingle_size).hashes, fb)
            s = dict(s, mins=np.frombuffer(s["minima"], "<u4", BANDS).tolist(), cls=size_class(s["shingles"]))
            s["page"] = page_of(ad, s)
            info[ad] = s
            copies.append((ad, exact, partial_match(s["page"], info[bd]["page"], DESIGN) is not None))
        for n in ns:
            extra: dict = defaultdict(int)
            for c in copies[:n]:
                if c is not None:
                    for i, m in enumerate(info[c[0]]["mins"]):
                        extra[(i, m)] += 1
            for c in copies[:n]:
                if c is None or c[1] < THRESHOLD:
                    continue
                positives[n] += 1
                if not c[2]:
                    continue
                found[n] += 1
                for k in KS:
                    kept[(n, k)] += shares(info, idx_c, c[0], bd, k, extra)
    out = [f"Popular article: {len(chosen)} corpus articles, each copied by N made pages (corpus + the N copies)\n",
           fmt_row(["N copies", "positive pairs", "found today", *[f"K={k}" for k in KS]]),
           "|" + "---|" * (3 + len(KS))]
    for n in ns:
        out.append(fmt_row([n, positives[n], found[n],
                            *[f"{kept[(n, k)]} ({kept[(n, k)] / found[n]:.2f})" for k in KS]]))
    text = "\n".join(out)
    print(text)
    write_result("containment-saturation-popular.md", text)


def synthetic() -> None:
    """Growth on the synthetic crawls (`testing.synthetic.generate_crawl`, seeds 11-12, 11-14, 11-18, as in
    bench/RESULTS.md): groups read per page (pages, not texts: every copy of a text reads what the text does)."""
    import orjson

    from neardup_core.fingerprint.fetch import Fetch
    from neardup_core.fingerprint.page import fingerprint_event
    from neardup_core.testing.synthetic import generate_crawl

    out = ["Synthetic crawls: groups read per page, end of input (other distinct texts in the page's buckets "
           "within +-3 classes; buckets with population > K skipped) and online (in crawl order)\n",
           fmt_row(["seeds", "pages", "distinct texts", "end no cap", *[f"end K={k}" for k in KS],
                    "online no cap", *[f"online K={k}" for k in KS]]),
           "|" + "---|" * (4 + 2 * len(KS) + 1)]
    info: dict = {}
    pages: list[str] = []
    for hi in (12, 14, 18):
        for seed in range(11 if not pages else (13 if hi == 14 else 15), hi + 1):
            for e in generate_crawl(seed=seed):
                f = fingerprint_event(orjson.dumps(e), settings=SETTINGS)
                if not isinstance(f, Fetch) or f.minima is None or f.text_sha256 is None:
                    continue
                d = f.text_sha256
                if d not in info:
                    info[d] = dict(mins=np.frombuffer(f.minima, "<u4", BANDS).tolist(), cls=size_class(f.shingles))
                pages.append(d)
        distinct = list(dict.fromkeys(pages))
        idx = Index(distinct, info)
        ends = []
        for k in (None, *KS):
            per_text = {}
            for d in distinct:
                r = 0
                for band, m in enumerate(info[d]["mins"]):
                    members = idx.buckets[(band, m)]
                    if k is None or len(members) <= k:
                        r += sum(1 for o in members if o != d and window(info, d, o))
                per_text[d] = r
            ends.append(f"{sum(per_text[d] for d in pages) / len(pages):.1f}")
        ons = []
        for k in (None, *KS):
            buckets: dict = defaultdict(list)
            seen_t: set = set()
            reads = 0
            for d in pages:
                for band, m in enumerate(info[d]["mins"]):
                    members = buckets[(band, m)]
                    new = d not in seen_t
                    n_after = len(members) + (1 if new else 0)
                    if k is None or n_after <= k:
                        reads += sum(1 for o in members if o != d and window(info, d, o))
                    if new:
                        members.append(d)
                seen_t.add(d)
            ons.append(f"{reads / len(pages):.1f}")
        out.append(fmt_row([f"11-{hi}", len(pages), len(distinct), *ends, *ons]))
        print(out[-1], flush=True)
    text = "\n".join(out)
    print(text)
    write_result("containment-saturation-synthetic.md", text)


if __name__ == "__main__":
    {"build": build, "report": report, "popular": popular, "synthetic": synthetic}[sys.argv[1]]()
