"""The `neardup` command line.

Exit codes, the same for every command (`docs/cli.md` lists them):

- 0: done;
- 1: the command ran but did not get its work done: an input file not read to its end, no event of a scan
  decided, a publish that failed, a broker that cannot be reached or refused the login;
- 2: nothing was started: a bad option, an invalid setting, an unknown `NEARDUP_*` variable with
  `--strict-env`, a missing input file, an output that is an input, state settings that differ.
"""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from streams.settings import SettingError, Settings, unknown_variables
from streams.settings import load as load_settings

app = typer.Typer(help="Streaming near-duplicate detection for web crawlers.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)
topics_app = typer.Typer(help="Create or list neardup's Kafka topics.", no_args_is_help=True)
app.add_typer(topics_app, name="topics")
err = Console(stderr=True)
_strict_env = False
"""`neardup --strict-env`: an unknown NEARDUP_* variable is an error, as with NEARDUP_STRICT_ENV."""


def version() -> str:
    """The installed distribution's version ("unknown" when run from a source tree not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("neardup")
    except PackageNotFoundError:
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        print(f"neardup {version()}")
        raise typer.Exit(0)


@app.callback()
def options(
    show_version: Annotated[bool, typer.Option("--version", callback=_show_version, is_eager=True,
                                               help="print the version and exit")] = False,
    strict_env: Annotated[bool, typer.Option(
        "--strict-env", help="an unknown NEARDUP_* variable is an error (exit 2), not a warning")] = False,
) -> None:
    """Streaming near-duplicate detection for web crawlers."""
    global _strict_env
    _strict_env = strict_env


def load() -> Settings:
    """The settings from the environment; an invalid one, or an unknown NEARDUP_* variable under
    `--strict-env` (or NEARDUP_STRICT_ENV), ends the command with one line on stderr and exit code 2 (as
    for a bad option), before anything starts. Without it, each unknown variable is one warning line."""
    try:
        settings = load_settings()
    except SettingError as exc:
        print(f"neardup: invalid setting {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    unknown = unknown_variables()
    strict = _strict_env or settings.strict_env
    for variable in unknown:
        print(f"neardup: {variable}" if strict else f"neardup: warning: {variable}; ignored", file=sys.stderr)
    if unknown and strict:
        raise typer.Exit(2)
    return settings


FILES_HELP = "JSONL or WARC files (gzipped too); one that cannot be read is reported, the others are read"


@app.command()
def scan(
    files: Annotated[list[Path], typer.Argument(help=FILES_HELP)],
    state: Annotated[Path | None, typer.Option(
        "--state", help="RocksDB state directory; a later run continues from it (default: a temporary one, "
                        "removed at the end)")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="decisions, one JSON line each (revisions are later lines); default: stdout")] = None,
    rejects: Annotated[Path | None, typer.Option("--rejects", help="bad events with their reasons")] = None,
    hosts: Annotated[Path | None, typer.Option("--hosts", help="host signals, one JSON line each")] = None,
    report: Annotated[Path | None, typer.Option(
        "--report", help="a self-contained HTML report: verdicts, clusters, hosts, histograms, rejects")] = None,
    processes: Annotated[int | None, typer.Option(
        min=0, help="extraction processes (default: NEARDUP_EXTRACT_PROCESSES)")] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Deduplicate files on this machine, without Kafka: the same decisions as the workers. Exit code 1
    when a file could not be read to its end or no event could be decided (every one rejected); 2 when
    nothing was started (a missing input, an HTML page given as JSONL, an output that is an input, a
    --state built with other state settings)."""
    import tempfile

    from neardup_core.dedup.engine import StateMismatch
    from streams.cli.scan import EVENT_EXAMPLE, InputProblem, OutputClash, check_inputs, run_scan
    from streams.processes.pool import tune_collector

    settings = load()
    tune_collector()
    try:
        check_inputs(files)  # before anything is created
    except InputProblem as exc:
        print(f"neardup scan: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    quick = [part for part, missing in (("the state in a temporary dir, removed at the end (--state DIR keeps it)",
                                         state is None),
                                        ("decisions on stdout (--out FILE writes them to a file)", out is None))
             if missing]
    if quick:
        print(f"neardup scan: a quick look: {'; '.join(quick)}", file=sys.stderr)
    with ExitStack() as stack:
        if state is None:
            state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="neardup-scan-"))) / "state"
        try:
            summary = run_scan(settings, files, state=state,
                               out=out, rejects=rejects, hosts=hosts, report=report,
                               processes=settings.extract_processes if processes is None else processes,
                               progress=progress)
        except (OutputClash, StateMismatch) as exc:  # raised before anything is opened for writing
            print(f"neardup scan: {exc}", file=sys.stderr)
            raise typer.Exit(2) from None
    summary.print(err)
    if summary.file_errors:  # every other file was read and decided
        raise typer.Exit(1)
    if summary.fetches == 0:
        why = f"all {summary.events} events were rejected" if summary.events else "the input holds no event"
        print(f"neardup scan: no event could be decided: {why}; scan reads one JSON event per line, such as "
              f"{EVENT_EXAMPLE}, or WARC files", file=sys.stderr)
        raise typer.Exit(1)


