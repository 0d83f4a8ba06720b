"""Fingerprinting with MinHash against SimHash alone, on the corpus's main texts, in one run.

    python bench/bench_minhash.py [--limit N] [--quick] [--repeat R] [--bands B --rows R]

Every page is decoded and its main text extracted once, before anything is timed. Then, per page,
best of R runs, the contenders taking turns on each page (`common.best_times`):

* ``SimHash alone``: `text_fingerprints` with MinHash off (tokens, text digest, features, SimHash: what
  `fingerprint` does after extraction before this issue);
* ``SimHash + MinHash``: `text_fingerprints` with MinHash on (the same, plus the b-bit signature of
  bands * rows rows over the same shingle hashes);
* for comparison, ``datasketch MinHash``: datasketch's MinHash of the same number of permutations over
  the same 64-bit shingle hashes (`update_batch` of their 8-byte encodings, shared permutations);
* rows below the line time the parts alone (features, SimHash, our signature given the features).

The ratio is the issue's goal: fingerprinting with MinHash within 2x of SimHash alone. A second table
times the whole page (decode + extraction + fingerprint, `fingerprint_event`) with MinHash off and on.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    DEFAULT_CORPUS,
    DEFAULT_RESULTS,
    Table,
    append_results,
    best_times,
    event_of,
    fmt_rate,
    fmt_ratio,
    load_corpus,
    print_machine,
)

from neardup_core.extract.main_text import ExtractError, extract
from neardup_core.fingerprint.features import token_features, tokens
from neardup_core.fingerprint.minhash import minhash
from neardup_core.fingerprint.page import fingerprint_event, text_fingerprints
from neardup_core.fingerprint.simhash import simhash64
from neardup_core.ingest.decode import DecodeError, decode_body
from neardup_core.settings import CoreSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="only the first N corpus pages")
    parser.add_argument("--quick", action="store_true", help="200 pages, best of 1")
    parser.add_argument("--repeat", type=int, default=5, help="runs per page and contender (best counts)")
    parser.add_argument("--bands", type=int, default=CoreSettings.bands)
    parser.add_argument("--rows", type=int, default=CoreSettings.rows)
    parser.add_argument("--no-datasketch", action="store_true", help="leave datasketch out")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--no-write", action="store_true", help="print only; do not append to --results")
    args = parser.parse_args()
    if args.quick:
        args.limit = args.limit or 200
        args.repeat = 1
    started = time.perf_counter()
    print_machine()
    off = CoreSettings(minhash=False, bands=args.bands, rows=args.rows)
    on = CoreSettings(minhash=True, bands=args.bands, rows=args.rows)
    perms = args.bands * args.rows

    pages = load_corpus(args.corpus, args.limit)
    items: list[Any] = []
    for page in pages:
        try:
            text = extract(decode_body(page.body, content_type="text/html").text).text
        except (DecodeError, ExtractError) as exc:
            print(f"skipped {page.path}: {exc}", file=sys.stderr)
            continue
        if text.strip():
            items.append((text, token_features(tokens(text), on.shingle_size)))
    n = len(items)
    shingles = sum(len(f) for _, f in items) / n
    print(f"{n} main texts, {shingles:,.0f} distinct shingles per text on average; signature {perms} rows; "
          f"best of {args.repeat}")

    engines: dict[str, Any] = {
        "SimHash alone (text_fingerprints, MinHash off)": lambda item: text_fingerprints(item[0], off),
        f"SimHash + MinHash {args.bands}x{args.rows} (text_fingerprints, MinHash on)":
            lambda item: text_fingerprints(item[0], on),
    }
    if not args.no_datasketch:
        from datasketch import MinHash

        template = MinHash(num_perm=perms)
        permutations, scheme = template.permutations, template.scheme

        def datasketch(item: Any) -> object:
            m = MinHash(num_perm=perms, permutations=permutations, scheme=scheme)
            m.update_batch(list(item[1].hashes.astype("<u8").view("S8")))
            return m

        engines[f"  datasketch MinHash({perms}) alone, given the shingle hashes"] = datasketch
    engines |= {
        "  features alone (tokens + token_features)": lambda item: token_features(tokens(item[0]), on.shingle_size),
        "  SimHash alone, given the features": lambda item: simhash64(item[1].hashes, item[1].weights),
        f"  our MinHash({perms}) alone, given the features": lambda item: minhash(item[1].hashes, perms),
    }
    totals = best_times(items, engines, args.repeat)
    base = totals["SimHash alone (text_fingerprints, MinHash off)"]
    table = Table(f"Fingerprints of {n} main texts, MinHash {args.bands}x{args.rows} (best of {args.repeat})",
                  ["fingerprint", "pages/s", "ms/page", "time / SimHash alone"])
    for name, total in totals.items():
        table.add(name, fmt_rate(n / total), f"{total / n * 1e3:.3f}", fmt_ratio(total / base))
    table.notes += [
        "goal of issue 12: 'SimHash + MinHash' within 2x of 'SimHash alone' (the ratio column, same run).",
        "indented rows are parts, not complete fingerprints.",
    ]

    events = [event_of(page, i) for i, page in enumerate(pages)]
    whole = best_times(events, {
        "fingerprint_event, MinHash off": lambda raw: fingerprint_event(raw, settings=off),
        "fingerprint_event, MinHash on": lambda raw: fingerprint_event(raw, settings=on),
    }, max(1, args.repeat // 2))
    base_whole = whole["fingerprint_event, MinHash off"]
    pages_table = Table(f"Whole pages: decode + extraction + fingerprint, {len(events)} corpus pages",
                        ["path", "pages/s", "ms/page", "time / MinHash off"])
    for name, total in whole.items():
        pages_table.add(name, fmt_rate(len(events) / total), f"{total / len(events) * 1e3:.3f}",
                        fmt_ratio(total / base_whole))
    table.print()
    pages_table.print()
    if not args.no_write:
        heading = f"bench_minhash: fingerprinting with MinHash {args.bands}x{args.rows} vs SimHash alone" + \
            (" (quick)" if args.quick else "")
        append_results(args.results, heading, [table, pages_table], started=started)


if __name__ == "__main__":
    np.seterr(over="ignore")
    main()
