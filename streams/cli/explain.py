"""`neardup explain A B`: why two pages are or are not duplicates, rendered with rich (or as JSON).

The explanation itself is `neardup_core.dedup.explain`; this module reads the two pages
(`neardup_core.ingest.lookup`), prints it, and turns a page that cannot be read or is rejected into
one line on standard error and exit code 2.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence

import orjson
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from neardup_core.dedup.explain import DiffRow, Explanation, PageRejected, PageReport, explain
from neardup_core.ingest.lookup import PageSource, SourceError, load_page
from streams.settings import Settings

DIGEST_CHARS = 16
"""Hex characters of a digest shown in the table (--json has them whole)."""
CONTEXT = 1
"""Equal paragraphs shown around a change; longer equal runs are folded into one row."""


def run_explain(settings: Settings, a: str, b: str, *, as_json: bool = False, full: bool = False,
                console: Console | None = None) -> int:
    """Explain the pair on standard output; 0, or 2 with one line on standard error when a page is
    missing, not in its file, unreadable or rejected."""
    now_ms = int(time.time() * 1000)  # one fetch time for both HTML files: their URLs decide the rank
    try:
        pages: list[PageSource] = [load_page(spec, now_ms=now_ms) for spec in (a, b)]
        result = explain(pages[0], pages[1], settings.core)
    except (SourceError, PageRejected) as exc:
        print(f"neardup explain: {exc}", file=sys.stderr)
        return 2
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
        return 0
    render(result, console or Console(), full=full)
    return 0


def render(result: Explanation, console: Console, *, full: bool = False) -> None:
    """The explanation for a person: verdict first, then the pages, the fingerprints and the texts."""
    s = result.settings
    minhash = f"MinHash {s['bands']}x{s['rows']}, J >= {s['jaccard']:.2f}" if s["minhash"] else "MinHash off"
    console.print(Text.assemble(("neardup explain", "bold"), f"  k={s['k']}, design {s['design']}, {minhash}"))
    verdict = result.verdict
    style = "bold red" if verdict.duplicate else "bold green" if verdict.better else "bold yellow"
    console.print(Text.assemble(("verdict: ", "bold"), (verdict.headline, style)))
    for side, v in (("A", verdict.a), ("B", verdict.b)):
        of = f" of {v.duplicate_of}" if v.duplicate_of else ""
        extra = "".join(f", {name} {value}" for name, value in (("distance", v.distance), ("jaccard", v.jaccard))
                        if value is not None)
        console.print(f"  {side}: {v.verdict}{escape(of)}{extra}")
    console.print(f"  rank: {escape(verdict.rank_reason)}")
    console.print(_pages_table(result.a, result.b))
    console.print(_fingerprints(result))
    console.print(_diff_table(result.diff, full=full, plain=console.no_color or not console.is_terminal))


def _short(digest: str | None) -> str:
    return "-" if digest is None else digest[:DIGEST_CHARS] + "…"


def _pages_table(a: PageReport, b: PageReport) -> Table:
    table = Table(show_header=True, header_style="bold", expand=True)
    table.add_column("", style="bold", no_wrap=True)
    table.add_column("A", ratio=1, overflow="fold")
    table.add_column("B", ratio=1, overflow="fold")
    for name, get in _PAGE_ROWS:
        table.add_row(name, get(a), get(b))
    return table


def _source(p: PageReport) -> str:
    where = {"html": "HTML file", "jsonl": f"JSONL line {p.position}", "warc": f"WARC record at byte {p.position}"}
    again = f" (the last of {p.fetches} fetches of the URL)" if p.fetches > 1 else ""
    return escape(f"{p.path}: {where[p.kind]}{again}")


def _kept(p: PageReport) -> str:
    if p.extraction is None:
        return f"not extracted: {escape(p.skip_reason or '')}"
    e = p.extraction
    return f"{len(e.paragraphs)} paragraphs, {e.words} words"


def _template(p: PageReport) -> str:
    if p.extraction is None:
        return "-"
    t = p.extraction.template
    kept = f" (jusText had kept {t.justext_kept} paragraphs)" if t.justext_kept is not None else ""
    return escape(f"{t.outcome}: {t.detail}{kept}")


def _shingles(p: PageReport) -> str:
    if p.shingles is None:
        return "-"
    digest_only = " [yellow](digest only)[/]" if p.shingles < p.min_features else ""
    return f"{p.shingles} distinct{digest_only}"


_PAGE_ROWS = (
    ("source", _source),
    ("URL", lambda p: escape(p.url)),
    ("fetched at", lambda p: p.fetched_at + (f", importance {p.importance:g}" if p.importance else "")),
    ("kept", _kept),
    ("boilerplate", lambda p: f"{p.extraction.boilerplate_share:.0%} of the characters" if p.extraction else "-"),
    ("stoplist", lambda p: (p.extraction.stoplist or "union of all stoplists") if p.extraction else "-"),
    ("fallback", lambda p: ("yes: the full visible text" if p.extraction.fallback else "no") if p.extraction else "-"),
    ("template check", _template),
    ("skipped", lambda p: escape(p.skip_reason) if p.skip_reason else "no"),
    ("shingles", _shingles),
    ("body sha256", lambda p: _short(p.body_sha256)),
    ("text sha256", lambda p: _short(p.text_sha256)),
    ("SimHash", lambda p: p.simhash or "-"),
)


def ranges(numbers: Iterable[int]) -> str:
    """1, 2, 3, 5 -> "1-3, 5"."""
    out: list[str] = []
    run: list[int] = []
    for n in numbers:
        if run and n != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(n)
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out) or "none"


def _fingerprints(result: Explanation) -> Group:
    lines: list[Text | str] = []
    same = {True: "[green]equal[/]", False: "differ"}
    lines.append(f"[bold]digests[/]: body {same[result.same_body]}, main text {same[result.same_text]}")
    sim = result.simhash
    if sim is None:
        lines.append("[bold]SimHash[/]: - (a page has too few shingles or no main text)")
    else:
        within = "[green]within k[/]" if sim.distance <= sim.k else "over k"
        blocks = "".join("■" if equal else "□" for equal in sim.blocks_equal)
        keys = "; ".join(f"{t} (blocks {'+'.join(map(str, sim.table_keys[t]))})" for t in sim.shared_tables) \
            if len(sim.shared_tables) < sim.tables else "all"
        lines.append(f"[bold]SimHash[/]: distance {sim.distance} bits, k={sim.k}: {within}; blocks equal {blocks} "
                     f"({sum(sim.blocks_equal)} of {len(sim.blocks_equal)}); shared tables: "
                     f"{keys or 'none'} of {sim.tables}")
    mh = result.minhash
    if mh is None:
        if result.settings["minhash"]:
            lines.append("[bold]MinHash[/]: - (a page has no signature: too few shingles or no main text)")
    else:
        exact = f" (exact Jaccard of the shingle sets {mh.exact_jaccard:.3f})" if mh.exact_jaccard is not None else ""
        passed = "[green]>= J[/]" if mh.jaccard >= mh.threshold else "< J"
        first = f", the rule's: {mh.first_shared_band}" if mh.first_shared_band is not None else ""
        lines.append(f"[bold]MinHash[/]: Jaccard estimate {mh.jaccard:.3f}{exact}, {passed} {mh.threshold:.2f}; "
                     f"{mh.equal_rows} of {mh.rows} rows equal; bands with all {mh.rows_per_band} rows equal: "
                     f"{len(mh.shared_bands)} of {mh.bands} ({ranges(mh.shared_bands)}{first})")
    c = result.containment
    if c is not None:
        exact_b = f" (exact {c.exact_b_in_a:.3f})" if c.exact_b_in_a is not None else ""
        exact_a = f" (exact {c.exact_a_in_b:.3f})" if c.exact_a_in_b is not None else ""
        other = "B" if c.names == "A" else "A"
        if c.enabled:
            named = f"[green]{c.names}'s partial_of names {other}[/]" if c.names else "neither names the other"
        else:
            would = f"{c.names}'s partial_of would name {other}" if c.names else "neither would name the other"
            named = f"partial copies are off (NEARDUP_PARTIAL_COPIES); with them on, {would}"
        lines.append(f"[bold]Containment[/]: B in A {c.b_in_a:.3f}{exact_b}, A in B {c.a_in_b:.3f}{exact_a}; "
                     f"{c.shingles_a} and {c.shingles_b} distinct shingles (size classes {c.size_classes[0]} and "
                     f"{c.size_classes[1]}), {c.holder} can hold the other; containment bands with equal minima: "
                     f"{len(c.shared_bands)} of {c.bands}; threshold {c.threshold:.2f}: {named}")
        if c.bucket_texts and c.enabled:
            lines.append(f"  in a crawl a shared band counts only while its bucket holds at most {c.bucket_texts} "
                         "main texts (NEARDUP_CONTAINMENT_BUCKET_TEXTS): a text many pages share saturates it")
    return Group(*lines)


def _runs(parts: Sequence[tuple[str, bool]], changed_style: str, marks: tuple[str, str] | None) -> Text:
    """Changed words in `changed_style`, and inside `marks` (wdiff's ``[-…-]`` and ``{+…+}``) when the
    output has no colours (a file, a pipe, NO_COLOR)."""
    text = Text()
    for i, (words, changed) in enumerate(parts):
        if i:
            text.append(" ")
        if changed and marks:
            words = f"{marks[0]}{words}{marks[1]}"
        text.append(words, style=changed_style if changed else "")
    return text


def folded(rows: Sequence[DiffRow], context: int | None) -> list[DiffRow | int]:
    """The rows with long runs of equal paragraphs replaced by their count (all rows when `context`
    is None): `context` equal rows stay next to each change."""
    if context is None:
        return list(rows)
    out: list[DiffRow | int] = []
    i = 0
    while i < len(rows):
        if rows[i].tag != "equal":
            out.append(rows[i])
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j].tag == "equal":
            j += 1
        head = context if i > 0 else 0
        tail = context if j < len(rows) else 0
        if j - i > head + tail + 1:
            out.extend(rows[i:i + head])
            out.append(j - i - head - tail)
            out.extend(rows[j - tail:j])
        else:
            out.extend(rows[i:j])
        i = j
    return out


def _diff_table(rows: Sequence[DiffRow], *, full: bool, plain: bool) -> Table:
    changed = sum(row.tag != "equal" for row in rows)
    table = Table(title=f"main texts: {len(rows)} rows, {changed} changed", show_header=True, header_style="bold",
                  expand=True, show_lines=False)
    table.add_column("A", ratio=1, overflow="fold")
    table.add_column("", width=1, no_wrap=True)
    table.add_column("B", ratio=1, overflow="fold")
    marks = {"equal": " ", "replace": "~", "delete": "-", "insert": "+"}
    if not rows:
        table.add_row("(no main text)", "", "(no main text)")
    for row in folded(rows, None if full else CONTEXT):
        if isinstance(row, int):
            table.add_row(Text(f"… {row} equal paragraphs …", style="dim italic"), "",
                          Text(f"… {row} equal paragraphs …", style="dim italic"))
        elif row.tag == "equal":
            table.add_row(Text(row.a[0][0], style="dim"), "", Text(row.b[0][0], style="dim"))
        else:
            table.add_row(_runs(row.a, "bold red", ("[-", "-]") if plain else None), marks[row.tag],
                          _runs(row.b, "bold green", ("{+", "+}") if plain else None))
    return table
