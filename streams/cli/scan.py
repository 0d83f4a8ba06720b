"""`neardup scan`: the whole pipeline over files on one machine, no Kafka."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from neardup_core.embedded import EventDeduplicator
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import BodyJob, FingerprintBatch, Rejected, fingerprint_body
from neardup_core.hosts.urls import url_identity
from neardup_core.ingest.files import FileError, RawEvent, count_events, is_warc, looks_like_html, read_inputs
from neardup_core.messages import Rejection
from neardup_core.settings import CoreSettings
from streams.cli.report import ScanReport, settings_rows, write_report
from streams.processes.pool import apply_each, chunks_for, extraction_pool
from streams.settings import Settings


@dataclass
class ScanSummary:
    """Counts of a scan: every event read is either decided (a Fetch reached the engine) or rejected;
    a file that could not be read to its end is listed with its reason."""

    files: int = 0
    events: int = 0
    fetches: int = 0
    rejected: int = 0
    decisions: int = 0
    revisions: int = 0
    host_signals: int = 0
    seconds: float = 0.0
    kinds: Counter[str] = field(default_factory=Counter)
    verdicts: Counter[str] = field(default_factory=Counter)
    partial_copies: int = 0
    """URLs whose latest decision names pages they hold (`partial_of` not empty)."""
    bodies_extracted: int = 0
    """Distinct bodies extracted; every other event decided had a body met before (`FingerprintBatch`)."""
    reject_reasons: Counter[str] = field(default_factory=Counter)
    reject_places: dict[str, list[str]] = field(default_factory=dict)
    """The first few places (`file:line`, or `file@offset` in a WARC) of each reject reason."""
    file_errors: list[FileError] = field(default_factory=list)

    def reject(self, rejection: Rejection) -> None:
        """Count a rejected event under its reason, with where it was read."""
        self.rejected += 1
        reason = rejection.error[:120]
        self.reject_reasons[reason] += 1
        places = self.reject_places.setdefault(reason, [])
        if len(places) < PLACES_SHOWN:
            source = Path(rejection.topic or "?").name
            sep = ":" if not rejection.topic or not _warc_name(rejection.topic) else "@"
            places.append(f"{source}{sep}{rejection.offset}")

    def rejected_lines(self) -> list[str]:
        """One line per reject reason (the five most common): the count, the reason, and where."""
        lines = []
        for reason, n in self.reject_reasons.most_common(5):
            places = self.reject_places.get(reason, [])
            more = f" and {n - len(places)} more" if n > len(places) else ""
            lines.append(f"rejected x{n}: {reason} (at {', '.join(places)}{more})")
        return lines

    def print(self, console: Console) -> None:
        table = Table(title="neardup scan", show_header=True)
        table.add_column("")
        table.add_column("count", justify="right")
        rate = self.events / self.seconds if self.seconds else 0.0
        table.add_row("files read to their end", f"{self.files - len(self.file_errors)} of {self.files}")
        table.add_row("events read", str(self.events))
        for kind, n in sorted(self.kinds.items()):
            table.add_row(f"  from {kind}", str(n))
        table.add_row("events decided", str(self.fetches))
        table.add_row("events rejected", str(self.rejected))
        table.add_row("bodies extracted (a body met before is not extracted again)", str(self.bodies_extracted))
        table.add_row("decision lines (revisions included)", str(self.decisions))
        table.add_row("of which revisions", str(self.revisions))
        for verdict, n in sorted(self.verdicts.items()):
            table.add_row(f"URLs {verdict}", str(n))
        table.add_row("partial copies (partial_of not empty)", str(self.partial_copies))
        if self.host_signals:
            table.add_row("host signals", str(self.host_signals))
        table.add_row("pages per second", f"{rate:.1f}")
        console.print(table)
        for error in self.file_errors:
            console.print(f"  file {error.source}: {error.reason} (after {error.events_read} events)", markup=False,
                          soft_wrap=True)
        for line in self.rejected_lines():
            console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)


PLACES_SHOWN = 5


def _warc_name(source: str) -> bool:
    return source.lower().endswith((".warc", ".warc.gz", ".arc", ".arc.gz"))


class InputProblem(ValueError):
    """An input file of `scan` is missing, not a file, or HTML where JSONL events were expected: found before
    anything is created, the one line the command prints."""


EVENT_EXAMPLE = '{"url": "https://example.com/", "body": "<html>...</html>"}'


def check_inputs(files: list[Path]) -> None:
    """Raise `InputProblem` for the first input that is missing, a directory, or an HTML page (scan reads
    JSONL events, one JSON object per line, or WARC files; a WARC is recognised by its content)."""
    for path in files:
        if not path.exists():
            raise InputProblem(f"no such file: {path}")
        if path.is_dir():
            raise InputProblem(f"{path} is a directory; give the JSONL or WARC files in it")
        if not is_warc(path) and looks_like_html(path):
            raise InputProblem(f"{path} looks like an HTML page, not JSONL: scan reads one JSON event per line, "
                               f"such as {EVENT_EXAMPLE} (the docs' input page shows how to make events of HTML "
                               "files), or WARC files")


def _fingerprint_one(job: BodyJob) -> Fetch | Rejected:
    """One distinct body's `Fetch` or refusal; runs in the extraction pool (`fingerprint_body`)."""
    return fingerprint_body(job)


