"""Extraction speed and fidelity on the corpus: lxml parse, resiliparse, stock jusText, our extract.

    python bench/bench_extract.py [--limit N] [--repeat R] [--corpus DIR]

Every page is decoded first (untimed) and its stoplist chosen once, so stock jusText and the fast
engine classify with the same list. Timing is per page, the engines taking turns on each page, and
each page counts its best of R runs: on a shared machine a burst of other work then inflates one run,
not the result. Rows:

* ``lxml parse``: `lxml.etree.fromstring` with an HTML parser, the floor of any lxml-based path;
* ``resiliparse``: `extract_plain_text(HTMLTree.parse(html), main_content=True)`, a C-level extractor;
* ``jusText (stock)``: `justext.justext(html, stoplist)`;
* ``fast jusText``: `neardup_core.extract.fastjustext.justext(html, stoplist)`, the same output;
* ``extract()``: the whole `neardup_core.extract.main_text.extract` (fast engine, stoplist choice, fallback).

Agreement compares the fast engine with stock jusText on every page: the kept paragraphs (text of the
paragraphs classed good), and every paragraph's text and final class.

Cold start: a fresh interpreter's import of `neardup_core.extract.main_text` and first `extract()` of a short
English page (which needs the stoplist word index and the English stoplist), the median of
``--cold-runs`` processes: with the index cache of `neardup_core.extract.stoplists` in place (every process
after the first on a machine), and with an empty cache directory (the first; it builds and saves it).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import justext
from common import lxml_parse, resiliparse_text
from lxml import etree

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neardup_core.extract import fastjustext  # noqa: E402
from neardup_core.extract.main_text import choose_stoplist, extract  # noqa: E402
from neardup_core.extract.stoplists import stoplist, union_stoplist  # noqa: E402
from neardup_core.ingest.decode import DecodeError  # noqa: E402
from neardup_core.testing.corpus import corpus_dir, load_html, read_manifest  # noqa: E402

DEFAULT_CORPUS = corpus_dir()
Engine = Callable[[str, frozenset[str]], object]
Page = tuple[str, str, frozenset[str]]  # path, decoded HTML, stoplist


def load_pages(corpus: Path, limit: int | None) -> list[Page]:
    """The corpus pages in manifest order, decoded, each with the stoplist `extract` would choose."""
    pages = []
    for page in read_manifest(corpus):
        try:
            html = load_html(corpus, page.path)
        except DecodeError as exc:
            print(f"skipped {page.path}: {exc}", file=sys.stderr)
            continue
        try:
            name = choose_stoplist(html, [p.text for p in fastjustext.paragraphs_of(html)])
        except etree.ParserError:
            name = None
        pages.append((page.path, html, stoplist(name) if name else union_stoplist()))
        if limit is not None and len(pages) >= limit:
            break
    return pages


def guarded(run: Engine) -> Engine:
    """`run`, returning None for a document without elements (where jusText raises)."""
    def call(html: str, words: frozenset[str]) -> object:
        try:
            return run(html, words)
        except etree.ParserError:
            return None
    return call


ENGINES: dict[str, Engine] = {
    "lxml parse": lambda html, _: lxml_parse(html),
    "resiliparse": lambda html, _: resiliparse_text(html),
    "jusText (stock)": guarded(justext.justext),
    "fast jusText": guarded(fastjustext.justext),
    "extract()": lambda html, _: extract(html),
}


def best_times(pages: list[Page], repeat: int) -> dict[str, float]:
    """Per engine, the sum over pages of the best of `repeat` runs, engines taking turns per page."""
    totals = dict.fromkeys(ENGINES, 0.0)
    clock = time.perf_counter
    for _, html, words in pages:
        for name, run in ENGINES.items():
            best = float("inf")
            for _ in range(repeat):
                start = clock()
                run(html, words)
                best = min(best, clock() - start)
            totals[name] += best
    return totals


def decisions(paragraphs: Sequence[Any] | None) -> list[tuple[str, str]]:
    """Each paragraph's text and final class."""
    return [(p.text, p.class_type) for p in paragraphs or ()]


