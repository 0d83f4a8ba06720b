"""`neardup tune`: precision, recall and F1 on labelled pairs for SimHash (per k), MinHash (per
bands x rows and J) and both (the decision rule), the recommended setting, and the curves; with costs,
the expected lost pages and duplicate entries of every setting and the cheapest one
(`neardup_core.testing.cost`)."""

from __future__ import annotations

import dataclasses
import math
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import track
from rich.table import Table

from neardup_core.fingerprint.page import html_fingerprints, text_fingerprints
from neardup_core.settings import CoreSettings
from neardup_core.testing.cost import CostModel, SettingCost, cheapest, duplicate_rate_of, setting_costs
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
class CostResult:
    """The cost section of a run: the model, where its duplicate rate came from, the cheapest setting,
    the configured default's figures and every swept setting's."""

    model: CostModel
    rate_source: str
    """"given" or "estimated from N URLs of FILE" (a sample run through `scan`)."""
    recommended: SettingCost
    default: SettingCost
    costs: list[SettingCost]


@dataclasses.dataclass
class TuneResult:
    per_k: list[KScore]
    scores: list[SweepScore]
    best: SweepScore
    by_kind: dict[str, dict[str, tuple[int, int]]]
    """kind -> {"simhash k=..." / "recommended": (found, pairs)}."""
    cost: CostResult | None = None


def signature_settings(core: CoreSettings, band_designs: tuple[tuple[int, int], ...]) -> CoreSettings:
    """The core settings with MinHash on and a signature of the most rows any swept design needs (the
    configured design's too, so that the default can be scored)."""
    rows = max(*(b * r for b, r in band_designs), core.bands * core.rows)
    return dataclasses.replace(core, minhash=True, bands=(rows + 1) // 2, rows=2)


def default_score(scores: list[PairScore], core: CoreSettings) -> SweepScore:
    """The configured setting's counts on the pairs: both (or SimHash alone when MinHash is off) at the
    configured k, bands x rows and J."""
    method = "both" if core.minhash else "simhash"
    scored = sweep(scores, [core.k], [core.jaccard], [(core.bands, core.rows)])
    return next(s for s in scored if s.method == method)


def estimate_duplicate_rate(sample: Path, settings: Settings) -> tuple[float, int]:
    """(the share of duplicate verdicts, the URLs decided) of a sample of the operator's crawl (JSONL or
    WARC) run through `scan` with the configured settings on a temporary state, deleted after."""
    from streams.cli.scan import run_scan

    with tempfile.TemporaryDirectory(prefix="neardup-tune-") as tmp:
        summary = run_scan(settings, [sample], state=Path(tmp) / "state", out=Path(tmp) / "decisions.jsonl",
                           processes=1, progress=False)
    if summary.file_errors:
        error = summary.file_errors[0]
        raise ValueError(f"the sample {sample} could not be read to its end: {error.reason}")
    decided = sum(n for verdict, n in summary.verdicts.items() if verdict != "skipped")
    return duplicate_rate_of(summary.verdicts), decided


def cost_result(swept: list[SweepScore], default: SweepScore, model: CostModel, rate_source: str,
                min_precision: float, expected_pages: int) -> CostResult:
    """Every setting's expected cost, the cheapest at the precision floor and the default's figures."""
    costs = setting_costs(swept, model)
    best = cheapest(swept, model, min_precision=min_precision, expected_pages=expected_pages)
    return CostResult(model, rate_source, best, setting_costs([default], model)[0], costs)


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
             min_precision: float = MIN_PRECISION, report: Path | None = None, cost: CostModel | None = None,
             rate_source: str = "given") -> TuneResult:
    """Scores every setting on the labelled pairs, prints the tables and the recommendation (with
    `cost`: the setting of least expected cost at precision >= `min_precision`), writes the plot and
    the Markdown report when asked."""
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
    costed = None
    if cost is not None:
        costed = cost_result(swept, default_score(scores, settings.core), cost, rate_source, min_precision,
                             settings.expected_pages)
        console.print(cost_table(costed, settings.expected_pages))
        console.print(cost_summary(costed, min_precision))
    if plot is not None:
        write_plot(per_k, swept, best, plot, costed)
        console.print(f"plot written to {plot}")
    if report is not None:
        text = markdown_report(per_k, swept, best, by_kind, min_precision, settings.expected_pages, max_k)
        if costed is not None:
            text = markdown_costs(costed, min_precision, settings.expected_pages) + "\n" + text
        report.write_text(text)
        console.print(f"tables written to {report}")
    return TuneResult(per_k, swept, best, by_kind, costed)


def model_line(c: CostResult) -> str:
    m = c.model
    return (f"duplicate rate {m.duplicate_rate:.4f} ({c.rate_source}); a lost page costs {m.cost_lost_page:g}, "
            f"a duplicate index entry {m.cost_duplicate_entry:g}; figures per {m.pages:,} crawled pages")


