"""Precision and recall of "containment >= t" on labelled corpus pairs, per band of exact containment.

    python bench/bench_containment.py [--sample N] [--same-group N] [--unrelated N] [--seed S]
                                      [--thresholds 0.3,0.4,...] [--write bench/results/containment.md]

The pairs are `neardup_core.testing.containment_pairs` (corpus articles embedded at 30-95% into other
articles' paragraphs, same-template-group page pairs, unrelated pairs), the estimate is
`neardup_core.fingerprint.containment.containment` on the sketches scan would make (`text_fingerprints(...).sketch`,
default settings: shingle size 2, 80 rows of 8 bits), judged against exact containment
(`neardup_core.testing.containment_eval`). Prints markdown; `--write` also writes it to a file, with the
date and the command (no machine paths). Measures quality, not time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR.parent) not in sys.path:  # run as `python bench/x.py` without installing
    sys.path.insert(0, str(BENCH_DIR.parent))

from neardup_core.fingerprint.containment import DEFAULT_CONTAINMENT  # noqa: E402
from neardup_core.settings import CoreSettings  # noqa: E402
from neardup_core.testing.containment_eval import (  # noqa: E402
    MARGIN,
    RATIO_BUCKETS,
    THRESHOLDS,
    ScoredPair,
    band_rows,
    error_rows,
    ratio_bucket,
    score,
    threshold_row,
    threshold_table,
)
from neardup_core.testing.containment_pairs import (  # noqa: E402
    EMBEDDED,
    SAME_GROUP,
    UNRELATED,
    build_containment_pairs,
)
from neardup_core.testing.corpus import corpus_dir, has_corpus  # noqa: E402


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def threshold_lines(scored: list[ScoredPair], thresholds: tuple[float, ...]) -> list[str]:
    head, rows = threshold_table([threshold_row(scored, t) for t in thresholds])
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in rows)]


def error_table(scored: list[ScoredPair], settings: CoreSettings) -> list[str]:
    head = ["|A| / |B|", "pairs", "bias", "mean abs error", "90th pct abs error", "predicted sd"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in error_rows(scored, settings, kinds=frozenset({EMBEDDED})):
        lines.append(f"| {_ratio_name(row.bucket)} | {row.pairs} | {row.bias:+.3f} | {row.mean_abs:.3f} | "
                     f"{row.p90_abs:.3f} | {row.predicted_sd:.3f} |")
    return lines


def ratio_table(scored: list[ScoredPair], t: float) -> list[str]:
    head = ["|A| / |B|", "pairs", "flagged", "precision", "recall", f"precision ±{MARGIN}", f"recall ±{MARGIN}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for bucket in RATIO_BUCKETS:
        members = [s for s in scored if ratio_bucket(s.pair.size_ratio) == bucket]
        row = threshold_row(members, t)
        flagged = sum(f for f, _ in row.flagged_by_band.values())
        lines.append(f"| {_ratio_name(bucket)} | {len(members)} | {flagged} | {_pct(row.precision)} | "
                     f"{_pct(row.recall)} | {_pct(row.margin_precision)} | {_pct(row.margin_recall)} |")
    return lines


def _ratio_name(bucket: tuple[float, float]) -> str:
    lo, hi = bucket
    return f"< {hi:g}" if lo == 1.0 else (f">= {lo:g}" if math.isinf(hi) else f"{lo:g}-{hi:g}")


def band_table(scored: list[ScoredPair], threshold: float, settings: CoreSettings) -> list[str]:
    lines = ["| |A| / |B| | pairs | share a band | share |", "|---|---|---|---|"]
    for row in band_rows(scored, threshold, settings):
        share = f"{row.sharing / row.pairs:.2f}" if row.pairs else "n/a"
        lines.append(f"| {_ratio_name(row.bucket)} | {row.pairs} | {row.sharing} | {share} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=corpus_dir())
    parser.add_argument("--sample", type=int, default=None, help="corpus pages to embed (default: all)")
    parser.add_argument("--same-group", type=int, default=None, help="same-group page pairs (default: all)")
    parser.add_argument("--unrelated", type=int, default=1000, help="unrelated article pairs")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--thresholds", default=",".join(map(str, THRESHOLDS)))
    parser.add_argument("--band-threshold", type=float, default=0.5,
                        help="exact containment of the pairs in the band table")
    parser.add_argument("--write", type=Path, default=None, help="also write the markdown to this file")
    args = parser.parse_args()
    if not has_corpus(args.corpus):
        print(f"SKIPPED: no corpus at {args.corpus} (expected MANIFEST.jsonl); pass --corpus DIR or set "
              "NEARDUP_CORPUS", file=sys.stderr)
        raise SystemExit(0)
    thresholds = tuple(float(t) for t in args.thresholds.split(","))
    settings = CoreSettings()
    made = build_containment_pairs(args.corpus, sample=args.sample, seed=args.seed, same_group=args.same_group,
                                   unrelated=args.unrelated, settings=settings)
    scored = score(made.pairs, settings)
    command = " ".join(["python bench/bench_containment.py",
                        *(a for a in sys.argv[1:] if not a.startswith("--corpus"))])
    out = [
        f"pairs: {made.count(EMBEDDED)} embedded (from {made.articles} articles of {made.sampled} sampled pages; "
        f"{len(made.skipped)} skipped: no article), {made.count(SAME_GROUP)} same-group (directed), "
        f"{made.count(UNRELATED)} unrelated; seed {args.seed}; signature {settings.bands * settings.rows} rows "
        f"of 8 bits, shingle size {settings.shingle_size}",
        "",
        "Flagged by \"estimate >= t\", per band of exact containment and per negative kind (flagged/pairs); "
        f"precision and recall against exact >= t, and with a margin of {MARGIN} (a flag is wrong only "
        f"below t - {MARGIN}, a miss counts only at or above t + {MARGIN}):",
        "",
        *threshold_lines(scored, thresholds),
        "",
        f"The default threshold (DEFAULT_CONTAINMENT = {DEFAULT_CONTAINMENT}) over all pairs by size ratio "
        "in distinct shingles:",
        "",
        *ratio_table(scored, DEFAULT_CONTAINMENT),
        "",
        "Error of the estimate (estimate - exact) on the embedded pairs, by size ratio in distinct shingles; "
        "predicted sd: `containment_sd` at the exact containment:",
        "",
        *error_table(scored, settings),
        "",
        f"Embedded pairs at exact containment >= {args.band_threshold} sharing one of scan's "
        f"{settings.bands} LSH bands of {settings.rows} rows with their original (the candidates today's "
        "band tables would give a containment check):",
        "",
        *band_table(scored, args.band_threshold, settings),
    ]
    flagged = [s for s in scored if s.pair.kind == SAME_GROUP and s.estimate >= 0.5]
    if flagged:
        out += ["", "Same-group pairs at an estimate >= 0.5 (B in A: exact, estimate):", ""]
        out += [f"- {s.pair.base} in {s.pair.other}: {s.pair.exact:.2f}, {s.estimate:.2f}" for s in flagged]
    text = "\n".join(out)
    print(text)
    if args.write:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        args.write.write_text(f"# Containment estimate: precision and recall on labelled corpus pairs\n\n"
                              f"Run {stamp}: `{command}`\n\n{text}\n")


if __name__ == "__main__":
    main()