def agreement(pages: list[Page]) -> tuple[int, int]:
    """Pages whose kept paragraphs are identical, and pages whose every paragraph and class is, fast
    engine against stock jusText."""
    kept_same = all_same = 0
    for _, html, words in pages:
        stock = decisions(guarded(justext.justext)(html, words))  # type: ignore[arg-type]
        fast = decisions(guarded(fastjustext.justext)(html, words))  # type: ignore[arg-type]
        all_same += stock == fast
        kept_same += [t for t, c in stock if c == "good"] == [t for t, c in fast if c == "good"]
    return kept_same, all_same


COLD_START = """
import time
start = time.perf_counter()
from neardup_core.extract.main_text import extract
imported = time.perf_counter()
result = extract("<html><body><p>" + "The council said that it would publish all of the reports "
                 "before the end of the year, and that the public could then read them. " * 4
                 + "</p></body></html>")
assert result.language == "English", result
print(imported - start, time.perf_counter() - imported)
"""


def cold_start(runs: int) -> dict[str, tuple[float, float]]:
    """Median seconds of `runs` fresh processes to import `neardup_core.extract.main_text` and to run the first
    `extract()`, with the stoplist index cache in place and with an empty cache directory."""
    root = Path(__file__).resolve().parents[1]
    results = {}
    with tempfile.TemporaryDirectory() as warm:
        for name in ("cached index", "empty cache"):
            times = []
            for _ in range(runs):
                with tempfile.TemporaryDirectory() as empty:
                    env = {**os.environ, "NEARDUP_CACHE_DIR": warm if name == "cached index" else empty}
                    out = subprocess.run([sys.executable, "-c", COLD_START], env=env, cwd=root,
                                         check=True, capture_output=True, text=True).stdout
                    times.append(tuple(map(float, out.split())))
            if name == "cached index":  # the first run built the cache: count the rest
                times = times[1:] or times
            results[name] = (statistics.median(t[0] for t in times),
                             statistics.median(t[1] for t in times))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N pages")
    parser.add_argument("--repeat", type=int, default=3, help="runs per page and engine (best counts)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--cold-runs", type=int, default=5, help="fresh processes per cold-start case")
    args = parser.parse_args()
    if not (args.corpus / "MANIFEST.jsonl").exists():
        sys.exit(f"no corpus at {args.corpus}")

    pages = load_pages(args.corpus, args.limit)
    kept_same, all_same = agreement(pages)
    gc.collect()
    gc.freeze()  # the loaded corpus is not garbage; keep collections from walking it
    totals = best_times(pages, args.repeat)

    n = len(pages)
    stock = totals["jusText (stock)"]
    print(f"{n} pages, {sum(len(html) for _, html, _ in pages) / 1e6:.1f} M characters; best of "
          f"{args.repeat} runs per page, engines taking turns")
    print(f"{'':18s} {'pages/s':>9s} {'ms/page':>9s} {'vs stock jusText':>17s}")
    for name, total in totals.items():
        print(f"{name:18s} {n / total:9.1f} {total / n * 1e3:9.3f} {stock / total:16.2f}x")
    print(f"agreement, fast vs stock jusText: kept paragraphs identical on {kept_same}/{n} pages "
          f"({kept_same / n:.2%}); every paragraph's text and class identical on {all_same}/{n} "
          f"({all_same / n:.2%})")
    if args.cold_runs:
        for name, (imported, first) in cold_start(args.cold_runs).items():
            print(f"cold start, {name}: import {imported:.3f} s + first extract() {first:.3f} s = "
                  f"{imported + first:.3f} s (median of {args.cold_runs} processes)")


if __name__ == "__main__":
    main()
