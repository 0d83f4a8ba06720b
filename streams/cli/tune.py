"""`neardup tune`: precision, recall and F1 on labelled pairs for SimHash (per k), MinHash (per
bands x rows and J) and both (the decision rule), the recommended setting, and the curves."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import track
from rich.table import Table

from neardup_core.fingerprint.page import html_fingerprints, text_fingerprints
from neardup_core.settings import CoreSettings
from neardup_core.testing.evaluate import (
    KScore,
    PairScore,
    SweepScore,
    load_page,
    pair_score,
    read_pairs,
    recommend,
    recommend_by_goals,
    recommend_k,
    score_per_k,
    sweep,
)
from streams.settings import Settings

BAND_DESIGNS = ((8, 4), (12, 4), (16, 2), (16, 3), (16, 4), (20, 4), (24, 4), (32, 3), (32, 4), (20, 5))
"""The bands x rows swept (8-bit rows); signatures are made once with the most rows and cut."""
JACCARDS = tuple(j / 100 for j in range(20, 96, 5))
MIN_PRECISION = 0.998
MIN_RECALL = 0.97
MIN_KIND_RECALL = 0.9
"""The goals of issue 12: recall >= 0.97 at precision >= 0.998, every variant kind >= 0.9."""
RECALL_MARGIN = 0.002
"""A setting within this much recall of the best is as good: the cheapest of them is recommended."""


@dataclasses.dataclass
class TuneResult:
    per_k: list[KScore]
    scores: list[SweepScore]
    best: SweepScore
    by_kind: dict[str, dict[str, tuple[int, int]]]
    """kind -> {"simhash k=..." / "recommended": (found, pairs)}."""


def signature_settings(core: CoreSettings, band_designs: tuple[tuple[int, int], ...]) -> CoreSettings:
    """The core settings with MinHash on and a signature of the most rows any swept design needs."""
    rows = max(b * r for b, r in band_designs)
    return dataclasses.replace(core, minhash=True, bands=rows // 2, rows=2)


def cheapest_best(scores: list[SweepScore], min_precision: float, expected_pages: int, method: str = "both"
                  ) -> SweepScore:
    """`recommend`, then the cheapest setting (fewest tables, then the highest J, then the smallest k)
    among those of the method whose recall is within RECALL_MARGIN of it at the same precision floor."""
    top = recommend(scores, min_precision=min_precision, expected_pages=expected_pages, method=method)
    if top.precision < min_precision:
        return top
    close = [s for s in scores if s.method == top.method and s.precision >= min_precision
             and s.recall >= top.recall - RECALL_MARGIN]
    return min(close, key=lambda s: (s.tables(expected_pages), -(s.jaccard or 0.0), s.k or 0, -s.recall))


def run_tune(pairs_path: Path, *, plot: Path | None, max_k: int, settings: Settings,
             min_precision: float = MIN_PRECISION, report: Path | None = None) -> TuneResult:
    console = Console(width=max(Console().width, 160))
    core = signature_settings(settings.core, BAND_DESIGNS)
    cache: dict[str, tuple[Any, ...]] = {}

    def fingerprint_of(ref: object) -> tuple[Any, ...]:
        key = ref if isinstance(ref, str) else repr(ref)
        if key not in cache:
            kind, content = load_page(ref, pairs_path.parent)
            cache[key] = html_fingerprints(content, core) if kind == "html" else text_fingerprints(content, core)
        return cache[key]

    rows = read_pairs(pairs_path)
    scores = [pair_score(bool(r["duplicate"]), fingerprint_of(r["a"]), fingerprint_of(r["b"]))
              for r in track(rows, description="fingerprinting pairs", console=console, transient=True)]
    ks = range(max_k + 1)
    per_k = score_per_k(scores, max_k)
    kinds = [str(r.get("kind", "")) for r in rows]
    swept = sweep(scores, ks, JACCARDS, BAND_DESIGNS, kinds)
    def by_goals(k: int | None) -> SweepScore | None:
        return recommend_by_goals(swept, k=k, min_precision=min_precision, min_recall=MIN_RECALL,
                                  min_kind_recall=MIN_KIND_RECALL, expected_pages=settings.expected_pages,
                                  kind_filter=is_variant_kind)

    any_k = by_goals(None)
    best = by_goals(settings.k) or any_k or cheapest_best(swept, min_precision, settings.expected_pages)
    by_kind = kind_recall(rows, scores, best, ks)
    duplicates, distinct = sum(s.duplicate for s in scores), sum(not s.duplicate for s in scores)
    console.print(simhash_table(per_k, f"{pairs_path.name}: {duplicates} duplicate and {distinct} distinct pairs; "
                                       f"SimHash alone"))
    assert best.bands is not None
    console.print(grid_table(swept, best.bands, best.rows or 0, max_k))
    console.print(designs_table(swept, min_precision, settings.expected_pages))
    console.print(kinds_table(by_kind))
    simhash_best = recommend_k(per_k, min_precision)
    console.print(f"SimHash alone: best recall at precision >= {min_precision}: k = {simhash_best.k} "
                  f"(recall {simhash_best.recall:.3f}, precision {simhash_best.precision:.4f})")
    top = cheapest_best(swept, min_precision, settings.expected_pages)
    console.print(f"best recall at precision >= {min_precision} (the cheapest within {RECALL_MARGIN}): {top.label}: "
                  f"recall {top.recall:.4f}, precision {top.precision:.4f}, {top.fp} false positives")
    if any_k is not None and any_k != best:
        console.print(f"over every k: {any_k.label}: recall {any_k.recall:.4f}, {any_k.fp} false positives, "
                      f"{any_k.tables(settings.expected_pages)} index tables")
    console.print(f"recommended: {best.label}: recall {best.recall:.4f}, precision {best.precision:.4f}, F1 "
                  f"{best.f1:.4f}, {best.fp} false positives, {best.tables(settings.expected_pages)} index tables at "
                  f"{settings.expected_pages:,} pages: at the configured k, the fewest false positives among the "
                  f"settings with recall >= {MIN_RECALL} at precision >= {min_precision} and every variant kind >= "
                  f"{MIN_KIND_RECALL} (then the best recall, the fewest tables, the highest J); set "
                  f"NEARDUP_K={best.k} NEARDUP_MINHASH=1 NEARDUP_BANDS={best.bands} NEARDUP_ROWS={best.rows} "
                  f"NEARDUP_JACCARD={best.jaccard:.2f}")
    if plot is not None:
        write_plot(per_k, swept, best, plot)
        console.print(f"plot written to {plot}")
    if report is not None:
        report.write_text(markdown_report(per_k, swept, best, by_kind, min_precision, settings.expected_pages,
                                          max_k))
        console.print(f"tables written to {report}")
    return TuneResult(per_k, swept, best, by_kind)


def is_variant_kind(kind: str) -> bool:
    """The generated variant kinds (the goal's 'every kind'), not the curated pairs."""
    return not kind.startswith("curated:")


def kind_recall(rows: list[dict[str, Any]], scores: list[PairScore], best: SweepScore, ks: range
                ) -> dict[str, dict[str, tuple[int, int]]]:
    out: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for row, score in zip(rows, scores, strict=True):
        kind = str(row.get("kind", "duplicate" if row["duplicate"] else "distinct"))
        cells = {f"simhash k={k}": score.predicted(k) for k in (3, best.k or 0)}
        cells["minhash alone"] = score.predicted_by("minhash", 0, best.lsh)
        cells["recommended"] = score.predicted_by(best.method, best.k or 0, best.lsh)
        for name, said in cells.items():
            out[kind][name][0] += said
            out[kind][name][1] += 1
    return {kind: {name: (v[0], v[1]) for name, v in cells.items()} for kind, cells in out.items()}


def simhash_table(per_k: list[KScore], title: str) -> Table:
    best = recommend_k(per_k, MIN_PRECISION)
    table = Table(title=title)
    for col in ("k", "precision", "recall", "F1", "TP", "FP", "FN", "TN"):
        table.add_column(col, justify="right")
    for s in per_k:
        table.add_row(str(s.k), f"{s.precision:.4f}", f"{s.recall:.4f}", f"{s.f1:.4f}", str(s.tp), str(s.fp),
                      str(s.fn), str(s.tn), style="bold green" if s.k == best.k else None)
    return table


def _cell(s: SweepScore) -> str:
    return f"{s.recall:.3f} ({s.fp})"


def grid_table(swept: list[SweepScore], bands: int, rows: int, max_k: int) -> Table:
    """Recall (false positives) per J and k, with MinHash bands x rows: the k x J table."""
    ks = [k for k in range(max_k + 1) if k <= 6]
    table = Table(title=f"recall (false positives) with MinHash {bands}x{rows}, per J and k")
    table.add_column("J", justify="right")
    table.add_column("MinHash alone", justify="right")
    for k in ks:
        table.add_column(f"k={k}", justify="right")
    for row in grid(swept, bands, rows, ks):
        table.add_row(*row)
    return table


def grid(swept: list[SweepScore], bands: int, rows: int, ks: list[int]) -> list[list[str]]:
    cells = {(s.method, s.k, s.jaccard): s for s in swept if s.bands == bands and s.rows == rows}
    simhash = {s.k: s for s in swept if s.method == "simhash"}
    out = [["SimHash alone", "", *[_cell(simhash[k]) for k in ks]]]
    for j in JACCARDS:
        out.append([f"{j:.2f}", _cell(cells[("minhash", None, j)]), *[_cell(cells[("both", k, j)]) for k in ks]])
    return out


def designs_table(swept: list[SweepScore], min_precision: float, expected_pages: int) -> Table:
    table = Table(title=f"per bands x rows: the best setting at precision >= {min_precision}")
    for col in ("bands x rows", "signature bytes", "MinHash alone: J", "recall", "FP", "both: k", "J", "recall",
                "FP", "tables"):
        table.add_column(col, justify="right")
    for row in designs_rows(swept, min_precision, expected_pages):
        table.add_row(*row)
    return table


def designs_rows(swept: list[SweepScore], min_precision: float, expected_pages: int) -> list[list[str]]:
    out = []
    for bands, rows in BAND_DESIGNS:
        mine = [s for s in swept if s.bands == bands and s.rows == rows]
        alone = cheapest_best(mine, min_precision, expected_pages, method="minhash")
        both = cheapest_best(mine, min_precision, expected_pages)
        out.append([f"{bands}x{rows}", str(bands * rows), f"{alone.jaccard:.2f}", f"{alone.recall:.4f}",
                    str(alone.fp), str(both.k), f"{both.jaccard:.2f}", f"{both.recall:.4f}", str(both.fp),
                    str(both.tables(expected_pages))])
    return out


def kinds_table(by_kind: dict[str, dict[str, tuple[int, int]]]) -> Table:
    names = list(next(iter(by_kind.values())))
    table = Table(title="found per kind (duplicates: recall; distinct kinds: false positives)")
    table.add_column("kind")
    table.add_column("pairs", justify="right")
    for name in names:
        table.add_column(name, justify="right")
    for row in kinds_rows(by_kind):
        table.add_row(*row)
    return table


def kinds_rows(by_kind: dict[str, dict[str, tuple[int, int]]]) -> list[list[str]]:
    out = []
    for kind in sorted(by_kind):
        cells = by_kind[kind]
        n = next(iter(cells.values()))[1]
        out.append([kind, str(n), *[f"{found / total:.3f}" if total else "-" for found, total in cells.values()]])
    return out


def markdown_report(per_k: list[KScore], swept: list[SweepScore], best: SweepScore,
                    by_kind: dict[str, dict[str, tuple[int, int]]], min_precision: float, expected_pages: int,
                    max_k: int) -> str:
    def md(header: list[str], rows: list[list[str]]) -> str:
        return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                          *("| " + " | ".join(r) + " |" for r in rows)])

    ks = [k for k in range(max_k + 1) if k <= 6]
    assert best.bands is not None and best.rows is not None
    parts = [
        f"recommended: **{best.label}**: recall {best.recall:.4f}, precision {best.precision:.4f}, "
        f"{best.tp} TP, {best.fp} FP, {best.fn} FN, {best.tables(expected_pages)} index tables at "
        f"{expected_pages:,} pages",
        f"### recall (false positives) per J and k, MinHash {best.bands}x{best.rows}",
        md(["J", "MinHash alone", *[f"k={k}" for k in ks]], grid(swept, best.bands, best.rows, ks)),
        f"### per bands x rows: the cheapest best setting at precision >= {min_precision}",
        md(["bands x rows", "signature bytes", "MinHash alone: J", "recall", "FP", "both: k", "J", "recall", "FP",
            "tables"], designs_rows(swept, min_precision, expected_pages)),
        "### found per kind",
        md(["kind", "pairs", *next(iter(by_kind.values()))], kinds_rows(by_kind)),
        "### SimHash alone per k",
        md(["k", "precision", "recall", "F1", "TP", "FP", "FN", "TN"],
           [[str(s.k), f"{s.precision:.4f}", f"{s.recall:.4f}", f"{s.f1:.4f}", str(s.tp), str(s.fp), str(s.fn),
             str(s.tn)] for s in per_k]),
    ]
    return "\n\n".join(parts) + "\n"


