"""`neardup tune --containment-corpus DIR`: how well "containment >= t" tells partial copies on labelled
pairs built from a corpus of real pages (`neardup_core.testing.containment_pairs`: articles embedded at
30-95% into other sites' paragraphs, different pages of one site, unrelated pages), the recommended
threshold beside the default, and a plot of precision and recall over t."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.console import Console
from rich.table import Table

from neardup_core.fingerprint.containment import DEFAULT_CONTAINMENT
from neardup_core.settings import CoreSettings
from neardup_core.testing.containment_eval import (
    MARGIN,
    MAX_TEMPLATE_FLAGS,
    MIN_FLAG_PRECISION,
    THRESHOLDS,
    ThresholdRow,
    recommend_threshold,
    score_index,
    template_flag_share,
    threshold_row,
    threshold_table,
)
from neardup_core.testing.containment_pairs import EMBEDDED, SAME_GROUP, UNRELATED, build_containment_pairs
from neardup_core.testing.corpus import MANIFEST, has_corpus


class NoCorpus(ValueError):
    """The containment corpus is not a corpus folder (no manifest)."""


@dataclasses.dataclass(frozen=True)
class ContainmentTune:
    """The containment section of a tune run: every threshold's row, the recommended one (None when no
    threshold meets the floors) and the default's."""

    pairs: dict[str, int]
    rows: list[ThresholdRow]
    recommended: ThresholdRow | None
    default: ThresholdRow


def tune_containment(corpus: Path, core: CoreSettings, *, sample: int | None = None) -> ContainmentTune:
    """Builds the labelled pairs from `corpus` (`sample` pages embedded; all when None) and scores every
    threshold of THRESHOLDS and the configured one (`NEARDUP_CONTAINMENT`) with the estimate the
    containment index confirms with (`containment_eval.score_index`)."""
    default = core.containment
    if not has_corpus(corpus):
        raise NoCorpus(f"{corpus} is not a corpus folder (no {MANIFEST}): the containment pairs are built from "
                       "a folder of pages with a manifest, such as the project's shared corpus")
    # a sample keeps the whole corpus's mix of partial copies and negatives (796 pages: 775 same-group
    # page pairs, 1,000 unrelated pairs), so that precision means the same
    same_group, unrelated = (None, 1000) if sample is None else (sample, round(1.25 * sample))
    made = build_containment_pairs(corpus, sample=sample, same_group=same_group, unrelated=unrelated, settings=core)
    scored = score_index(made.pairs, core)
    rows = [threshold_row(scored, t) for t in sorted({*THRESHOLDS, default})]
    chosen = recommend_threshold(rows)
    default_row = next(r for r in rows if r.threshold == default)
    pairs = {kind: made.count(kind) for kind in (EMBEDDED, SAME_GROUP, UNRELATED)}
    return ContainmentTune(pairs, rows, chosen, default_row)


def recommendation_line(result: ContainmentTune) -> str:
    """What the recommendation is and the rule behind it, with the default's figures beside it."""
    rule = (f"the lowest t whose flags hold at least t - {MARGIN} of B in >= {MIN_FLAG_PRECISION} of cases and "
            f"that flags at most {MAX_TEMPLATE_FLAGS:.0%} of the pairs of different pages of one site")
    d = result.default
    default = (f"NEARDUP_CONTAINMENT {d.threshold:.2f} (default {DEFAULT_CONTAINMENT}): precision {d.precision:.3f}, "
               f"recall {d.recall:.3f} (±{MARGIN}: {d.margin_precision:.3f}, {d.margin_recall:.3f}), "
               f"{template_flag_share(d):.1%} of same-site pairs flagged")
    r = result.recommended
    if r is None:
        return f"containment: no threshold meets the rule ({rule}); {default}"
    return (f"containment recommended: t = {r.threshold:.2f} ({rule}): precision {r.precision:.3f}, recall "
            f"{r.recall:.3f} (±{MARGIN}: {r.margin_precision:.3f}, {r.margin_recall:.3f}), "
            f"{template_flag_share(r):.1%} of same-site pairs flagged; set NEARDUP_CONTAINMENT={r.threshold:.2f}; "
            f"{default}")


def containment_table(result: ContainmentTune) -> Table:
    p = result.pairs
    table = Table(title=f"partial copies: \"containment >= t\" on {p[EMBEDDED]} embedded, {p[SAME_GROUP]} same-site "
                        f"and {p[UNRELATED]} unrelated pairs (flagged / pairs per band of exact containment)")
    header, rows = threshold_table(result.rows)
    for col in header:
        table.add_column(col, justify="right")
    chosen = result.recommended.threshold if result.recommended is not None else None
    for row, cells in zip(result.rows, rows, strict=True):
        table.add_row(*cells, style="bold green" if row.threshold == chosen else None)
    return table


def markdown_containment(result: ContainmentTune) -> str:
    header, rows = threshold_table(result.rows)
    return "\n\n".join([
        "### partial copies: containment per threshold", recommendation_line(result),
        "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                   *("| " + " | ".join(r) + " |" for r in rows)]),
    ]) + "\n"


def plot_path(plot: Path) -> Path:
    """Where the containment plot goes beside the main one: `tune.png` -> `tune-containment.png`."""
    return plot.with_name(f"{plot.stem}-containment{plot.suffix or '.png'}")


def write_containment_plot(result: ContainmentTune, path: Path) -> None:
    """Precision and recall over t (strict and with the margin), the share of same-site pairs flagged, the
    recommended and default thresholds marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    ts = [r.threshold for r in result.rows]
    for label, values, style in (
            ("precision", [r.precision for r in result.rows], "-"),
            ("recall", [r.recall for r in result.rows], "-"),
            (f"precision ±{MARGIN}", [r.margin_precision for r in result.rows], "--"),
            (f"recall ±{MARGIN}", [r.margin_recall for r in result.rows], "--"),
            ("same-site pairs flagged", [template_flag_share(r) for r in result.rows], ":")):
        ax.plot(ts, values, linestyle=style, marker="o", label=label)
    if result.recommended is not None:
        ax.axvline(result.recommended.threshold, color="green", linestyle=":",
                   label=f"recommended {result.recommended.threshold:.2f}")
    ax.axvline(result.default.threshold, color="red", linestyle="-.", alpha=0.6,
               label=f"default {result.default.threshold:.2f}")
    ax.set_xlabel("t (containment estimate of B in A)")
    ax.set_ylim(0.0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", fontsize=8)
    ax.set_title("neardup tune: partial copies, precision and recall per containment threshold")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_containment(corpus: Path, core: CoreSettings, console: Console, *, plot: Path | None,
                    sample: int | None = None) -> ContainmentTune:
    """Scores, prints the table and the recommendation, writes the plot when asked."""
    with console.status("building and scoring containment pairs from the corpus"):
        result = tune_containment(corpus, core, sample=sample)
    console.print(containment_table(result))
    console.print(recommendation_line(result))
    if plot is not None:
        path = plot_path(plot)
        write_containment_plot(result, path)
        console.print(f"containment plot written to {path}")
    return result
