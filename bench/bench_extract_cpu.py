"""`extract()` CPU per page of several checkouts (e.g. pure Python against Cython-compiled modules), and
whether they extract alike.

    python bench/bench_extract_cpu.py --code before=/tmp/before --code after=. [--rounds 3] [--repeat 3]

Each ``--code LABEL=DIR`` runs in processes of its own with DIR first on the Python path and as working
directory (a `git archive` copy has no compiled module: build one with ``python setup.py build_ext
--inplace`` in it). The checkouts take turns, `--rounds` processes each; in a process every corpus page
is decoded first (untimed), extracted once (warm), then timed `--repeat` times (`time.process_time`,
best counts). A page's time is its best over all rounds, summed over pages: a burst of other work on a
shared machine inflates one run, not the result. Rows: `extract()` and `fastjustext.paragraphs_of`
(parsing and segmenting only). Each checkout also hashes `extract()` of every page (text, paragraphs,
language, boilerplate ratio, fallback, template finding) and every paragraph's facts; they must match.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import gc, hashlib, importlib, json, sys, time
from lxml import etree
from neardup_core.extract import fastjustext
from neardup_core.extract.main_text import extract
from neardup_core.extract.stoplists import stoplist, union_stoplist
from neardup_core.ingest.decode import DecodeError
from neardup_core.testing.corpus import load_html, read_manifest
from pathlib import Path
corpus, repeat, check = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
pages = []
for page in read_manifest(corpus):
    try:
        pages.append(load_html(corpus, page.path))
    except DecodeError:
        pass
def paragraphs(html):
    try:
        return fastjustext.paragraphs_of(html)
    except etree.ParserError:
        return None
digests = {}
if check:
    kept, facts = hashlib.sha256(), hashlib.sha256()
    for html in pages:
        e = extract(html)
        kept.update(repr((e.text, e.paragraphs, e.language, e.boilerplate_ratio, e.fallback, e.template)).encode())
        ps = paragraphs(html)
        if ps is not None:
            fastjustext.classify(ps, union_stoplist(), lower_cased=True)
            facts.update(repr([(p.text, p.class_type, p.dom_path, p.xpath, p.chars_count_in_links, p.tags_count,
                                p.words_count) for p in ps]).encode())
    digests = {"extract()": kept.hexdigest()[:16], "paragraphs": facts.hexdigest()[:16]}
for html in pages:
    extract(html)
gc.collect()
gc.freeze()
clock = time.process_time
times = {}
for name, run in (("extract()", extract), ("paragraphs_of", paragraphs)):
    bests = times[name] = []
    for html in pages:
        best = float("inf")
        for _ in range(repeat):
            start = clock()
            run(html)
            best = min(best, clock() - start)
        bests.append(best)
compiled = sorted(m.split(".")[-1] for m, module in sys.modules.items()
                  if m.startswith("neardup_core") and (getattr(module, "__file__", None) or "").endswith(".so"))
print(json.dumps({"times": times, "digests": digests, "compiled": compiled}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--code", action="append", required=True, metavar="LABEL=DIR")
    parser.add_argument("--rounds", type=int, default=3, help="processes per checkout, taking turns")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per page in a process (best counts)")
    parser.add_argument("--corpus", type=Path, default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from neardup_core.testing.corpus import corpus_dir

    corpus = args.corpus or corpus_dir()
    codes = dict(spec.split("=", 1) for spec in args.code)
    best: dict[str, dict[str, list[float]]] = {}
    digests: dict[str, dict[str, str]] = {}
    for round_ in range(args.rounds):
        for label, path in codes.items():
            root = Path(path).resolve()  # first on the path, and the working directory (`-c` puts it first)
            out = subprocess.run([sys.executable, "-c", CHILD, str(corpus), str(args.repeat), str(int(round_ == 0))],
                                 env={**os.environ, "PYTHONPATH": str(root)}, cwd=root, check=True,
                                 capture_output=True, text=True).stdout
            result = json.loads(out)
            if round_ == 0:
                digests[label] = result["digests"]
                print(f"{label}: compiled modules {', '.join(result['compiled']) or 'none'}; "
                      f"digests {result['digests']}", flush=True)
            for name, times in result["times"].items():
                known = best.setdefault(label, {}).get(name)
                best[label][name] = times if known is None else list(map(min, known, times))
    first = next(iter(codes))
    pages = len(best[first]["extract()"])
    print(f"\n{pages} pages; per page the best of {args.rounds} x {args.repeat} runs, CPU time, summed")
    print(f"{'':16s} " + " ".join(f"{label + ' ms/page':>18s} {'x':>6s}" for label in codes))
    for name in best[first]:
        base = sum(best[first][name])
        print(f"{name:16s} " + " ".join(
            f"{sum(best[label][name]) / pages * 1e3:18.3f} {base / sum(best[label][name]):5.2f}x" for label in codes))
    same = all(d == digests[first] for d in digests.values())
    print(f"outputs {'identical' if same else 'DIFFER'} across checkouts")


if __name__ == "__main__":
    main()
