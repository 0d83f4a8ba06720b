"""Shared helpers of the benchmarks: the corpus, the machine, timing, memory, and result tables.

Every benchmark prints its tables (with rich) and appends them, as markdown, to a results file
together with the date, the machine and the exact command, so a number never travels without the
conditions it was measured in. The machine is shared and noisy: tables report ratios against a peer
measured in the same run, with the engines taking turns, and tests never assert on any of it.
"""

from __future__ import annotations

import base64
import datetime as dt
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
DEFAULT_RESULTS = BENCH_DIR / "results" / "core.md"
FIRST_FETCH_MS = 1_600_000_000_000  # 2020-09-13; the corpus pages get one second apart from there

if str(REPO) not in sys.path:  # run as `python bench/x.py` from anywhere without installing
    sys.path.insert(0, str(REPO))

from neardup_core.testing.corpus import corpus_dir, page_bytes, read_manifest  # noqa: E402

DEFAULT_CORPUS = corpus_dir()

# ---------------------------------------------------------------------------------------------- corpus

@dataclass(frozen=True, slots=True)
class CorpusPage:
    """One corpus page as a crawler would have fetched it: its URL and raw (undecoded) body."""

    path: str
    url: str
    body: bytes


def require_corpus(corpus: Path) -> None:
    """Exit (status 0, a skip, not a failure) with a clear message when the corpus is absent."""
    if not (corpus / "MANIFEST.jsonl").exists():
        print(f"SKIPPED: no corpus at {corpus} (expected MANIFEST.jsonl and pages/*/*.html.gz); "
              f"pass --corpus DIR or set NEARDUP_CORPUS", file=sys.stderr)
        raise SystemExit(0)


def load_corpus(corpus: Path, limit: int | None = None) -> list[CorpusPage]:
    """The corpus pages in manifest order, decompressed; a page without a recorded URL gets a
    stable made-up one on its site, so it can go through event validation like the others."""
    require_corpus(corpus)
    rows = read_manifest(corpus)[:limit]
    return [CorpusPage(row.path, row.event_url, page_bytes(corpus, row.path)) for row in rows]


def event_of(page: CorpusPage, index: int) -> bytes:
    """The `pages.fetched` event of a corpus page: raw body as base64, no declared charset."""
    return orjson.dumps({"url": page.url, "body_b64": base64.b64encode(page.body).decode("ascii"),
                         "fetched_at": FIRST_FETCH_MS + 1000 * index, "status": 200,
                         "content_type": "text/html"})


def write_events_jsonl(pages: Sequence[CorpusPage], path: Path) -> Path:
    with path.open("wb") as fh:
        for i, page in enumerate(pages):
            fh.write(event_of(page, i) + b"\n")
    return path


# --------------------------------------------------------------------------------------------- machine

def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    try:
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        load = "n/a"
    try:
        mem_gb = f"{(_proc_status_kb('MemTotal', '/proc/meminfo') or 0) / 2**20:.0f} GB"
    except (OSError, ValueError, TypeError):
        mem_gb = "n/a"
    return {"nproc": str(usable), "cpu": model, "python": platform.python_version(),
            "memory": mem_gb, "load": load}


def _proc_status_kb(field_name: str, path: str = "/proc/self/status") -> int | None:
    for line in Path(path).read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return None


def rss_bytes() -> int:
    """Resident set size of this process now (VmRSS)."""
    kb = _proc_status_kb("VmRSS")
    return (kb or 0) * 1024


def peak_rss_bytes() -> int:
    """The high-water mark of this process's resident set (VmHWM)."""
    kb = _proc_status_kb("VmHWM")
    return (kb or 0) * 1024


