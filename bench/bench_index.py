"""The index at scale: probe (query then insert) latency, candidates, memory and disk per stored page.

    python bench/bench_index.py [--quick] [--sizes 1e4,1e5,1e6] [--big] [--queries Q] [--backends ...]

Stored pages are made up, deterministic from `--seed`: random 64-bit SimHashes, 5% of them planted
near duplicates (1 to k bits flipped from an earlier page), distinct URLs of one shape and length
(so rank goes by fetch time and stored pages rank better than the queries), random digests.
Backends, each measured in its own child process (clean RSS):

* ``rocks-t4`` / ``rocks-t10`` / ``rocks-t20``: `neardup_core.store.rocks.RocksStore` (prefix Bloom
  filters, as `neardup scan` and the workers open the index) with the seed design (`TableDesign(3, 4)`,
  4 tables of 16 key bits), the `auto` design for 10^5 to 10^7 pages (`TableDesign(3, 5)`, 10 tables
  of 25 or 26 key bits) and Manku's 6-choose-3 design (`TableDesign(3, 6)`, 20 tables of 31 to 33 key
  bits); ``rocks-t20-nofilter`` is the 20-table design on plain RocksDB options (no prefix filters),
  the peer the filters are measured against. The first `--real-inserts` pages go in through the real code
  path (`index.probes_for` + `index.probe_bucket`, which probes and inserts); the rest through
  RocksDB write batches of the same keys and values (table entries with empty values and one
  version record per page, checked against what the real path writes), then flush and full
  compaction before the disk is measured. Timed queries are
  the real path: `probes_for` + `probe_bucket` on every table of a query page (near tables plus
  the two digest tables), i.e. the whole index step for one page, query then insert.
* ``rocks-t10-l20x4``: the default design since issue 12: the 10 near tables and 20 LSH band tables
  (MinHash 20 bands x 4 rows, 8-bit rows, J >= 0.75), each page with an 80-byte signature (random
  rows; a planted near duplicate copies its source's signature with 5 of 80 rows changed, so it shares
  most bands); the batch path writes one band entry per band (`table | band hash | signature hash |
  version id`) and the version record with the signature, as the real path does.
* ``numpy``: brute force, `neardup_core.fingerprint.simhash.hamming_many` (`np.bitwise_count`) over an array of
  the N fingerprints.
* ``datasketch``: `MinHashLSH(threshold=0.8, num_perm=128)` over MinHashes of small random sets (20
  random 64-bit values; near duplicates share 19 of 20, Jaccard 0.9), up to 10^6; timed queries are
  `lsh.query` then `lsh.insert` (the MinHash itself is made outside the timing, as our fingerprint is).

Half the queries are planted near duplicates of stored pages (the `recall` column says how many of
them found a match), half are random. With `--big`, 10^7 runs for the backends whose estimated build
time (from the measured 10^6 build rate) fits `--budget-min` and whose estimated disk fits.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from common import (
    DEFAULT_RESULTS,
    Table,
    append_results,
    dir_bytes,
    fmt_bytes,
    fmt_ms,
    fmt_rate,
    percentile,
    print_machine,
    rss_bytes,
)

from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.simhash import hamming_many
from neardup_core.index.bucket import band_hash, encode_page, probe_bucket, probes_for, signature_hash
from neardup_core.index.keys import (
    BODY_TABLE,
    TEXT_TABLE,
    band_group_key,
    exact_entry_key,
    version_record_key,
)
from neardup_core.index.tables import BandDesign, TableDesign

K = 3
BASE_MS = 1_600_000_000_000
NEAR_SHARE = 0.05
SET_SIZE = 20
DESIGNS = {"rocks-t4": TableDesign(K, 4), "rocks-t10": TableDesign(K, 5), "rocks-t20": TableDesign(K, 6),
           "rocks-t20-nofilter": TableDesign(K, 6), "rocks-t10-l20x4": TableDesign(K, 5, BandDesign(20, 4, 0.75))}
ALL_BACKENDS = ("rocks-t4", "rocks-t10", "rocks-t20", "rocks-t20-nofilter", "rocks-t10-l20x4", "numpy",
                "datasketch")
CHANGED_ROWS = 5
DATASKETCH_MAX = 10**6
CHUNK = 50_000


# ---------------------------------------------------------------------------------------------- data

def fingerprints(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """N SimHashes, `NEAR_SHARE` of them 1..k bits from an earlier one: (fps, planted, sources)."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    planted = np.sort(rng.choice(np.arange(1, n), size=int(n * NEAR_SHARE), replace=False)) if n > 1 \
        else np.zeros(0, np.int64)
    sources = (rng.random(len(planted)) * planted).astype(np.int64)
    fps[planted] = fps[sources] ^ flip_masks(rng, len(planted))
    return fps, planted, sources


