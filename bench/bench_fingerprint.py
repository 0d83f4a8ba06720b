"""Fingerprinting speed on the corpus's main texts: our SimHash against datasketch and `simhash`.

    python bench/bench_fingerprint.py [--limit N] [--quick] [--repeat R] [--shingle-size S] [--profile]

Every page is decoded and its main text extracted once (`neardup_core.extract.main_text.extract`), before
anything is timed. Each contender then goes from the main text to a fingerprint over the same
features: the word S-shingles of `features.feature_tokens` (case-folded NFKC words, numbers and
calendar words as placeholders); timing is per page, best of R runs, contenders taking turns:

* ``neardup SimHash``: `shingle_features(text, S)` then `simhash64` (what `text_fingerprints` runs);
* ``datasketch MinHash(128)``: the shingles as UTF-8 strings, ``MinHash(num_perm=128)`` and
  ``update_batch`` (datasketch's default SHA-1 hash), as its documentation shows;
* ``datasketch MinHash(128), shared permutations``: the same, but the permutation parameters are made
  once and passed in, the cheapest way to build many MinHashes with datasketch;
* ``simhash.Simhash``: the `simhash` package (64 bits, MD5 per feature) over the same shingles, each
  weighted by its count.

Rows below the line split the work (tokens alone, features alone, the hashing alone given ready-made
shingles), so a slow row says where its time goes. ``--profile`` adds a cProfile of our path.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    DEFAULT_CORPUS,
    DEFAULT_RESULTS,
    Table,
    append_results,
    best_times,
    fmt_rate,
    fmt_ratio,
    load_corpus,
    print_machine,
)
from datasketch import MinHash
from simhash import Simhash

from neardup_core.extract.main_text import ExtractError, extract
from neardup_core.fingerprint import features as nf
from neardup_core.fingerprint.features import feature_tokens, shingle_features, tokens
from neardup_core.fingerprint.page import text_fingerprints
from neardup_core.fingerprint.simhash import simhash64
from neardup_core.ingest.decode import DecodeError, decode_body
from neardup_core.settings import CoreSettings

NUM_PERM = 128


def shingles_of(text: str, size: int) -> list[str]:
    """The word `size`-shingles of `feature_tokens(text)` in order (repeats kept), as strings."""
    toks = feature_tokens(text)
    if len(toks) <= size:
        return [" ".join(toks)] if toks else []
    return [" ".join(toks[i:i + size]) for i in range(len(toks) - size + 1)]


def simhash_weights(shingles: list[str]) -> dict[str, int | float]:
    """Shingle counts for `simhash.Simhash`; counts over 255 as floats, because simhash 2.1.2
    multiplies a uint8 bit array by an integer weight, which numpy 2 refuses above 255."""
    return {s: c if c < 256 else float(c) for s, c in Counter(shingles).items()}


def main_texts(corpus: Path, limit: int | None) -> list[str]:
    texts = []
    for page in load_corpus(corpus, limit):
        try:
            text = extract(decode_body(page.body, content_type="text/html").text).text
        except (DecodeError, ExtractError) as exc:
            print(f"skipped {page.path}: {exc}", file=sys.stderr)
            continue
        if text.strip():
            texts.append(text)
    return texts


def contenders(size: int) -> tuple[dict[str, Callable[[Any], object]], dict[str, Callable[[Any], object]]]:
    template = MinHash(num_perm=NUM_PERM)
    perms, scheme = template.permutations, template.scheme

    def ours(item: Any) -> int:
        f = shingle_features(item[0], size)
        return simhash64(f.hashes, f.weights)

    def datasketch_default(item: Any) -> MinHash:
        m = MinHash(num_perm=NUM_PERM)
        m.update_batch([s.encode("utf-8") for s in set(shingles_of(item[0], size))])
        return m

    def datasketch_shared(item: Any) -> MinHash:
        m = MinHash(num_perm=NUM_PERM, permutations=perms, scheme=scheme)
        m.update_batch([s.encode("utf-8") for s in set(shingles_of(item[0], size))])
        return m

    def simhash_package(item: Any) -> int:
        return Simhash(simhash_weights(shingles_of(item[0], size))).value  # type: ignore[no-any-return]

    def ours_cold(item: Any) -> int:
        nf._TOKEN_HASHES.clear()
        nf._FEATURE_TOKENS.clear()
        f = shingle_features(item[0], size)
        return simhash64(f.hashes, f.weights)

    main: dict[str, Callable[[Any], object]] = {
        "neardup SimHash (shingle_features + simhash64)": ours,
        "neardup SimHash, token caches emptied before each text": ours_cold,
        "datasketch MinHash(128), default": datasketch_default,
        "datasketch MinHash(128), shared permutations": datasketch_shared,
        "simhash.Simhash (MD5, count weights)": simhash_package,
    }

    def hashing_only_datasketch(item: Any) -> MinHash:
        m = MinHash(num_perm=NUM_PERM, permutations=perms, scheme=scheme)
        m.update_batch(item[2])
        return m

    parts: dict[str, Callable[[Any], object]] = {
        "  tokens alone (tokens: NFKC, casefold, regex)": lambda item: tokens(item[0]),
        "  feature tokens alone (feature_tokens)": lambda item: feature_tokens(item[0]),
        "  shingle strings alone (tokens + join)": lambda item: shingles_of(item[0], size),
        "  ours: shingle_features alone": lambda item: shingle_features(item[0], size),
        "  ours: simhash64 alone (given features)": lambda item: simhash64(item[1].hashes, item[1].weights),
        "  datasketch: update_batch alone (given encoded shingles)": hashing_only_datasketch,
        "  simhash: Simhash alone (given shingle counts)": lambda item: Simhash(item[3]).value,
    }
    settings = CoreSettings(shingle_size=size)
    whole: dict[str, Callable[[Any], object]] = {
        "text_fingerprints (text digest + features + SimHash)": lambda item: text_fingerprints(item[0], settings),
    }
    return main, {**parts, **whole}


def profile_ours(texts: list[str], size: int) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for text in texts:
        f = shingle_features(text, size)
        simhash64(f.hashes, f.weights)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(14)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="only the first N corpus pages")
    parser.add_argument("--quick", action="store_true", help="200 pages, best of 1")
    parser.add_argument("--repeat", type=int, default=5, help="runs per page and contender (best counts)")
    parser.add_argument("--shingle-size", type=int, default=CoreSettings().shingle_size,
                        help="words per shingle (default: the project's default)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of our path")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--no-write", action="store_true", help="print only; do not append to --results")
    args = parser.parse_args()
    if args.quick:
        args.limit = args.limit or 200
        args.repeat = 1
    started = time.perf_counter()
    print_machine()
    size = args.shingle_size

    texts = main_texts(args.corpus, args.limit)
    items = []
    for text in texts:
        shingles = shingles_of(text, size)
        items.append((text, shingle_features(text, size), [s.encode("utf-8") for s in set(shingles)],
                      simhash_weights(shingles)))
    n = len(items)
    words = sum(len(feature_tokens(t)) for t in texts)
    print(f"{n} main texts, {words / n:,.0f} words and {sum(len(i[2]) for i in items) / n:,.0f} distinct "
          f"{size}-shingles per text on average; best of {args.repeat}")

    main_engines, part_engines = contenders(size)
    totals = best_times(items, {**main_engines, **part_engines}, args.repeat)
    ours = totals["neardup SimHash (shingle_features + simhash64)"]
    table = Table(f"Fingerprints of {n} main texts ({size}-word shingles, best of {args.repeat} per text)",
                  ["fingerprint", "pages/s", "ms/page", "µs per 1000 words", "ours is faster by"])
    for name, total in totals.items():
        table.add(name, fmt_rate(n / total), f"{total / n * 1e3:.3f}", f"{total / words * 1e9:.1f}",
                  fmt_ratio(total / ours))
    table.notes += [
        "'ours is faster by' = this row's time / our SimHash's time (above 1: ours is faster). The issue's "
        "target is 3x against both peers.",
        "indented rows split the work and are not complete fingerprints; the datasketch and simhash "
        "'alone' rows start from shingles made outside the timing.",
        "ours looks up each token's placeholder form and mmh3 hash in per-process caches (words repeat "
        "across a crawl); the 'emptied' row clears them before every text, the worst case. The peers "
        "get their tokens from the same cached feature_tokens.",
        "peers hash the distinct shingles (datasketch) or the shingle counts (simhash); ours hashes the "
        "distinct shingles with weights 1 + log(count).",
    ]
    table.print()
    notes = []
    if args.profile:
        report = profile_ours(texts, size)
        print(report)
        notes.append("cProfile of our path (tottime):\n\n```\n" + report.strip() + "\n```")
    if not args.no_write:
        heading = f"bench_fingerprint: SimHash vs datasketch and simhash ({size}-shingles)" + \
            (" (quick)" if args.quick else "")
        append_results(args.results, heading, [table], notes=notes, started=started)


if __name__ == "__main__":
    np.seterr(over="ignore")
    main()
