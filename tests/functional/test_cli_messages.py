"""What the CLI says when something is wrong, and its exit codes: an unknown NEARDUP_* variable named with
the closest known one (a warning, or exit 2 when strict), `--version`, `scan` without `--state`/`--out`,
a missing input or an HTML page given as JSONL refused before anything is created, and exit code 1 with
the input lines named when no event could be decided."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from streams.settings import known_variables, unknown_variables

ROOT = Path(__file__).resolve().parents[2]
BODY = "<p>" + " ".join(f"word{i}" for i in range(40)) + "</p>"
EVENT = json.dumps({"url": "https://a.example/", "body": BODY}) + "\n"


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "TMPDIR": str(cwd), **(env or {})},
                          timeout=120)


def test_unknown_variables_name_the_closest_known_one() -> None:
    found = unknown_variables({"NEARDUP_KK": "5", "NEARDUP_K": "3", "NEARDUP_BROKR": "x:1", "NEARDUP_ZZZZZZ": "1",
                               "OTHER_KK": "1", "NEARDUP_CORPUS": "/c"})
    assert [(u.name, u.closest) for u in found] == [("NEARDUP_BROKR", "NEARDUP_BROKER"), ("NEARDUP_KK", "NEARDUP_K"),
                                                     ("NEARDUP_ZZZZZZ", None)]
    assert str(found[1]) == "unknown setting NEARDUP_KK (no part of neardup reads it); did you mean NEARDUP_K?"
    assert "did you mean" not in str(found[2])


def test_every_variable_the_repository_names_is_known() -> None:
    """A variable read anywhere in the repository (code, tests, deploy, CI) is not reported as unknown."""
    import re

    names: set[str] = set()
    for path in [*ROOT.glob("streams/**/*.py"), *ROOT.glob("neardup_core/**/*.py"), *ROOT.glob("tests/**/*.py"),
                 *ROOT.glob("bench/*.py"), ROOT / ".ci/run", ROOT / "deploy/local-kafka",
                 ROOT / "deploy/validate-manifests", ROOT / "deploy/docker-compose.yml"]:
        names |= set(re.findall(r"\b(NEARDUP_[A-Z0-9_]*[A-Z0-9])\b", path.read_text(errors="replace")))
    names -= {"NEARDUP_KK", "NEARDUP_BROKR", "NEARDUP_ZZZZZZ", "NEARDUP_SSL", "NEARDUP_SASL"}  # own; prefixes
    assert names - known_variables() == set()


def test_a_misspelled_setting_is_a_warning_by_default_and_an_error_when_strict(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(EVENT)
    warned = run(["scan", str(src), "--no-progress", "--processes", "0"], tmp_path, {"NEARDUP_KK": "5"})
    assert warned.returncode == 0, warned.stderr
    assert ("neardup: warning: unknown setting NEARDUP_KK (no part of neardup reads it); did you mean NEARDUP_K?; "
            "ignored") in warned.stderr.splitlines()
    for args, env in ((["--strict-env"], {}), ([], {"NEARDUP_STRICT_ENV": "1"})):
        out = tmp_path / "out.jsonl"
        refused = run([*args, "scan", str(src), "--out", str(out)], tmp_path, {"NEARDUP_KK": "5", **env})
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.strip() == ("neardup: unknown setting NEARDUP_KK (no part of neardup reads it); "
                                          "did you mean NEARDUP_K?")
        assert not out.exists()


def test_version(tmp_path: Path) -> None:
    from streams.cli import version

    result = run(["--version"], tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"neardup {version()}"
    assert version()[0].isdigit()


def test_scan_alone_decides_to_stdout_on_a_temporary_state_and_leaves_nothing(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(EVENT + EVENT.replace("a.example", "b.example"))
    before = set(tmp_path.iterdir())
    result = run(["scan", str(src), "--no-progress", "--processes", "0"], tmp_path)
    assert result.returncode == 0, result.stderr
    decisions = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(d["url"], d["verdict"]) for d in decisions] == [("https://a.example/", "unique"),
                                                             ("https://b.example/", "exact_duplicate")]
    assert result.stderr.splitlines()[0] == (
        "neardup scan: a quick look: the state in a temporary dir, removed at the end (--state DIR keeps it); "
        "decisions on stdout (--out FILE writes them to a file)")
    assert set(tmp_path.iterdir()) == before  # the temporary state (TMPDIR is tmp_path) is gone


def test_a_missing_input_fails_in_one_line_before_anything_is_created(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(EVENT)
    state, out = tmp_path / "state", tmp_path / "out.jsonl"
    result = run(["scan", str(src), str(tmp_path / "missing.jsonl"), "--state", str(state), "--out", str(out)],
                 tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"neardup scan: no such file: {tmp_path / 'missing.jsonl'}"
    assert result.stdout == ""
    assert not state.exists() and not out.exists()


def test_an_html_page_given_as_jsonl_is_named_with_the_expected_format(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("\n<!DOCTYPE html>\n<html><head><title>t</title></head>\n<body><p>text</p></body></html>\n")
    out = tmp_path / "out.jsonl"
    result = run(["scan", str(page), "--out", str(out)], tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"neardup scan: {page} looks like an HTML page, not JSONL: scan reads one JSON event "
                               'per line, such as {"url": "https://example.com/"')
    assert not out.exists()


def test_a_scan_where_every_event_is_rejected_exits_1_naming_the_lines(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('not json\n\n{"url": "https://a.example/"}\n{"body": "<p>x</p>"}\nnot json\n')
    rejects = tmp_path / "rejects.jsonl"
    result = run(["scan", str(src), "--out", str(tmp_path / "out.jsonl"), "--rejects", str(rejects),
                  "--no-progress", "--processes", "0"], tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    not_json = [line for line in lines if "rejected x2: event is not JSON" in line]
    assert len(not_json) == 1 and not_json[0].endswith("(at in.jsonl:1, in.jsonl:5)"), result.stderr
    assert any(line.strip().startswith("rejected x1:") and line.endswith("(at in.jsonl:3)") for line in lines)
    assert any(line.strip().startswith("rejected x1:") and line.endswith("(at in.jsonl:4)") for line in lines)
    assert lines[-1].startswith("neardup scan: no event could be decided: all 4 events were rejected; scan reads "
                                "one JSON event per line")
    assert sorted(json.loads(line)["offset"] for line in rejects.read_text().splitlines()) == [1, 3, 4, 5]


def test_an_empty_input_exits_1(tmp_path: Path) -> None:
    src = tmp_path / "empty.jsonl"
    src.write_text("\n")
    result = run(["scan", str(src), "--no-progress"], tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith("neardup scan: no event could be decided: the input holds no "
                                                     "event")


@pytest.mark.parametrize("partial", [True, False])
def test_a_scan_with_some_events_decided_exits_0(tmp_path: Path, partial: bool) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(("not json\n" if partial else "") + EVENT)
    result = run(["scan", str(src), "--out", str(tmp_path / "out.jsonl"), "--no-progress", "--processes", "0"],
                 tmp_path)
    assert result.returncode == 0, result.stderr
    assert ("rejected x1: event is not JSON" in result.stderr) is partial


@pytest.mark.parametrize("what", ["missing", "html"])
def test_publish_refuses_a_missing_or_html_input_before_it_asks_the_broker(tmp_path: Path, what: str) -> None:
    page = tmp_path / "page.html"
    if what == "html":
        page.write_text("<html><body><p>a page</p></body></html>\n")
    result = run(["publish", str(page)], tmp_path, {"NEARDUP_BROKER": "127.0.0.1:9"})  # nothing listens there
    assert result.returncode == 2
    expected = f"neardup publish: no such file: {page}" if what == "missing" else \
        f"neardup publish: {page} looks like an HTML page, not JSONL"
    assert result.stderr.strip().startswith(expected)
    assert "cannot reach" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_warc_named_like_jsonl_is_read_as_a_warc(tmp_path: Path) -> None:
    from tests.warcs import Warc, article

    warc = Warc(gzipped=False)
    warc.response("https://a.example/one", article(1))
    warc.response("https://b.example/copy", article(1), second=1)
    src = tmp_path / "crawl.jsonl"
    src.write_bytes(warc.bytes())
    result = run(["scan", str(src), "--no-progress", "--processes", "0"], tmp_path)
    assert result.returncode == 0, result.stderr
    verdicts = {d["url"]: d["verdict"] for d in map(json.loads, result.stdout.splitlines())}
    assert verdicts == {"https://a.example/one": "unique", "https://b.example/copy": "exact_duplicate"}
    assert "WARC response records" in result.stderr