def flip_masks(rng: np.random.Generator, count: int) -> np.ndarray:
    """Masks of 1..k random bits (fewer when positions repeat)."""
    bits = rng.integers(1, K + 1, size=count)
    mask = np.zeros(count, np.uint64)
    for j in range(K):
        pos = rng.integers(0, 64, size=count).astype(np.uint64)
        mask |= np.where(j < bits, np.uint64(1) << pos, np.uint64(0))
    return mask


def query_fingerprints(fps: np.ndarray, q: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Q query SimHashes: even ones near a random stored page, odd ones random; and which are near."""
    out, near, _ = query_targets(fps, q, seed)
    return out, near


def query_targets(fps: np.ndarray, q: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`query_fingerprints` and the stored page each near query is near."""
    rng = np.random.default_rng(seed + 1)
    out = rng.integers(0, 2**64, size=q, dtype=np.uint64)
    near = np.arange(q) % 2 == 0
    targets = rng.integers(0, len(fps), size=int(near.sum()))
    out[near] = fps[targets] ^ flip_masks(rng, len(targets))
    return out, near, targets


def signatures(n: int, rows: int, seed: int, planted: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """N random b-bit signatures of `rows` rows; a planted page's is its source's with CHANGED_ROWS rows changed."""
    rng = np.random.default_rng(seed + 2)
    sigs = rng.integers(0, 256, size=(n, rows), dtype=np.uint8)
    sigs[planted] = sigs[sources]
    for _ in range(CHANGED_ROWS):
        cols = rng.integers(0, rows, size=len(planted))
        sigs[planted, cols] ^= np.uint8(0x5A)
    return sigs


def query_signatures(sigs: np.ndarray, qfps_targets: np.ndarray, near: np.ndarray, seed: int) -> np.ndarray:
    """Signatures of the queries: a near query's is its target's with CHANGED_ROWS rows changed."""
    rng = np.random.default_rng(seed + 3)
    out = rng.integers(0, 256, size=(len(near), sigs.shape[1]), dtype=np.uint8)
    out[near] = sigs[qfps_targets]
    idx = np.flatnonzero(near)
    for _ in range(CHANGED_ROWS):
        out[idx, rng.integers(0, sigs.shape[1], size=len(idx))] ^= np.uint8(0x5A)
    return out


def url_of(i: int) -> str:
    return f"https://h{i % 1000:03d}.example/p/{i:010d}"


def page_of(i: int, fp: int, sig: np.ndarray | None = None) -> PageVersion:
    return PageVersion(url_of(i), 0.0, BASE_MS + i, hashlib.sha256(b"body%d" % i).hexdigest(),
                       hashlib.sha256(b"text%d" % i).hexdigest(), int(fp), sig.tobytes() if sig is not None else None)


def permute_many(design: TableDesign, fps: np.ndarray, table: int) -> np.ndarray:
    """`design.permute` for an array of fingerprints."""
    out = np.zeros(len(fps), np.uint64)
    top = 64
    for block in design.tables[table]:
        shift, width = design.block_bits[block]
        top -= width
        out |= ((fps >> np.uint64(shift)) & np.uint64((1 << width) - 1)) << np.uint64(top)
    return out


# ----------------------------------------------------------------------------------------- children

def child_rocks(n: int, backend: str, q: int, seed: int, real_inserts: int, workdir: Path) -> dict[str, Any]:
    from rocksdict import Rdict, WriteBatch

    from neardup_core.store.rocks import RocksStore, rocks_options

    design = DESIGNS[backend]
    fps, planted, sources = fingerprints(n, seed)
    lsh = design.lsh
    sigs = signatures(n, lsh.permutations, seed, planted, sources) if lsh is not None else None

    def page(i: int) -> PageVersion:
        return page_of(i, fps[i], sigs[i] if sigs is not None else None)

    path = workdir / f"{backend}-{n}"
    shutil.rmtree(path, ignore_errors=True)
    gc.collect()
    rss0 = rss_bytes()
    prefix = None if backend.endswith("nofilter") else design.prefix_bytes
    db = Rdict(str(path), options=rocks_options(prefix))
    store = RocksStore.wrap(db, same_prefix=prefix is not None)
    out: dict[str, Any] = {"design": design.name}

    # 1. the real path for the first pages
    real = min(n, real_inserts)
    start = time.perf_counter()
    for i in range(real):
        for probe in probes_for(design, page(i)):
            probe_bucket(store, probe, design, K)
    out["real_inserts"] = real
    out["real_insert_pages_s"] = real / (time.perf_counter() - start) if real else None

    # 2. write batches of the same keys and values for the rest
    entries = 0
    start = time.perf_counter()
    key_dtype = np.dtype([("t", "u1"), ("p", ">u8"), ("v", "V12")])
    for lo in range(real, n, CHUNK):
        hi = min(n, lo + CHUNK)
        pages = [page(i) for i in range(lo, hi)]
        vids = [p.version_id for p in pages]
        wb = WriteBatch(raw_mode=True)
        keys = np.zeros(hi - lo, key_dtype)
        keys["v"] = np.frombuffer(b"".join(vids), dtype="V12")
        for table in range(design.table_count):
            keys["t"] = table
            keys["p"] = permute_many(design, fps[lo:hi], table)
            for key in keys.view("V21").tolist():
                wb.put(key, b"")
        for p, vid in zip(pages, vids, strict=True):
            wb.put(exact_entry_key(TEXT_TABLE, p.text_sha256, vid), b"")
            wb.put(exact_entry_key(BODY_TABLE, p.body_sha256, vid), b"")
            wb.put(version_record_key(vid), encode_page(p))
            if lsh is not None and p.minhash is not None:
                sig_hash = signature_hash(p.minhash)
                for band in range(lsh.bands):
                    wb.put(band_group_key(lsh.table(band), band_hash(lsh, p.minhash, band), sig_hash) + vid, b"")
        entries += (hi - lo) * (design.table_count + 3 + (lsh.bands if lsh is not None else 0))
        db.write(wb)
    batch_s = time.perf_counter() - start
    out["batch_pages"] = n - real
    out["batch_pages_s"] = (n - real) / batch_s if n > real else None
    out["batch_entries_s"] = entries / batch_s if n > real else None
    start = time.perf_counter()
    db.flush()
    db.compact_range(None, None)
    out["compact_s"] = time.perf_counter() - start
    out["disk_bytes"] = dir_bytes(path)
    out["rss_after_build"] = rss_bytes()
    out["rss_growth"] = out["rss_after_build"] - rss0

    # the batch wrote what the real path writes
    check = [real, n - 1] if n > real else []
    for i in check:
        for probe in probes_for(design, page(i)):
            assert db.get(probe.entry_key) == b"", f"batch key mismatch for page {i}"
        assert db.get(version_record_key(page(i).version_id)) == encode_page(page(i)), f"version record of page {i}"

    # 3. queries: candidates counted untimed, then the timed real path (query then insert)
    qfps, near, targets = query_targets(fps, q, seed)
    qsigs = query_signatures(sigs, targets, near, seed) if sigs is not None else None
    queries = [page_of(n + j, qfps[j], qsigs[j] if qsigs is not None else None) for j in range(q)]
    candidates = []
    for query in queries:
        probes = probes_for(design, query)
        candidates.append(sum(1 for probe in probes for _ in store.scan(probe.lo, probe.hi)))
    latencies, found = [], []
    clock = time.perf_counter
    for query in queries:
        t0 = clock()
        hit = False
        for probe in probes_for(design, query):
            answer, _ = probe_bucket(store, probe, design, K)
            hit = hit or answer.best is not None
        latencies.append(clock() - t0)
        found.append(hit)
    out.update(latency_stats(latencies))
    out["candidates_mean"] = float(np.mean(candidates))
    out["candidates_expected"] = design.expected_candidates(n)
    out["recall"] = sum(f for f, m in zip(found, near, strict=True) if m) / max(1, int(near.sum()))
    out["false_hits_random"] = sum(f for f, m in zip(found, near, strict=True) if not m)
    out["queries"] = q
    out["rss_after_queries"] = rss_bytes()

    db.close()
    shutil.rmtree(path, ignore_errors=True)
    return out


def child_numpy(n: int, q: int, seed: int) -> dict[str, Any]:
    fps, _, _ = fingerprints(n, seed)
    gc.collect()
    rss0 = rss_bytes()
    start = time.perf_counter()
    index = np.array(fps, dtype=np.uint64)  # "inserting" N fingerprints = having them in one array
    out: dict[str, Any] = {"build_pages_s": n / (time.perf_counter() - start),
                           "rss_growth": rss_bytes() - rss0}
    del fps
    qn = max(10, min(q, int(2e8 // n)))  # brute force at 10^7 takes a second a query
    qfps, near = query_fingerprints(index, qn, seed)
    for name, scan in (("hamming_many", lambda fp: np.flatnonzero(hamming_many(int(fp), index) <= K)),):
        scan(qfps[0])  # warm up
        peak0 = rss_bytes()
        latencies, found = [], []
        for fp in qfps:
            t0 = time.perf_counter()
            hits = scan(fp)
            latencies.append(time.perf_counter() - t0)
            found.append(len(hits) > 0)
        stats = latency_stats(latencies)
        recall = sum(f for f, m in zip(found, near, strict=True) if m) / max(1, int(near.sum()))
        out[name] = {**stats, "recall": recall,
                     "rss_during": max(peak0, rss_bytes())}
    out["queries"] = qn
    out["rss_after_build"] = rss_bytes()
    return out


def child_datasketch(n: int, q: int, seed: int) -> dict[str, Any]:
    from datasketch import MinHash, MinHashLSH

    rng = np.random.default_rng(seed)
    sets = rng.integers(0, 2**64, size=(n, SET_SIZE), dtype=np.uint64)
    _, planted, sources = fingerprints(n, seed)
    sets[planted] = sets[sources]
    sets[planted, rng.integers(0, SET_SIZE, size=len(planted))] = rng.integers(0, 2**64, size=len(planted),
                                                                               dtype=np.uint64)
    template = MinHash(num_perm=128)
    kwargs = {"num_perm": 128, "permutations": template.permutations, "scheme": template.scheme}

    def minhashes(rows: np.ndarray) -> list[MinHash]:
        return MinHash.bulk([[v.to_bytes(8, "little") for v in row.tolist()] for row in rows], **kwargs)

    gc.collect()
    rss0 = rss_bytes()
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    minhash_s = insert_s = 0.0
    for lo in range(0, n, 10_000):
        t0 = time.perf_counter()
        ms = minhashes(sets[lo:lo + 10_000])
        t1 = time.perf_counter()
        for i, m in enumerate(ms, lo):
            lsh.insert(i, m)
        insert_s += time.perf_counter() - t1
        minhash_s += t1 - t0
    del ms
    gc.collect()
    out: dict[str, Any] = {"minhash_pages_s": n / minhash_s, "insert_pages_s": n / insert_s,
                           "bands": lsh.b, "rows": lsh.r}
    out["rss_after_build"] = rss_bytes()
    out["rss_growth"] = out["rss_after_build"] - rss0  # `sets` was allocated before rss0
    qsets = rng.integers(0, 2**64, size=(q, SET_SIZE), dtype=np.uint64)
    near = np.arange(q) % 2 == 0
    targets = rng.integers(0, n, size=int(near.sum()))
    qsets[near] = sets[targets]
    qsets[near, rng.integers(0, SET_SIZE, size=len(targets))] = rng.integers(0, 2**64, size=len(targets),
                                                                             dtype=np.uint64)
    qms = minhashes(qsets)
    latencies, found, candidates = [], [], []
    for j, m in enumerate(qms):
        t0 = time.perf_counter()
        result = lsh.query(m)
        lsh.insert(n + j, m)
        latencies.append(time.perf_counter() - t0)
        candidates.append(len(result))
        found.append(bool(result))
    out.update(latency_stats(latencies))
    out["candidates_mean"] = float(np.mean(candidates))
    out["recall"] = sum(f for f, m in zip(found, near, strict=True) if m) / max(1, int(near.sum()))
    out["false_hits_random"] = sum(f for f, m in zip(found, near, strict=True) if not m)
    out["queries"] = q
    return out


def latency_stats(latencies: list[float]) -> dict[str, float]:
    return {"p50_s": percentile(latencies, 0.5), "p99_s": percentile(latencies, 0.99),
            "mean_s": float(np.mean(latencies))}


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    backend, n, q, seed = spec["backend"], spec["n"], spec["queries"], spec["seed"]
    start = time.perf_counter()
    if backend.startswith("rocks"):
        out = child_rocks(n, backend, q, seed, spec["real_inserts"], Path(spec["workdir"]))
    elif backend == "numpy":
        out = child_numpy(n, q, seed)
    elif backend == "datasketch":
        out = child_datasketch(n, q, seed)
    else:
        raise SystemExit(f"unknown backend {backend}")
    out["wall_s"] = time.perf_counter() - start
    return out


# ------------------------------------------------------------------------------------------- parent

def spawn(spec: dict[str, Any]) -> dict[str, Any] | None:
    print(f"-> {spec['backend']} N={spec['n']:,} ...", flush=True)
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr, file=sys.stderr)
        print(f"   FAILED (exit {proc.returncode})", flush=True)
        return None
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    result: dict[str, Any] = json.loads(line[len("RESULT "):])
    print(f"   done in {result['wall_s']:.0f} s", flush=True)
    return result


def estimate(results: dict[tuple[str, int], dict[str, Any]], backend: str,
             n_big: int) -> tuple[float, float] | None:
    """(seconds, disk bytes) to build `n_big` pages, extrapolated linearly from the largest run."""
    done = [(n, r) for (b, n), r in results.items() if b == backend and r]
    if not done:
        return None
    n, r = max(done, key=lambda x: x[0])
    if backend.startswith("rocks"):
        # the whole child run, scaled linearly; measured: rocks-t4 took 2x this at 10^7 (compaction
        # and the batch writes grow faster than linearly), so the budget check doubles it
        return 2 * r["wall_s"] / n * n_big, r["disk_bytes"] / n * n_big
    if backend == "numpy":
        return r["wall_s"] / n * n_big, 0.0
    return (1 / r["minhash_pages_s"] + 1 / r["insert_pages_s"]) * n_big, 0.0


def parse_sizes(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="N = 10^4 and 10^5, 200 queries")
    parser.add_argument("--sizes", default="1e4,1e5,1e6", help="stored pages, comma-separated")
    parser.add_argument("--limit", type=int, default=None, help="largest N to run (drops bigger sizes)")
    parser.add_argument("--big", action="store_true",
                        help="add N = 10^7 where the estimate fits --budget-min")
    parser.add_argument("--budget-min", type=float, default=20.0,
                        help="largest estimated build time for --big")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--real-inserts", type=int, default=10_000,
                        help="pages inserted through probes_for/probe_bucket before the batch build")
    parser.add_argument("--backends", default=",".join(ALL_BACKENDS))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=None, help="where the RocksDB directories go")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--no-write", action="store_true", help="print only; do not append to --results")
    args = parser.parse_args()
    if args.child:
        print("RESULT " + orjson.dumps(run_child(json.loads(args.child)), option=orjson.OPT_SERIALIZE_NUMPY)
              .decode())
        return
    started = time.perf_counter()
    print_machine()
    sizes = parse_sizes("1e4,1e5" if args.quick and args.sizes == "1e4,1e5,1e6" else args.sizes)
    if args.limit:
        sizes = [s for s in sizes if s <= args.limit]
    queries = 200 if args.quick and args.queries == 1000 else args.queries
    backends = [b for b in args.backends.split(",") if b]
    workdir = Path(tempfile.mkdtemp(prefix="bench-index-", dir=args.workdir))
    results: dict[tuple[str, int], dict[str, Any]] = {}
    notes: list[str] = []

    def run(backend: str, n: int) -> None:
        spec = {"backend": backend, "n": n, "queries": queries, "seed": args.seed,
                "real_inserts": args.real_inserts, "workdir": str(workdir)}
        result = spawn(spec)
        if result:
            results[(backend, n)] = result

    try:
        for n in sizes:
            for backend in backends:
                if backend == "datasketch" and n > DATASKETCH_MAX:
                    continue
                run(backend, n)
        if args.big:
            n_big = 10**7
            free = shutil.disk_usage(workdir).free
            for backend in backends:
                if backend == "datasketch":
                    continue
                est = estimate(results, backend, n_big)
                if est is None:
                    notes.append(f"{backend} at 10^7: no smaller run to estimate from; not run.")
                    continue
                secs, disk = est
                verdict = "run" if secs <= args.budget_min * 60 and disk <= 0.5 * free else "NOT run"
                notes.append(f"{backend} at 10^7: estimated build {secs / 60:.0f} min and "
                             f"{fmt_bytes(disk)} of "
                             f"disk (free: {fmt_bytes(free)}; budget {args.budget_min:.0f} min): {verdict}.")
                print(notes[-1], flush=True)
                if verdict == "run":
                    run(backend, n_big)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    tables = report(results, sizes + ([10**7] if args.big else []), queries, args.real_inserts)
    for t in tables:
        t.print()
    for note in notes:
        print(note)
    if not args.no_write:
        heading = "bench_index: pigeonhole tables in RocksDB vs brute force and MinHashLSH" + \
            (" (quick)" if args.quick else "")
        append_results(args.results, heading, tables, notes=[f"- {n}" for n in notes], started=started)


def report(results: dict[tuple[str, int], dict[str, Any]], sizes: list[int], queries: int,
           real_inserts: int) -> list[Table]:
    def n_label(n: int) -> str:
        e = math.log10(n)
        return f"10^{e:.0f}" if e.is_integer() else f"{n:,}"

    lat = Table("Index step per query page: query then insert (latency), candidates, recall",
                ["backend", "N", "p50 ms", "p99 ms", "candidates/query (expected)", "recall of planted",
                 "queries"])
    mem = Table("Build, memory and disk", ["backend", "N", "build pages/s", "RSS after build",
                                           "RSS growth / page", "disk / page (after compaction)",
                                           "how built"])
    for n in sizes:
        for backend in ALL_BACKENDS:
            r = results.get((backend, n))
            if not r:
                continue
            label = n_label(n)
            if backend.startswith("rocks"):
                name = f"{backend} ({r['design']})"
                if "p50_s" in r:
                    lat.add(name, label, fmt_ms(r["p50_s"]), fmt_ms(r["p99_s"]),
                            f"{r['candidates_mean']:.2f} ({r['candidates_expected']:.2f})",
                            f"{r['recall']:.1%}",
                            r["queries"])
                built = (f"{r['real_inserts']:,} real path ({fmt_rate(r['real_insert_pages_s'])} pages/s)"
                         if r["real_inserts"] else "")
                if r["batch_pages"]:
                    built += ("; " if built else "") + (f"{r['batch_pages']:,} write batches "
                                                        f"({fmt_rate(r['batch_entries_s'])} entries/s)")
                built += f"; compaction {r['compact_s']:.0f} s"
                rate = r["batch_pages_s"] or r["real_insert_pages_s"]
                mem.add(name, label, fmt_rate(rate), fmt_bytes(r["rss_after_build"]),
                        fmt_bytes(r["rss_growth"] / n), fmt_bytes(r["disk_bytes"] / n), built)
            elif backend == "numpy":
                for variant in ("hamming_many",):
                    v = r[variant]
                    lat.add(f"numpy brute force ({variant})", label, fmt_ms(v["p50_s"]), fmt_ms(v["p99_s"]),
                            f"{n:,} (all)", f"{v['recall']:.1%}", r["queries"])
                mem.add("numpy brute force", label, "(array copy)", fmt_bytes(r["rss_after_build"]),
                        fmt_bytes(r["rss_growth"] / n), "n/a (memory)",
                        f"one uint64 array; peak RSS while scanning "
                        f"{fmt_bytes(r['hamming_many']['rss_during'])}")
            else:
                lat.add(f"datasketch MinHashLSH (b={r['bands']}, r={r['rows']})", label, fmt_ms(r["p50_s"]),
                        fmt_ms(r["p99_s"]), f"{r['candidates_mean']:.2f}", f"{r['recall']:.1%}", r["queries"])
                mem.add("datasketch MinHashLSH", label, fmt_rate(r["insert_pages_s"]),
                        fmt_bytes(r["rss_after_build"]),
                        fmt_bytes(r["rss_growth"] / n), "n/a (memory)",
                        f"lsh.insert per page; MinHash.bulk {fmt_rate(r['minhash_pages_s'])} pages/s "
                        f"(not counted)")
    lat.notes += [
        "rocks rows: probes_for + probe_bucket over the near tables and both digest tables (T + 2 bucket "
        "scans and T + 2 writes), the whole index step of one page; candidates are the entries in the "
        "probed buckets, including the planted match; expected = design.expected_candidates(N) (random "
        "ones only).",
        "datasketch rows: lsh.query then lsh.insert of a ready MinHash; numpy rows: one scan of the N "
        "fingerprints, no insert. Half the queries are planted near duplicates (recall is over those).",
        "rocks-t20-nofilter: the same design and data without prefix Bloom filters (the options before "
        "they were added): the peer of rocks-t20.",
        "latencies on a shared 2-core machine: p99 moves with other people's work; compare within a row "
        "group of one run.",
    ]
    mem.notes += [
        f"RocksDB: the first {real_inserts:,} pages through probes_for + probe_bucket, the rest as write "
        f"batches of the same keys and values (table entries with empty values, one version record per "
        f"page; checked against what probes_for/probe_bucket write), then flush and "
        f"full compaction; disk = bytes of the files in the RocksDB directory; RSS includes RocksDB's "
        f"caches and memtables, not the OS page cache.",
        "RSS growth = RSS after the build - RSS before it, per stored page (the input arrays are allocated "
        "before).",
        "RocksDB RSS is mostly fixed-size memory (memtables, caches) plus what the build's Python garbage "
        "left with the allocator, so 'growth per page' falls as N grows; it is not a steady-state footprint.",
    ]
    return [lat, mem]


if __name__ == "__main__":
    main()