WINDOW_PER_PROCESS = 32
"""Events per window of `fingerprinted`, per extraction process."""


def fingerprinted(items: Iterable[RawEvent | FileError], settings: CoreSettings, pool: Executor | None,
                  processes: int = 1, summary: ScanSummary | None = None) -> Iterator[Fetch | Rejection | FileError]:
    """Each item's outcome, in input order: its `Fetch`, its rejects line (`Rejection`), or a file error as it
    is. The items go in windows of `WINDOW_PER_PROCESS` events per process, each a `FingerprintBatch`: parsed
    here, each distinct body extracted once (in `pool` when there is one) and a body met recently answered from
    the memo (counted in `summary.bodies_extracted`). The pool extracts a window while this process decides
    the one before, and the input is read one window ahead only, so memory stays flat on a large WARC."""
    size = WINDOW_PER_PROCESS * max(1, processes)
    pending: deque[tuple[list[RawEvent | FileError], FingerprintBatch, list[Future[list[Fetch | Rejected]]]]] = deque()
    source = iter(items)
    while window := list(islice(source, size)):
        batch = FingerprintBatch(((e.raw, e.key, e.timestamp_ms) for e in window if isinstance(e, RawEvent)),
                                 settings)
        if summary is not None:
            summary.bodies_extracted += len(batch.jobs)
        futures = [pool.submit(apply_each, _fingerprint_one, chunk) for chunk in chunks_for(batch.jobs, processes)] \
            if pool is not None else []
        pending.append((window, batch, futures))
        if len(pending) > 1 or pool is None:
            yield from _window_outcomes(*pending.popleft(), settings)
    while pending:
        yield from _window_outcomes(*pending.popleft(), settings)


def _window_outcomes(window: list[RawEvent | FileError], batch: FingerprintBatch,
                     futures: list[Future[list[Fetch | Rejected]]], settings: CoreSettings
                     ) -> Iterator[Fetch | Rejection | FileError]:
    results = [r for future in futures for r in future.result()] if futures \
        else [_fingerprint_one(job) for job in batch.jobs]
    outcomes = iter(batch.finish(results))
    for item in window:
        if isinstance(item, FileError):
            yield item
            continue
        result = next(outcomes)
        if isinstance(result, Rejected):
            # in a file, the source file stands where Kafka has the topic, and the line (or WARC offset) for the
            # offset; a rejects line has no key, and is cut as a dead letter is (NEARDUP_MAX_MESSAGE_BYTES)
            yield result.message(item.raw, item.source, None, item.position, settings=settings)
        else:
            yield result


def _counted(files: list[Path], summary: ScanSummary) -> Iterator[RawEvent | FileError]:
    """The inputs of `files`, counted by kind as they are read."""
    summary.files = len(files)
    for item in read_inputs(files):
        if isinstance(item, RawEvent):
            summary.events += 1
            summary.kinds[f"WARC {item.record} records" if item.record else "JSONL lines"] += 1
        yield item


def file_rejection(error: FileError) -> Rejection:
    """The rejects line of a file that could not be read to its end (no event bytes to keep)."""
    return Rejection.of(f"{error.reason} (after {error.events_read} events of it)", "read", error.source, None,
                        None, b"")


class OutputClash(ValueError):
    """An output path of `scan` is one of its inputs or another of its outputs: opening it for writing
    would truncate what is still to be read, or two writers would share a file."""


def _same_file(a: Path, b: Path) -> bool:
    """Whether `a` and `b` name one file: the same inode when both exist (symlinks and hard links
    included), else the same path once resolved (`x`, `./x` and `d/../x`)."""
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:  # one of them does not exist (yet)
        pass
    return a.resolve() == b.resolve()


