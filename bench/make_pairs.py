"""Write a labelled pair set built from the corpus (for `neardup tune`) and measure it.

    .venv/bin/python bench/make_pairs.py --out /tmp/neardup-pairs.jsonl
    .venv/bin/neardup tune --pairs /tmp/neardup-pairs.jsonl --plot docs/tune-k.png

Positives are near-duplicate variants of corpus pages, negatives are different articles of one template
group (see `neardup_core.testing.labelled`). The script prints, as Markdown tables: the set's size per kind,
precision / recall / F1 per k of our fingerprints, recall per variant kind and k, and the same for a
naive baseline: stock jusText and a stock SimHash (the `simhash` package, md5 features, weight one per
occurrence) over plain lower-cased 3-word shingles, with no number or date placeholders, no log weights
and no text digest. The baseline lives here, not in `neardup_core`, because nothing should use it.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import justext
from simhash import Simhash

from neardup_core.extract.stoplists import detect_stoplist
from neardup_core.fingerprint.page import html_fingerprints
from neardup_core.settings import CoreSettings
from neardup_core.testing.corpus import load_html, read_curated
from neardup_core.testing.evaluate import KScore, PairScore, pair_score, recommend_k, score_per_k
from neardup_core.testing.labelled import (
    NEGATIVE,
    Fingerprint,
    build_labelled_set,
    curated_rows,
    scored_rows,
    write_rows,
)

REPO = Path(__file__).resolve().parent.parent
KIND_ORDER = ("mirror", "numbers", "ad", "comments", "edits", "print", "template")
_WORDS = re.compile(r"\w+")


def baseline_fingerprint(html: str) -> Fingerprint:
    """Stock jusText (stoplist with the most hits, else English), then a stock 64-bit SimHash of the
    plain 3-word shingles of the kept text."""
    raw = html.encode("utf-8", "replace")
    try:
        paragraphs = justext.justext(raw, justext.get_stoplist("English"), encoding="utf-8")
        words = [w for p in paragraphs for w in p.text.split()]
        language = detect_stoplist(words)
        if language and language != "English":
            paragraphs = justext.justext(raw, justext.get_stoplist(language), encoding="utf-8")
    except Exception:  # stock jusText raises on empty or broken documents: no fingerprint
        return None, None
    text = " ".join(p.text for p in paragraphs if not p.is_boilerplate)
    toks = _WORDS.findall(text.lower())
    if len(toks) < 3:
        return None, None
    shingles = [" ".join(toks[i:i + 3]) for i in range(len(toks) - 2)]
    return None, Simhash(shingles, f=64).value


def ours(settings: CoreSettings) -> Callable[[str], Fingerprint]:
    return lambda html: html_fingerprints(html, settings)[:2]


def balanced_precision(recall: float, fp_rate: float) -> float:
    """Precision if duplicates and distinct pairs were equally many: the set's own precision depends on
    how many variants were made per negative, this does not."""
    return recall / (recall + fp_rate) if recall + fp_rate else 1.0


def per_k_table(per_k: list[KScore], negatives: int) -> str:
    lines = ["| k | precision | recall | F1 | TP | FP | FN | TN | FP rate | precision at 1:1 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in per_k:
        fp_rate = s.fp / negatives if negatives else 0.0
        lines.append(f"| {s.k} | {s.precision:.4f} | {s.recall:.4f} | {s.f1:.4f} | {s.tp} | {s.fp} | "
                     f"{s.fn} | {s.tn} | {fp_rate:.4f} | {balanced_precision(s.recall, fp_rate):.4f} |")
    return "\n".join(lines)


def per_kind_table(scored: list[tuple[dict[str, Any], PairScore]], max_k: int) -> str:
    by_kind: dict[str, list[PairScore]] = defaultdict(list)
    for row, score in scored:
        if row["duplicate"]:
            by_kind[row["kind"]].append(score)
    ks = range(max_k + 1)
    lines = ["| kind | pairs | " + " | ".join(f"k={k}" for k in ks) + " | median distance |",
             "|---|---|" + "---|" * (len(ks) + 1)]
    for kind in sorted(by_kind, key=lambda k: KIND_ORDER.index(k) if k in KIND_ORDER else 99):
        scores = by_kind[kind]
        recalls = [sum(s.predicted(k) for s in scores) / len(scores) for k in ks]
        dists = sorted(0 if s.exact else s.distance if s.distance is not None else 64 for s in scores)
        lines.append(f"| {kind} | {len(scores)} | " + " | ".join(f"{r:.3f}" for r in recalls)
                     + f" | {dists[len(dists) // 2]} |")
    return "\n".join(lines)


def report(name: str, scored: list[tuple[dict[str, Any], PairScore]], max_k: int, show_fp: int) -> KScore:
    negatives = sum(not row["duplicate"] for row, _ in scored)
    per_k = score_per_k([s for _, s in scored], max_k)
    best = recommend_k(per_k)
    print(f"\n## {name}\n")
    print(per_k_table(per_k, negatives))
    print(f"\nrecommended k = {best.k}: precision {best.precision:.4f}, recall {best.recall:.4f}\n")
    print(per_kind_table(scored, max_k))
    at3 = per_k[3] if len(per_k) > 3 else best
    print(f"\nat k=3: precision {at3.precision:.4f}, recall {at3.recall:.4f}, F1 {at3.f1:.4f}")
    if show_fp:
        fps = sorted(((s.distance if s.distance is not None else -1, s.exact, row) for row, s in scored
                      if not row["duplicate"] and s.predicted(max(3, best.k))), key=lambda t: t[0])
        misses = sorted(((s.distance if s.distance is not None else 99, row) for row, s in scored
                         if row["duplicate"] and not s.predicted(3)), key=lambda t: -t[0])
        print(f"\nnegatives detected at k={max(3, best.k)} ({len(fps)}):")
        for dist, exact, row in fps[:show_fp]:
            print(f"  d={dist} exact={exact} {Path(row['a']).name} ~ {Path(row['b']).name}")
        print(f"\npositives missed at k=3 ({len(misses)}), largest distance first:")
        for dist, row in misses[:show_fp]:
            print(f"  d={dist} {row['kind']} {row['base']} {row.get('template') or ''}")
    return best


def _short(path: str) -> str:
    return Path(path).name.removesuffix(".html.gz")


def curated_table(corpus: Path, fingerprint: Callable[[str], Fingerprint], ks: tuple[int, ...]) -> str:
    """Each curated pair of PAIRS.jsonl: its label, the distance, and the verdict at each k in `ks`."""
    lines = ["| id | expected | relation | pair | distance | " + " | ".join(f"k={k}" for k in ks) + " |",
             "|---|---|---|---|---|" + "---|" * len(ks)]
    for pair in read_curated(corpus):
        score = pair_score(pair["expected"] != "distinct", fingerprint(load_html(corpus, pair["a"])),
                           fingerprint(load_html(corpus, pair["b"])))
        dist = "exact" if score.exact else "none" if score.distance is None else str(score.distance)
        verdicts = []
        for k in ks:
            said = "dup" if score.predicted(k) else "distinct"
            if pair["expected"] in ("duplicate", "near-duplicate", "distinct"):
                said += "" if score.predicted(k) == score.duplicate else " ✗"
            verdicts.append(said)
        names = f"{_short(pair['a'])} ~ {_short(pair['b'])}"
        lines.append(f"| {pair['id']} | {pair['expected']} | {pair['relation']} | {names} | {dist} | "
                     + " | ".join(verdicts) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--out", type=Path, default=Path("/tmp/neardup-pairs.jsonl"))
    parser.add_argument("--sample", type=int, default=0, help="pages to make variants of (0: all)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--min-words", type=int, default=50)
    parser.add_argument("--max-k", type=int, default=12)
    parser.add_argument("--shingle-size", type=int, default=CoreSettings().shingle_size)
    parser.add_argument("--no-eval", action="store_true", help="only write the pairs")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--show", type=int, default=0, help="list up to N false positives and misses")
    parser.add_argument("--curated-only", action="store_true", help="only the PAIRS.jsonl table")
    parser.add_argument("--with-curated", action="store_true",
                        help="also write the curated pairs labelled duplicate, near-duplicate or distinct "
                             "(kind curated:<relation>) that are not same-group negatives already")
    args = parser.parse_args(argv)
    if not (args.corpus / "MANIFEST.jsonl").is_file():
        print(f"no corpus at {args.corpus} (expected MANIFEST.jsonl there)", file=sys.stderr)
        return 2
    settings = CoreSettings(shingle_size=args.shingle_size)
    if args.curated_only:
        print(f"## curated pairs (PAIRS.jsonl), shingle size {args.shingle_size}\n")
        print(curated_table(args.corpus, ours(settings), (3, 6, 8)))
        return 0

    started = time.perf_counter()
    labelled = build_labelled_set(args.corpus, sample=args.sample or None, seed=args.seed,
                                  min_words=args.min_words)
    if args.with_curated:
        labelled.rows.extend(curated_rows(args.corpus, labelled.rows))
    n = write_rows(labelled.rows, args.out)
    kinds = labelled.kinds()
    print(f"# labelled pairs: {n} rows written to {args.out} in {time.perf_counter() - started:.0f} s\n")
    print(f"pages sampled: {labelled.sampled}; skipped as too short (< {args.min_words} words of main text): "
          f"{len(labelled.skipped_short)}; skipped as no article (jusText kept nothing, full-text fallback): "
          f"{len(labelled.skipped_fallback)}; article bases: {kinds['mirror']}; template hosts: "
          f"{labelled.template_hosts}\n")
    print(f"same-group pairs left out of the negatives ({len(labelled.excluded_negatives)}):")
    for pair, reason in labelled.excluded_negatives.items():
        print(f"  {pair}: {reason}")
    print()
    print("| kind | pairs | duplicate |\n|---|---|---|")
    for kind in [*KIND_ORDER, NEGATIVE]:
        print(f"| {kind} | {kinds[kind]} | {kind != NEGATIVE} |")
    if args.no_eval:
        return 0

    started = time.perf_counter()
    scored = list(scored_rows(labelled.rows, ours(settings)))
    report(f"neardup (shingle size {args.shingle_size}; {time.perf_counter() - started:.0f} s)", scored,
           args.max_k, args.show)
    print(f"\n## curated pairs (PAIRS.jsonl), shingle size {args.shingle_size}\n")
    print(curated_table(args.corpus, ours(settings), (3, 6, 8)))
    if not args.no_baseline:
        started = time.perf_counter()
        base = list(scored_rows(labelled.rows, baseline_fingerprint))
        report(f"baseline: stock jusText + SimHash of plain 3-word shingles "
               f"({time.perf_counter() - started:.0f} s)", base, args.max_k, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