def dir_bytes(path: Path) -> int:
    """Bytes of the files under `path` (what `du --apparent-size` counts)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# -------------------------------------------------------------------------------------------- timing

def best_times(items: Sequence[Any], engines: dict[str, Callable[[Any], object]],
               repeat: int) -> dict[str, float]:
    """Per engine, the sum over items of the best of `repeat` runs, the engines taking turns on
    each item: a burst of other work on the shared machine inflates one run, not a result."""
    totals = dict.fromkeys(engines, 0.0)
    clock = time.perf_counter
    for item in items:
        for name, run in engines.items():
            best = float("inf")
            for _ in range(repeat):
                start = clock()
                run(item)
                elapsed = clock() - start
                if elapsed < best:
                    best = elapsed
            totals[name] += best
    return totals


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def median(values: Iterable[float]) -> float:
    vals = list(values)
    return statistics.median(vals) if vals else float("nan")


def fmt_rate(x: float) -> str:
    if x != x:  # nan
        return "n/a"
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}" if x >= 10 else f"{x:.2f}"


def fmt_ratio(x: float) -> str:
    return "n/a" if x != x else f"{x:.2f}x"


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def fmt_ms(seconds: float) -> str:
    if seconds != seconds:
        return "n/a"
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:,.0f}"


# ------------------------------------------------------------------------------------------- reports

@dataclass
class Table:
    """A result table: printed with rich, written as markdown."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])

    def print(self) -> None:
        try:
            from rich.console import Console
            from rich.table import Table as RichTable
        except ImportError:
            print(self.markdown())
            return
        table = RichTable(title=self.title, title_justify="left")
        for i, col in enumerate(self.columns):
            table.add_column(col, justify="left" if i == 0 else "right")
        for row in self.rows:
            table.add_row(*row)
        widths = [max([len(c)] + [len(r[i]) for r in self.rows if i < len(r)])
                  for i, c in enumerate(self.columns)]
        console = Console(width=max(100, min(220, sum(w + 3 for w in widths) + 4)))
        console.print(table)
        for note in self.notes:
            console.print(f"  {note}", highlight=False, soft_wrap=True)

    def markdown(self) -> str:
        def row(cells: Sequence[str]) -> str:
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

        lines = [f"**{self.title}**", "", row(self.columns),
                 "|" + "|".join("---" if i == 0 else "---:" for i in range(len(self.columns))) + "|"]
        lines += [row(r) for r in self.rows]
        if self.notes:
            lines.append("")
            lines += [f"- {n}" for n in self.notes]
        return "\n".join(lines)


def shown_path(arg: str) -> str:
    """An absolute path as a results file shows it: relative to the checkout (`.` for the checkout
    itself), else its last part; a results file is read in other checkouts, where this machine's paths
    mean nothing. Anything else is shown as it is."""
    if not arg.startswith("/"):
        return arg
    path = Path(arg)
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name


def append_results(path: Path, heading: str, tables: Sequence[Table], *, notes: Sequence[str] = (),
                   started: float | None = None) -> None:
    """Append a section (date, machine, exact command, tables, notes) to the results file."""
    info = machine()
    when = dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    command = shlex.join([shown_path(arg) for arg in getattr(sys, "orig_argv", [sys.executable, *sys.argv])])
    parts = [f"## {heading} ({when})", "",
             f"- machine: {info['nproc']} CPUs ({info['cpu']}), {info['memory']} RAM, "
             f"Python {info['python']}, "
             f"1-min/5-min/15-min load average when the run ended {info['load']}",
             f"- command: `{command}` (cwd `{shown_path(os.getcwd())}`)",
             f"- code: {code_state()}"]
    if started is not None:
        parts.append(f"- wall time: {time.perf_counter() - started:,.0f} s")
    parts.append("")
    for table in tables:
        parts += [table.markdown(), ""]
    if notes:
        parts += [f"{n}" for n in notes]
        parts.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write("\n".join(parts) + "\n")
    print(f"appended to {path}")


def code_state() -> str:
    """The commit, and which library files differ from it (others edit them while benchmarks run)."""
    import subprocess

    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "neardup_core", "streams"],
                                 capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"
    files = [line[3:] for line in changed if line.strip()]
    return f"commit {head}" + (f", uncommitted changes in {', '.join(files)}" if files else ", clean")


def package_versions(packages: Iterable[str]) -> str:
    """`name version, ...` of the installed packages among `packages` (the others are left out)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in packages:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            continue
    return ", ".join(found)


def say(msg: str) -> None:
    """A progress line on standard error, with the time of day (the tables go to standard output)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def print_machine() -> None:
    info = machine()
    print(f"machine: {info['nproc']} CPUs ({info['cpu']}), {info['memory']} RAM, Python {info['python']}, "
          f"load average {info['load']}")


# ------------------------------------------------------------------------- extraction floors (peers)

def lxml_parse(html: str) -> None:
    """lxml's HTML parse alone: the floor of any lxml-based extraction."""
    from lxml import etree

    try:
        etree.fromstring(html, etree.HTMLParser())
    except ValueError:  # a string with an XML encoding declaration
        etree.fromstring(html.encode("utf-8"), etree.HTMLParser(encoding="utf-8"))


def resiliparse_text(html: str) -> None:
    """resiliparse's main-content text: a C-level extractor."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    extract_plain_text(HTMLTree.parse(html), main_content=True)


def keys_of(db: Any) -> int:
    """The live keys of an open RocksDB (a rocksdict `Rdict`)."""
    it = db.iter()
    it.seek_to_first()
    n = 0
    while it.valid():
        n += 1
        it.next()
    return n