@app.command()
def worker(
    loglevel: Annotated[str, typer.Option("--loglevel", "-l", help="debug, info, warning or error")] = "info",
) -> None:
    """Run a Faust worker (NEARDUP_BROKER, NEARDUP_DATA_DIR, NEARDUP_WEB_PORT). It refuses to start (exit
    code 2) when its state settings differ from those its app id's state was built with."""
    from faust.worker import Worker

    from streams.app import create_app
    from streams.kafka.admin import StateSettingsDiffer, check_state_settings, create_changelogs, internal_partitions
    from streams.processes.pool import tune_collector

    settings = load()
    partitions = internal_partitions(settings)  # the partitions of the topics on the broker
    try:  # before any changelog topic is made or the group joined
        check_state_settings(settings)
    except StateSettingsDiffer as exc:
        print(f"neardup worker: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    create_changelogs(settings, partitions)
    faust_app = create_app(settings, partitions)
    tune_collector()
    faust_worker = Worker(faust_app, loglevel=loglevel)
    if not sys.stdout.isatty():  # Faust's spinner would write cursor escape codes into a log file
        faust_worker.spinner = None
    faust_worker.execute_from_commandline()


@topics_app.command("create")
def topics_create(
    partitions: Annotated[int | None, typer.Option(help="partitions of every topic (default NEARDUP_PARTITIONS or 8)")]
    = None,
) -> None:
    """Create all topics with their partitions, compaction and retention (existing ones are kept)."""
    from streams.kafka.admin import create_topics

    settings = load()
    count = partitions or settings.partitions or 8
    for name, status in create_topics(settings, count).items():
        print(f"{name}\t{status}")


@topics_app.command("list")
def topics_list() -> None:
    """The topics neardup uses and what each carries."""
    from streams.kafka.topics import settings_spec, topic_specs

    settings = load()
    for spec in [*topic_specs(settings), settings_spec(settings)]:
        print(f"{spec.name}\t{spec.doc}")


@app.command()
def publish(
    files: Annotated[list[Path], typer.Argument(help=FILES_HELP)],
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Publish fetched pages to `pages.fetched`, keyed by URL. Exit code 2 before anything is sent for a
    missing input or an HTML page given as JSONL; 1 when an event failed or a file was not read to its end."""
    from streams.cli.publish import publish_files
    from streams.cli.scan import InputProblem, check_inputs

    settings = load()
    try:
        check_inputs(files)  # before the broker is asked
    except InputProblem as exc:
        print(f"neardup publish: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    result = publish_files(settings, files, progress=progress)
    err.print(f"published {result.sent} events; {result.failed} failed; {len(result.file_errors)} files not read "
              "to their end")
    for line in result.errors[:20]:
        err.print(f"  {line}")
    if result.failed or result.file_errors:
        raise typer.Exit(1)


@app.command()
def tail(
    what: Annotated[str, typer.Argument(help="decisions, hosts or rejected")],
    fmt: Annotated[str, typer.Option("--format", help="json or table")] = "json",
    idle: Annotated[float | None, typer.Option(help="stop after this many seconds without a message")] = None,
    from_beginning: Annotated[bool, typer.Option(help="read the topic from its start")] = True,
    latest: Annotated[bool, typer.Option(help="print only the last message per key (at exit)")] = False,
) -> None:
    """Print a topic as JSON lines or a table."""
    from streams.cli.tail import tail_topic

    tail_topic(load(), what, fmt=fmt, idle_s=idle, from_beginning=from_beginning, latest=latest)


@app.command()
def tune(
    pairs: Annotated[Path, typer.Option("--pairs", help="labelled pairs: {a, b, duplicate} per line", exists=True)],
    plot: Annotated[Path | None, typer.Option("--plot", help="write a precision/recall plot (PNG)")] = None,
    max_k: Annotated[int, typer.Option(help="largest k to evaluate")] = 12,
    min_precision: Annotated[float, typer.Option(help="the precision the recommended setting must reach")] = 0.998,
    report: Annotated[Path | None, typer.Option("--report", help="also write the tables as Markdown")] = None,
    cost_lost_page: Annotated[float | None, typer.Option(
        "--cost-lost-page", help="what one page lost by a false merge costs you (with --cost-duplicate-entry)")]
    = None,
    cost_duplicate_entry: Annotated[float | None, typer.Option(
        "--cost-duplicate-entry", help="what one duplicate left in the index (a missed duplicate) costs you")]
    = None,
    duplicate_rate: Annotated[float | None, typer.Option(
        "--duplicate-rate", help="the share of your crawl's pages that duplicate an earlier one (0 to 1)")] = None,
    sample: Annotated[Path | None, typer.Option(
        "--sample", exists=True, dir_okay=False,
        help="a sample of your crawl (JSONL or WARC): scanned on a temporary state to estimate the duplicate "
             "rate")] = None,
    containment_corpus: Annotated[Path | None, typer.Option(
        "--containment-corpus", exists=True, file_okay=False,
        help="a corpus folder (pages and MANIFEST.jsonl): score the partial-copy threshold on pairs built from "
             "it and recommend NEARDUP_CONTAINMENT")] = None,
    containment_sample: Annotated[int | None, typer.Option(
        "--containment-sample", min=1, help="corpus pages to embed into others (default: all)")] = None,
) -> None:
    """Precision, recall and F1 on labelled pairs for SimHash (per k), MinHash (per bands x rows and J)
    and both, and the recommended setting; with the two costs and a duplicate rate (given or estimated
    from a sample), the expected lost pages, duplicate entries and cost of every setting, and the
    cheapest one beside the default; with a corpus, the partial-copy (containment) threshold too."""
    from neardup_core.testing.corpus import MANIFEST, has_corpus
    from neardup_core.testing.cost import CostError, CostModel
    from neardup_core.testing.evaluate import read_pairs
    from streams.cli.tune import estimate_duplicate_rate, run_tune

    def usage(message: str) -> typer.Exit:
        print(f"neardup tune: {message}", file=sys.stderr)
        return typer.Exit(2)

    settings = load()
    try:
        read_pairs(pairs)
    except ValueError as exc:
        raise usage(f"{exc} (one JSON object per line: {{\"a\": ..., \"b\": ..., \"duplicate\": true or false}}, "
                    "a and b file paths relative to the pairs file or inline texts; docs/EVALUATION.md)") from None
    if containment_corpus is not None and not has_corpus(containment_corpus):
        raise usage(f"--containment-corpus {containment_corpus} has no {MANIFEST}: give a corpus folder (its pages "
                    "and their manifest)")
    if containment_sample is not None and containment_corpus is None:
        raise usage("--containment-sample needs --containment-corpus")
    costs = (cost_lost_page, cost_duplicate_entry)
    cost = None
    rate_source = "given"
    if any(c is not None for c in costs) or duplicate_rate is not None or sample is not None:
        if cost_lost_page is None or cost_duplicate_entry is None:
            raise usage("--cost-lost-page and --cost-duplicate-entry go together")
        if (duplicate_rate is None) == (sample is None):
            raise usage("the costs need a duplicate rate: give --duplicate-rate or --sample (one of them)")
        if sample is not None:
            try:
                duplicate_rate, decided = estimate_duplicate_rate(sample, settings)
            except (CostError, ValueError) as exc:
                raise usage(str(exc)) from None
            rate_source = f"estimated from {decided} URLs of {sample.name}"
            err.print(f"duplicate rate {duplicate_rate:.4f}: an estimate, the share of duplicate verdicts among "
                      f"the {decided} URLs `scan` decided in {sample}")
        assert duplicate_rate is not None
        try:
            cost = CostModel(cost_lost_page, cost_duplicate_entry, duplicate_rate)
        except CostError as exc:
            message = str(exc)
            for field in ("cost_lost_page", "cost_duplicate_entry", "duplicate_rate"):
                message = message.replace(field, "--" + field.replace("_", "-"))
            raise usage(message) from None
    run_tune(pairs, plot=plot, max_k=max_k, settings=settings, min_precision=min_precision, report=report,
             cost=cost, rate_source=rate_source, containment_corpus=containment_corpus,
             containment_sample=containment_sample)


@app.command()
def explain(
    a: Annotated[str, typer.Argument(help="an HTML file (gzipped too; FILE.html#URL gives its URL), or FILE#URL: "
                                          "the last record of URL in a JSONL or WARC file")],
    b: Annotated[str, typer.Argument(help="the other page, as A")],
    json_out: Annotated[bool, typer.Option("--json", help="the explanation as one JSON object")] = False,
    full: Annotated[bool, typer.Option("--full", help="every paragraph of the main texts, not only the changes")]
    = False,
) -> None:
    """Why two pages are or are not duplicates under the current settings: extraction, digests, SimHash
    blocks and tables, MinHash bands, the verdict and the rule that fired, the texts side by side."""
    from streams.cli.explain import run_explain

    raise typer.Exit(run_explain(load(), a, b, as_json=json_out, full=full))


@app.command()
def demo(
    keep: Annotated[bool, typer.Option(help="leave the broker running")] = False,
) -> None:
    """Local Kafka, a worker, a generated crawl; prints decisions and host signals, then stops all."""
    from streams.cli.demo import run_demo

    raise typer.Exit(run_demo(load(), keep=keep))


def main() -> None:
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    try:
        app()
    except BrokenPipeError:
        sys.exit(0)


if __name__ == "__main__":
    main()
