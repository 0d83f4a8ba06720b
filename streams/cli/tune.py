"""`neardup tune`: precision, recall and F1 per k on labelled pairs, and the recommended k."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from neardup_core.fingerprint.page import html_fingerprint, text_fingerprint
from neardup_core.testing.evaluate import KScore, load_page, pair_score, read_pairs, recommend_k, score_per_k
from streams.settings import Settings


def run_tune(pairs_path: Path, *, plot: Path | None, max_k: int, settings: Settings) -> KScore:
    console = Console()
    fp_settings = settings.core
    cache: dict[str, tuple[str | None, int | None]] = {}

    def fingerprint_of(ref: object) -> tuple[str | None, int | None]:
        key = ref if isinstance(ref, str) else repr(ref)
        if key not in cache:
            kind, content = load_page(ref, pairs_path.parent)
            cache[key] = html_fingerprint(content, fp_settings) if kind == "html" else \
                text_fingerprint(content, fp_settings)
        return cache[key]

    rows = read_pairs(pairs_path)
    scores = [pair_score(bool(r["duplicate"]), fingerprint_of(r["a"]), fingerprint_of(r["b"]))
              for r in track(rows, description="fingerprinting pairs", console=console, transient=True)]
    per_k = score_per_k(scores, max_k)
    best = recommend_k(per_k)
    table = Table(title=f"{pairs_path.name}: {sum(s.duplicate for s in scores)} duplicate and "
                        f"{sum(not s.duplicate for s in scores)} distinct pairs")
    for col in ("k", "precision", "recall", "F1", "TP", "FP", "FN", "TN"):
        table.add_column(col, justify="right")
    for s in per_k:
        style = "bold green" if s.k == best.k else None
        table.add_row(str(s.k), f"{s.precision:.3f}", f"{s.recall:.3f}", f"{s.f1:.3f}", str(s.tp), str(s.fp),
                      str(s.fn), str(s.tn), style=style)
    console.print(table)
    console.print(f"recommended k = {best.k} (best recall at precision >= 0.99, else best F1); "
                  f"set NEARDUP_K={best.k}")
    if plot is not None:
        write_plot(per_k, best, plot)
        console.print(f"plot written to {plot}")
    return best


def write_plot(per_k: list[KScore], best: KScore, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = [s.k for s in per_k]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(ks, [s.precision for s in per_k], marker="o", label="precision")
    ax.plot(ks, [s.recall for s in per_k], marker="s", label="recall")
    ax.plot(ks, [s.f1 for s in per_k], marker="^", label="F1")
    ax.axvline(best.k, color="grey", linestyle="--", label=f"recommended k = {best.k}")
    ax.set_xlabel("k (Hamming distance, bits of 64)")
    ax.set_ylim(0, 1.02)
    ax.set_xticks(ks)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title("neardup: near-duplicate test per k")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