def cost_summary(c: CostResult, min_precision: float) -> str:
    r, d = c.recommended, c.default
    saving = d.cost - r.cost
    return (f"least expected cost at precision >= {min_precision}: {r.label}: {r.lost_pages:,.0f} lost pages, "
            f"{r.duplicate_entries:,.0f} duplicate entries, cost {r.cost:,.0f}; the default {d.label}: "
            f"{d.lost_pages:,.0f} lost pages, {d.duplicate_entries:,.0f} duplicate entries, cost {d.cost:,.0f}"
            f" ({'saves' if saving >= 0 else 'costs'} {abs(saving):,.0f} per {c.model.pages:,} pages); "
            f"{model_line(c)}; set NEARDUP_K={r.score.k if r.score.k is not None else 0} "
            f"NEARDUP_MINHASH={int(r.score.method != 'simhash')}"
            + (f" NEARDUP_BANDS={r.score.bands} NEARDUP_ROWS={r.score.rows} NEARDUP_JACCARD={r.score.jaccard:.2f}"
               if r.score.bands is not None else ""))


COST_HEADER = ["setting", "recall", "FP", "FP rate", "lost pages", "duplicate entries", "cost", "tables"]


def cost_rows(c: CostResult, expected_pages: int) -> list[list[str]]:
    """The recommended and default settings, SimHash alone per k, and per bands x rows the cheapest
    MinHash alone and both (at any J and k)."""
    def row(name: str, s: SettingCost) -> list[str]:
        return [name + s.label, f"{s.score.recall:.4f}", str(s.score.fp), f"{s.false_positive_rate:.4f}",
                f"{s.lost_pages:,.0f}", f"{s.duplicate_entries:,.0f}", f"{s.cost:,.0f}",
                str(s.score.tables(expected_pages))]

    out = [row("recommended: ", c.recommended), row("default: ", c.default)]
    out += [row("", s) for s in c.costs if s.score.method == "simhash"]
    key = lambda s: (round(s.cost, 6), s.score.tables(expected_pages), -(s.score.jaccard or 0.0))  # noqa: E731
    for bands, rows in BAND_DESIGNS:
        for method in ("minhash", "both"):
            mine = [s for s in c.costs if s.score.method == method and (s.score.bands, s.score.rows) == (bands, rows)]
            if mine:
                out.append(row("", min(mine, key=key)))
    return out


def cost_table(c: CostResult, expected_pages: int) -> Table:
    table = Table(title=f"expected cost: {model_line(c)}; per bands x rows the cheapest setting")
    for col in COST_HEADER:
        table.add_column(col, justify="right" if col != "setting" else "left")
    for n, cells in enumerate(cost_rows(c, expected_pages)):
        table.add_row(*cells, style="bold green" if n == 0 else None)
    return table


def markdown_costs(c: CostResult, min_precision: float, expected_pages: int) -> str:
    """The cost section of the Markdown report: the summary, then the same table as the console's."""
    rows = cost_rows(c, expected_pages)
    return "\n\n".join([
        "### expected cost per setting", cost_summary(c, min_precision),
        "\n".join(["| " + " | ".join(COST_HEADER) + " |", "|" + "---|" * len(COST_HEADER),
                   *("| " + " | ".join(r) + " |" for r in rows)]),
    ]) + "\n"


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