def write_plot(per_k: list[KScore], swept: list[SweepScore], best: SweepScore, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    ks = [s.k for s in per_k]
    left.plot(ks, [s.precision for s in per_k], marker="o", label="precision")
    left.plot(ks, [s.recall for s in per_k], marker="s", label="recall")
    left.plot(ks, [s.f1 for s in per_k], marker="^", label="F1")
    left.set_xlabel("k (Hamming distance, bits of 64)")
    left.set_xticks(ks)
    left.set_ylim(0.5, 1.01)
    left.grid(alpha=0.3)
    left.legend(loc="lower right")
    left.set_title("SimHash alone, per k")

    mine = [s for s in swept if s.bands == best.bands and s.rows == best.rows]
    curves: list[tuple[str, list[SweepScore]]] = [("MinHash alone", [s for s in mine if s.method == "minhash"])]
    for k in sorted({0, 3, best.k or 0}):
        curves.append((f"both, k={k}", [s for s in mine if s.method == "both" and s.k == k]))
    for label, series in curves:
        series.sort(key=lambda s: s.jaccard or 0.0)
        js = [s.jaccard for s in series]
        line, = right.plot(js, [s.recall for s in series], marker="s", label=f"recall, {label}")
        right.plot(js, [s.precision for s in series], linestyle="--", color=line.get_color(),
                   label=f"precision, {label}")
    right.axvline(best.jaccard or 0.0, color="grey", linestyle=":", label=f"recommended: {best.label}")
    right.set_xlabel(f"J (Jaccard estimate), MinHash {best.bands}x{best.rows}")
    right.set_ylim(0.5, 1.01)
    right.grid(alpha=0.3)
    right.legend(loc="lower left", fontsize=7)
    right.set_title("MinHash bands, per J")
    fig.suptitle("neardup tune: precision and recall on labelled pairs")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
