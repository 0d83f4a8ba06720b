"""Extraction quality against the corpus ground truth, and what the template check changes.

    python bench/bench_extraction.py [--extract NAME ...] [--corpus DIR] [--out FILE] [--no-write]
                                     [--labelled [N]]

Each extraction named by ``--extract`` runs over every corpus page (default: both, in one run):

* ``justext``: `extract(html, template_check=False)`, jusText's kept text as it is (with the stoplist
  choice and the full-text fallback when it keeps nothing): the behaviour before the template check;
* ``template-check``: `extract(html)`, the default, which recognises kept text that is template
  (`neardup_core.extract.template`) and decides the page on what it really holds, or skips it.

Quality is measured on the 391 pages with ground truth (`ground-truth/*.jsonl.gz`): the bag of
lower-cased words of the main text against the gold text's, per page (precision = shared words /
extracted words, recall = shared words / gold words, F1 of the two; an empty or skipped extraction has
precision, recall and F1 0), averaged per source and over all pages; and how many pages keep less than
50% and less than 20% of the gold words. Over all 796 pages: how many pages the template check changed
and how (the prose block, the declared content, the page's own text, a skip), and how many pairs of
different pages get the same main-text digest (the exact extraction collisions that no k can separate;
pairs that `PAIRS.jsonl` labels duplicate or near-duplicate are not counted), and the extraction time
(each page's best of `--repeat` runs, the extractions taking turns).

With ``--labelled`` (N sampled pages, default all), also the labelled set of `neardup tune`
(`neardup_core.testing.labelled`: seven kinds of variants of each sampled page, and every pair of
different pages of one template group) is built once and scored with each extraction's fingerprints
(`text_fingerprints` of its main text; none for an empty or skipped page): precision and recall at
k = 3 (the default) and k = 7, and recall per variant kind at k = 3, the same rows for both.

The tables go to standard output and are appended to ``bench/results/extraction.md``.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from common import DEFAULT_CORPUS, Table, append_results, best_times, require_corpus, say

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neardup_core.extract.main_text import Extraction, extract  # noqa: E402
from neardup_core.fingerprint.page import text_fingerprints  # noqa: E402
from neardup_core.testing.corpus import load_html, read_curated, read_manifest  # noqa: E402
from neardup_core.testing.evaluate import PairScore, score_per_k  # noqa: E402
from neardup_core.testing.labelled import NEGATIVE, build_labelled_set, read_ground_truth, scored_rows  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "extraction.md"
EXTRACTIONS: dict[str, Callable[[str], Extraction]] = {
    "justext": lambda html: extract(html, template_check=False),
    "template-check": extract,
}
LOW_RECALL = (0.5, 0.2)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Score:
    precision: float
    recall: float

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


def score(gold: str, text: str) -> Score:
    expected, got = words(gold), words(text)
    common = sum((expected & got).values())
    return Score(common / sum(got.values()) if got else 0.0, common / sum(expected.values()) if expected else 0.0)


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def collisions(texts: dict[str, str], not_distinct: set[frozenset[str]]) -> list[tuple[str, str]]:
    """Pairs of different pages with the same main-text digest (non-empty text only)."""
    by_digest: dict[str, list[str]] = defaultdict(list)
    for path, text in texts.items():
        if text.strip():
            by_digest[text_fingerprints(text).digest].append(path)
    return [(a, b) for paths in by_digest.values() for a, b in combinations(sorted(paths), 2)
            if frozenset((a, b)) not in not_distinct]


def labelled_tables(corpus: Path, names: list[str], sample: int | None) -> list[Table]:
    """Precision and recall on the labelled set, one set of rows scored by each extraction."""
    say(f"building the labelled set ({'all' if sample is None else sample} sampled pages)")
    labelled = build_labelled_set(corpus, sample=sample, seed=7)
    kinds = sorted({row["kind"] for row in labelled.rows if row["duplicate"]})
    scored: dict[str, list[tuple[str, PairScore]]] = {}
    for name in names:
        say(f"scoring the labelled set with {name}")
        run = EXTRACTIONS[name]

        def fingerprint(html: str, run: Callable[[str], Extraction] = run) -> tuple[str | None, int | None]:
            text = run(html).text
            return text_fingerprints(text)[:2] if text.strip() else (None, None)

        scored[name] = [(row["kind"], s) for row, s in scored_rows(labelled.rows, fingerprint)]
    n_dup = sum(row["duplicate"] for row in labelled.rows)
    overall = Table(f"Labelled set: {n_dup} duplicate pairs, {len(labelled.rows) - n_dup} distinct "
                    f"({labelled.sampled} sampled pages, seed 7)",
                    ["extraction", "k", "recall", "precision", "F1", "false positives", "false negatives"])
    per_kind = Table("Labelled set: recall per variant kind at k = 3", ["extraction", *kinds])
    for name in names:
        by_k = {s.k: s for s in score_per_k([s for _, s in scored[name]], max_k=7)}
        for k in (3, 7):
            s = by_k[k]
            overall.add(name, k, f"{s.recall:.3f}", f"{s.precision:.3f}", f"{s.f1:.3f}", s.fp, s.fn)
        cells = []
        for kind in kinds:
            hits = [s.predicted(3) for kd, s in scored[name] if kd == kind]
            cells.append(f"{sum(hits) / len(hits):.3f} ({len(hits)})")
        per_kind.add(name, *cells)
    negatives = sum(kind == NEGATIVE for kind, _ in scored[names[0]])
    overall.notes.append(f"{negatives} distinct pairs (same-group negatives, curated distinct pairs among them)")
    return [overall, per_kind]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extract", action="append", choices=sorted(EXTRACTIONS),
                        help="an extraction to measure (repeatable; default: all, the old one first)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repeat", type=int, default=2, help="timing runs per page (the best counts)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-write", action="store_true", help="print the tables only")
    parser.add_argument("--labelled", nargs="?", type=int, const=0, default=None, metavar="N",
                        help="also score the labelled set of N sampled pages (no N: all pages)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    require_corpus(args.corpus)
    names = args.extract or list(EXTRACTIONS)

    say("decoding the corpus")
    pages = {page.path: load_html(args.corpus, page.path) for page in read_manifest(args.corpus)}
    gold = read_ground_truth(args.corpus)
    not_distinct = {frozenset((c["a"], c["b"])) for c in read_curated(args.corpus) if c["expected"] != "distinct"}
    sources = sorted({path.split("/")[1] for path in gold})

    results: dict[str, dict[str, Extraction]] = {}
    for name in names:
        say(f"extracting with {name}")
        results[name] = {path: EXTRACTIONS[name](html) for path, html in pages.items()}
    say("timing")
    times = best_times(list(pages.values()), {name: EXTRACTIONS[name] for name in names}, args.repeat)

    quality = Table("Extraction against the ground truth (bag of words per page, mean over pages)",
                    ["source", "pages", *[f"{n} {m}" for n in names for m in ("P", "R", "F1")]])
    low = Table("Pages that keep less than X of the gold words (recall < X)",
                ["source", "pages", *[f"{n} < {x:.0%}" for n in names for x in LOW_RECALL]])
    scores = {name: {path: score(text, results[name][path].text) for path, text in gold.items() if path in pages}
              for name in names}
    for source in [*sources, "all"]:
        paths = [p for p in scores[names[0]] if source == "all" or p.split("/")[1] == source]
        row: list[object] = [source, len(paths)]
        low_row: list[object] = [source, len(paths)]
        for name in names:
            s = [scores[name][p] for p in paths]
            row += [f"{mean([x.precision for x in s]):.3f}", f"{mean([x.recall for x in s]):.3f}",
                    f"{mean([x.f1 for x in s]):.3f}"]
            low_row += [sum(x.recall < limit for x in s) for limit in LOW_RECALL]
        quality.add(*row)
        low.add(*low_row)

    effect = Table("Over all corpus pages", ["", *names])
    effect.add("pages", *[len(pages)] * len(names))
    for action in ("block", "content", "own-text", "skip"):
        effect.add(f"template check: {action}",
                   *[sum(e.template is not None and e.template.action == action for e in results[n].values())
                     for n in names])
    effect.add("no main text (skipped)", *[sum(not e.text.strip() for e in results[n].values()) for n in names])
    pairs = {name: collisions({p: e.text for p, e in results[name].items()}, not_distinct) for name in names}
    effect.add("pairs of different pages with one text digest", *[len(pairs[n]) for n in names])
    effect.add("extraction time, all pages (s, best of runs)", *[f"{times[n]:.2f}" for n in names])
    effect.add("ms per page", *[f"{1e3 * times[n] / len(pages):.2f}" for n in names])

    changed: list[str] = []
    if "template-check" in results:
        for path, e in results["template-check"].items():
            if e.template is not None:
                before = scores.get("justext", {}).get(path)
                after = scores["template-check"].get(path)
                gold_note = f"; gold F1 {before.f1:.2f} -> {after.f1:.2f}" if before and after else ""
                changed.append(f"`{path}`: {e.template.action}{gold_note}")
    notes = ["Pages changed by the template check (gold F1 before -> after where the page has ground truth):",
             "", *[f"- {line}" for line in changed], "",
             "Pairs with one text digest per extraction:", ""]
    for name in names:
        notes.append(f"- {name}: " + ("; ".join(f"`{a}` = `{b}`" for a, b in pairs[name]) or "none"))
    tables = [quality, low, effect]
    if args.labelled is not None:
        tables += labelled_tables(args.corpus, names, args.labelled or None)
    for table in tables:
        table.print()
    print("\n".join(notes))
    if not args.no_write:
        append_results(args.out, "Extraction quality and the template check", tables, notes=notes,
                       started=started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