def write_plot(per_k: list[KScore], swept: list[SweepScore], best: SweepScore, path: Path,
               costed: CostResult | None = None) -> None:
    """Precision and recall per k and per J; with `costed`, a second row with the expected cost over k
    and over J, the recommended and default settings marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if costed is None:
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    else:
        fig, axes = plt.subplots(2, 2, figsize=(12, 9))
        (left, right), (cost_k, cost_j) = axes
        plot_costs(costed, cost_k, cost_j)
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
    right.axvline(best.jaccard or 0.0, color="grey", linestyle=":",
                  label=f"{'by the goals' if costed else 'recommended'}: {best.label}")
    right.set_xlabel(f"J (Jaccard estimate), MinHash {best.bands}x{best.rows}")
    right.set_ylim(0.5, 1.01)
    right.grid(alpha=0.3)
    right.legend(loc="lower left", fontsize=7)
    right.set_title("MinHash bands, per J")
    fig.suptitle("neardup tune: precision and recall on labelled pairs" if costed is None else
                 f"neardup tune: precision, recall and expected cost (a lost page {costed.model.cost_lost_page:g}, "
                 f"a duplicate entry {costed.model.cost_duplicate_entry:g}, duplicate rate "
                 f"{costed.model.duplicate_rate:.3f})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_costs(c: CostResult, by_k: Any, by_j: Any) -> None:
    """The expected cost over k (SimHash alone; both at the recommended and the default design and J)
    and over J (both at the recommended and the default k and design; MinHash alone), with the
    recommended (star) and default (cross) settings marked."""
    r, d = c.recommended.score, c.default.score

    def series(pick: Any, x: Any) -> tuple[list[float], list[float]]:
        mine = sorted((s for s in c.costs if pick(s.score)), key=lambda s: x(s.score))
        return [x(s.score) for s in mine], [s.cost for s in mine]

    def same_lsh(s: SweepScore, o: SweepScore) -> bool:
        return (s.bands, s.rows, s.jaccard) == (o.bands, o.rows, o.jaccard)

    k_of = lambda s: s.k  # noqa: E731
    j_of = lambda s: s.jaccard  # noqa: E731
    by_k.plot(*series(lambda s: s.method == "simhash", k_of), marker="o", label="SimHash alone")
    for name, o in (("recommended", r), ("default", d)):
        if o.bands is not None:
            by_k.plot(*series(lambda s, o=o: s.method == "both" and same_lsh(s, o), k_of), marker="s",
                      label=f"both, {o.bands}x{o.rows} J={o.jaccard:.2f} ({name})")
    for name, o in (("recommended", r), ("default", d)):
        if o.bands is not None:
            by_j.plot(*series(lambda s, o=o: s.method == "both" and s.k == o.k and (s.bands, s.rows) ==
                              (o.bands, o.rows), j_of), marker="s", label=f"both, k={o.k}, {o.bands}x{o.rows} ({name})")
    if r.bands is not None:
        by_j.plot(*series(lambda s: s.method == "minhash" and (s.bands, s.rows) == (r.bands, r.rows), j_of),
                  marker="^", label=f"MinHash alone, {r.bands}x{r.rows}")
    for ax, x in ((by_k, k_of), (by_j, j_of)):
        for name, point, marker, colour in (("recommended", c.recommended, "*", "green"),
                                            ("default", c.default, "X", "red")):
            if x(point.score) is not None:
                ax.scatter([x(point.score)], [point.cost], marker=marker, s=180, color=colour, zorder=5,
                           label=f"{name}: {point.label} (cost {point.cost:,.0f})")
        ax.set_ylabel(f"expected cost per {c.model.pages:,} pages")
        ax.set_yscale("symlog", linthresh=max(1.0, c.recommended.cost / 10))
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=7)
    by_k.set_xlabel("k (Hamming distance)")
    by_k.set_title("expected cost over k")
    by_j.set_xlabel("J (Jaccard estimate)")
    by_j.set_title("expected cost over J")


CONTAINMENT_THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def containment_rows(scored: list[Any], default: float) -> tuple[list[list[str]], list[list[str]]]:
    """(per threshold: precision and recall of "estimate >= t" against exact containment >= t, and of the
    partial-copy rule at the settings' threshold; per band of exact containment: the share the rule names
    at `default`), from `containment_eval.score_index`."""
    from neardup_core.testing.containment_eval import BANDS, band_of, threshold_row

    by_t = []
    for t in CONTAINMENT_THRESHOLDS:
        row = threshold_row(scored, t)
        mark = " (default)" if abs(t - default) < 1e-9 else ""
        by_t.append([f"{t:.2f}{mark}", f"{row.precision:.3f}", f"{row.recall:.3f}"])
    named = [s for s in scored if s.found]
    tp = sum(1 for s in named if s.pair.exact >= default)
    positives = sum(1 for s in scored if s.pair.exact >= default)
    by_t.append([f"rule at {default:.2f} (index, sizes)", f"{tp / len(named) if named else math.nan:.3f}",
                 f"{tp / positives if positives else math.nan:.3f}"])
    by_band = []
    for band in BANDS:
        members = [s for s in scored if band_of(s.pair.exact) == band]
        found = sum(1 for s in members if s.found)
        share = f"{found / len(members):.3f}" if members else "-"
        by_band.append([f"{band[0]:.1f}-{band[1]:.1f}", str(len(members)), str(found), share])
    return by_t, by_band


def run_tune_containment(settings: Settings, console: Console, sample: int = 100) -> None:
    """Precision and recall of the containment threshold on labelled corpus pairs (real articles embedded
    at 30-95% into other pages' text, same-template page pairs, unrelated pairs), and per band of exact
    containment the share the partial-copy rule names at the settings' `NEARDUP_CONTAINMENT`."""
    from neardup_core.testing.containment_eval import score_index
    from neardup_core.testing.containment_pairs import build_containment_pairs
    from neardup_core.testing.corpus import corpus_dir, has_corpus

    corpus = corpus_dir()
    if not has_corpus(corpus):
        console.print(f"containment: no corpus at {corpus} (NEARDUP_CORPUS): not evaluated")
        return
    core = settings.core
    made = build_containment_pairs(corpus, sample=sample, settings=core)
    scored = score_index(made.pairs, core)
    by_t, by_band = containment_rows(scored, core.containment)
    table = Table(title=f"containment: {len(scored)} labelled corpus pairs (estimate >= t vs exact >= t)")
    for name in ("threshold", "precision", "recall"):
        table.add_column(name, justify="right" if name != "threshold" else "left")
    for row in by_t:
        table.add_row(*row)
    console.print(table)
    bands = Table(title=f"partial_of at NEARDUP_CONTAINMENT={core.containment:.2f}, per band of exact containment")
    for name in ("exact containment", "pairs", "named", "share named"):
        bands.add_column(name, justify="right")
    for row in by_band:
        bands.add_row(*row)
    console.print(bands)
    console.print(f"containment default {core.containment:.2f} (NEARDUP_CONTAINMENT); chosen on these pairs: "
                  "bench/results/containment.md")
