"""The "Use it from Python" example (docs/python.md), run as it is written there, and the event API beside it
(`neardup_core.embedded.EventDeduplicator`) against `neardup scan` on the same events and the same state
directory. The page API (`neardup_core.Deduplicator`) has its own tests in test_deduplicator.py."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import neardup_core
from neardup_core import CoreSettings, Decision
from neardup_core.embedded import EventDeduplicator, Outcome
from neardup_core.fingerprint.page import Rejected
from neardup_core.hosts.urls import url_identity
from neardup_core.testing.synthetic import generate_crawl
from streams.cli.scan import run_scan
from streams.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SECTION = "# Use it from Python"


def readme_blocks() -> tuple[str, str]:
    """The section's first ```python block and the ``` block after "It prints:"."""
    text = (ROOT / "docs" / "python.md").read_text()
    assert SECTION in text, f"docs/python.md has no {SECTION!r} section"
    section = text[text.index(SECTION):]
    section = section[: section.find("\n## ", 1)]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    printed = re.search(r"It prints:\n\n```\n(.*?)```", section, re.S)
    assert code and printed, "the section holds a python block and the output it prints"
    return code.group(1), printed.group(1)


def test_the_readme_example_runs_as_written_and_prints_what_the_readme_says(tmp_path: Path) -> None:
    code, printed = readme_blocks()
    assert "Deduplicator()" in code and "assert" in code  # the example checks itself, not only prints
    script = tmp_path / "example.py"
    script.write_text(code)
    result = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", str(script)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == printed
    assert "exact_duplicate" in printed and "near_duplicate" in printed and "revised:" in printed
    assert "query: exact_duplicate" in printed and "after remove: unique" in printed and "invalid:" in printed
    assert list(tmp_path.iterdir()) == [script], "the example leaves no state behind"


def test_the_package_exports_a_few_documented_names_and_the_old_ones_warn() -> None:
    assert set(neardup_core.__all__) == {"CoreSettings", "Decision", "Deduplicator", "HostSignal", "InvalidPage",
                                         "StateMismatch", "Verdict"}
    for name in neardup_core.__all__:
        assert hasattr(neardup_core, name)
        if name != "Verdict":  # a Literal alias, documented where it is defined
            assert getattr(neardup_core, name).__doc__, name
    for name in ("open_engine", "Engine", "Outcome", "Rejected", "fingerprint_event", "HostTracker"):
        with pytest.warns(DeprecationWarning, match=f"neardup_core.{name} is deprecated"):
            assert getattr(neardup_core, name) is not None
    with pytest.raises(AttributeError):
        neardup_core.nothing_of_the_kind  # noqa: B018
    with pytest.warns(DeprecationWarning, match="open_engine is deprecated"), \
            neardup_core.embedded.open_engine(None) as old:
        outcome = old.add(generate_crawl(seed=3)[0])
    assert isinstance(outcome, Outcome) and outcome.decision.verdict == "unique"


def test_add_decides_as_scan_and_scan_continues_its_state(tmp_path: Path) -> None:
    """The same events through `add` and through `run_scan` give the same decisions, line for line; and a
    state directory the API wrote is the index `scan --state` continues."""
    events = generate_crawl(seed=21)
    half = len(events) // 2
    published: list[dict[str, object]] = []
    with EventDeduplicator(tmp_path / "api-state", CoreSettings()) as dd:
        for i, event in enumerate(events):
            outcome = dd.add(event if i % 2 else orjson.dumps(event))  # dicts and bytes alike
            assert isinstance(outcome, Outcome), outcome
            assert outcome.decision == dd.decision(event["url"])
            own = [d for d in outcome.published if url_identity(d.url) == url_identity(event["url"])]
            assert not own or own[-1] == outcome.decision
            assert outcome.revisions == [d for d in outcome.published if d not in own]
            published += [said(d) for d in outcome.published]
    jsonl = tmp_path / "events.jsonl"
    jsonl.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    out = tmp_path / "scan.jsonl"
    summary = run_scan(Settings(), [jsonl], state=tmp_path / "scan-state", out=out, progress=False)
    scanned = [said(Decision.from_json(line)) for line in out.read_bytes().splitlines()]
    assert summary.fetches == len(events) and scanned == published
    assert summary.revisions > 0, "the crawl has better copies arriving after worse ones"

    first, rest = tmp_path / "first.jsonl", tmp_path / "rest.jsonl"
    first.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events[:half]))
    rest.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events[half:]))
    with EventDeduplicator(tmp_path / "mixed-state", CoreSettings()) as dd:
        head = [said(d) for e in events[:half] for d in _outcome(dd.add(e)).published]
    run_scan(Settings(), [rest], state=tmp_path / "mixed-state", out=tmp_path / "mixed.jsonl", progress=False)
    tail = [said(Decision.from_json(line)) for line in (tmp_path / "mixed.jsonl").read_bytes().splitlines()]
    assert head + tail == published


def said(decision: Decision) -> dict[str, object]:
    """Everything a decision says but when it was said."""
    return {k: v for k, v in dataclasses.asdict(decision).items() if k != "decided_at"}


def _outcome(result: Outcome | Rejected) -> Outcome:
    assert isinstance(result, Outcome), result
    return result


def test_the_decision_is_the_url_s_latest_whatever_the_event_changed() -> None:
    """A duplicate delivery gives the same decision again; a recrawl of the same body a new revision with the
    same verdict; an older fetch of another body arriving late changes nothing, and `decision` stays the
    latest fetch's."""
    event = generate_crawl(seed=3)[0]
    with EventDeduplicator(None) as dd:
        first = _outcome(dd.add(event))
        replay = _outcome(dd.add(event))
        recrawl = _outcome(dd.add({**event, "fetched_at": "2026-11-04T08:00:00Z"}))
        older = _outcome(dd.add({**event, "body": event["body"].replace("</p>", " Earlier.</p>", 1),
                                 "fetched_at": "2026-11-01T08:00:00Z"}))
    assert first.published == (first.decision,) and first.decision.revision == 1
    assert said(replay.decision) == said(first.decision) and replay.decision.revision == 1
    assert recrawl.decision.revision == 2 and recrawl.decision.verdict == first.decision.verdict
    assert recrawl.decision.fetched_at.startswith("2026-11-04")
    assert older.published == () and older.decision == recrawl.decision


def test_bad_events_are_rejected_with_their_reason_and_a_wrong_argument_raises() -> None:
    with EventDeduplicator(None) as dd:
        cases = {b"{not json": "not JSON", b"[1, 2]": "not a JSON object",
                 orjson.dumps({"url": "https://x.example/", "body": 5}): "'body' is not a string"}
        for raw, word in cases.items():
            result = dd.add(raw)
            assert isinstance(result, Rejected) and word in result.reason and result.stage == "validate"
        unserialisable = dd.add({"url": "https://x.example/", "body": b"<p>bytes</p>"})
        assert isinstance(unserialisable, Rejected) and "JSON-serialisable" in unserialisable.reason
        keyed = dd.add({"url": "https://x.example/", "body": "<p>x</p>"}, key=b"https://y.example/")
        assert isinstance(keyed, Rejected) and "disagrees" in keyed.reason
        with pytest.raises(TypeError, match="pages.fetched schema"):
            dd.add("https://x.example/")  # type: ignore[arg-type]