def check_outputs(files: list[Path], outputs: dict[str, Path | None]) -> None:
    """Raise `OutputClash` when an output (`{"--out": path, ...}`, None for one not asked for) is an
    input file or the same file as another output; checked before anything is opened for writing."""
    given = [(option, path) for option, path in outputs.items() if path is not None]
    for option, path in given:
        for source in files:
            if _same_file(path, source):
                raise OutputClash(f"{option} {path} is also an input file ({source}); writing it would truncate "
                                  "it before it is read")
    for i, (option, path) in enumerate(given):
        for other_option, other in given[i + 1:]:
            if _same_file(path, other):
                raise OutputClash(f"{option} {path} and {other_option} {other} are the same file")


def run_scan(settings: Settings, files: list[Path], *, state: Path, out: Path | None, rejects: Path | None = None,
             hosts: Path | None = None, report: Path | None = None, processes: int = 1,
             progress: bool = True) -> ScanSummary:
    """Every event of `files` through the embedded engine over `state` (`EventDeduplicator`, what the
    library API's event form gives): the fingerprinting in `processes` processes, the decisions in this one; the
    decisions go to `out`, or to stdout when it is None. Raises `OutputClash` before anything is written
    when an output is an input or another output, and `StateMismatch` when `state` was built with other
    state settings."""
    check_outputs(files, {"--out": out, "--rejects": rejects, "--hosts": hosts, "--report": report})
    core = settings.core
    dedup = EventDeduplicator(state, core, persist_hosts=hosts is not None)  # StateMismatch: nothing written yet
    summary = ScanSummary()
    collected = ScanReport([str(p) for p in files], settings_rows(settings, processes=processes, state=state)) \
        if report else None
    latest: dict[str, str] = {}
    partial: dict[str, bool] = {}
    started = time.perf_counter()
    # the bar's total costs a read of every input before the scan: only when there is a bar
    totals = [count_events(p) for p in files] if progress else [None]
    total = sum(t for t in totals if t is not None) if all(t is not None for t in totals) else None
    # its processes die with this one
    pool = extraction_pool(processes, core, settings.scan_nice) if processes > 1 else None
    results = fingerprinted(_counted(files, summary), core, pool, processes, summary)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
    with (out.open("wb") if out is not None else _Stdout() as out_fh, _maybe_open(rejects) as rejects_fh,
          _maybe_open(hosts) as hosts_fh,
          Progress(TextColumn("[bold]scan"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                   TimeElapsedColumn(), console=Console(stderr=True), disable=not progress,
                   transient=False) as bar):
        task = bar.add_task("scan", total=total, rate="")
        done = 0
        for result in results:
            if isinstance(result, FileError):
                summary.file_errors.append(result)
                if rejects_fh is not None:
                    rejects_fh.write(file_rejection(result).to_json() + b"\n")
                continue
            done += 1
            if isinstance(result, Rejection):
                summary.reject(result)
                if collected is not None:
                    collected.add_rejection(result)
                if rejects_fh is not None:
                    rejects_fh.write(result.to_json() + b"\n")
            else:
                summary.fetches += 1
                outcome = dedup.decide(result)
                for decision in outcome.published:
                    out_fh.write(decision.to_json() + b"\n")
                    summary.decisions += 1
                    summary.revisions += decision.revision > 1
                    latest[url_identity(decision.url)] = decision.verdict
                    partial[url_identity(decision.url)] = bool(decision.partial_of)
                    if collected is not None:
                        collected.add_decision(decision)
                for signal in outcome.host_signals:
                    summary.host_signals += 1
                    if hosts_fh is not None:
                        hosts_fh.write(signal.to_json() + b"\n")
                    if collected is not None:
                        collected.add_signal(signal)
            if done % 50 == 0 or done == total:
                elapsed = time.perf_counter() - started
                bar.update(task, completed=done, rate=f"{done / elapsed:.0f} pages/s")
        bar.update(task, completed=done)
        if hosts_fh is not None or collected is not None:
            for signal in dedup.flush_hosts():
                summary.host_signals += 1
                if hosts_fh is not None:
                    hosts_fh.write(signal.to_json() + b"\n")
                if collected is not None:
                    collected.add_signal(signal)
    if pool:
        pool.shutdown()
    dedup.close()
    summary.verdicts = Counter(latest.values())
    summary.partial_copies = sum(partial.values())
    summary.seconds = time.perf_counter() - started
    if report is not None and collected is not None:
        write_report(report, collected, summary, k=core.k, jaccard=core.jaccard if core.minhash else None)
    return summary


class _Stdout:
    """Standard output's bytes as a context: flushed, not closed, at the end."""

    def __enter__(self) -> IO[bytes]:
        return sys.stdout.buffer

    def __exit__(self, *exc: object) -> None:
        sys.stdout.buffer.flush()


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _maybe_open(path: Path | None) -> Any:
    if path is None:
        return _Null()
    path.parent.mkdir(parents=True, exist_ok=True)
    fh: IO[bytes] = path.open("wb")
    return fh
