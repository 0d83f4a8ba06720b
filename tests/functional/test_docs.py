"""The README and the documentation site: the README's first steps run as written and print what it
shows; the CLI reference is the parser's; nothing points at paths a clone does not have; every link of
the README to a file of the repository resolves. (`make docs`, which `.ci/run` runs, builds the site
strictly: a broken link or anchor inside docs/ fails there.)"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from streams.cli.reference import cli_markdown

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
FIRST_STEPS = "## Your own pages in five minutes"
USER_TEXT = [README, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "bench").glob("*.md")),
             *sorted((ROOT / "deploy").glob("*.md"))]


def section(title: str) -> str:
    text = README.read_text()
    assert title in text, f"README.md has no {title!r} section"
    start = text.index(title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of `text` in order: (language, body)."""
    return re.findall(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M)


def test_the_readme_first_steps_run_as_written_and_print_what_they_show(tmp_path: Path) -> None:
    found = blocks(section(FIRST_STEPS))
    kinds = [kind for kind, _ in found]
    assert kinds == ["bash", "bash", "", "bash"], kinds  # make events and scan; the glance and its output; a folder
    (_, make_and_scan), (_, glance), (_, shown), (_, folder) = found
    bin_dir = tmp_path / "bin"  # `neardup` as installed, but this checkout's code
    bin_dir.mkdir()
    shim = bin_dir / "neardup"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m streams.cli "$@"\n')
    shim.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path),
           "TMPDIR": str(tmp_path), **({"NEARDUP_CACHE_DIR": os.environ["NEARDUP_CACHE_DIR"]}
                                         if "NEARDUP_CACHE_DIR" in os.environ else {})}

    def bash(script: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env, capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 0, f"{script}\n{result.stdout}{result.stderr}"
        return result

    first = bash(make_and_scan)
    assert "neardup scan: a quick look" in first.stderr
    assert bash(glance).stdout == shown
    verdicts = {d["url"]: d["verdict"] for d in map(json.loads, (work / "decisions.jsonl").read_text().splitlines())}
    assert len(verdicts) == len((work / "pages.jsonl").read_text().splitlines())

    pages = work / "saved-pages"
    (pages / "news").mkdir(parents=True)
    page = "<html><body><p>" + "A saved page about the harbour, the boats and the weather of the week. " * 6 + \
           "</p></body></html>"
    (pages / "index.html").write_text(page)
    (pages / "news" / "copy.html").write_text(page)
    bash(folder)
    decisions = [json.loads(line) for line in (work / "decisions.jsonl").read_text().splitlines()]
    assert {(d["url"], d["verdict"], d["duplicate_of"]) for d in decisions} == {
        ("https://www.example.com/index.html", "unique", None),
        ("https://www.example.com/news/copy.html", "exact_duplicate", "https://www.example.com/index.html")}
    assert (work / "rejects.jsonl").read_text() == ""
    assert "<html" in (work / "report.html").read_text()[:200].lower()
    assert (work / "state").is_dir()


def test_the_readme_two_commands_are_make_targets() -> None:
    two = blocks(section("## Two commands"))[0][1]
    targets = re.findall(r"^make (\w+)", two, re.M)
    assert targets == ["demo", "test"]
    makefile = (ROOT / "Makefile").read_text()
    for target in [*targets, "docs", "lint"]:
        assert re.search(rf"^{target}:", makefile, re.M), target
    assert "make docs" in (ROOT / ".ci/run").read_text() and "make test" in (ROOT / ".ci/run").read_text()


def test_the_cli_reference_is_the_parsers() -> None:
    assert (ROOT / "docs" / "cli.md").read_text() == cli_markdown(), \
        "docs/cli.md is stale: run `make docs-reference`"


def test_every_message_field_is_in_the_topics_reference() -> None:
    """Each field of each message schema (`neardup_core/messages.py`) is named in its topic's row of
    docs/topics.md (a URL rule's in docs/host-signals.md): a field added to a schema must be documented."""
    from neardup_core.messages import Decision, HostSignal, Rejection, UrlRule

    rows = {line.split("|")[1].strip().split()[0].strip("`"): line
            for line in (ROOT / "docs" / "topics.md").read_text().splitlines() if line.startswith("| `")}
    for topic, schema in (("dedup.decisions", Decision), ("frontier.host-signals", HostSignal),
                          ("pages.rejected", Rejection)):
        for f in dataclasses.fields(schema):
            assert f"`{f.name}`" in rows[topic], \
                f"{schema.__name__}.{f.name} is not in the {topic} row of docs/topics.md"
    rules = (ROOT / "docs" / "host-signals.md").read_text()
    for f in dataclasses.fields(UrlRule):
        assert f"`{f.name}`" in rules or f'"{f.name}"' in rules, f"UrlRule.{f.name} is not in docs/host-signals.md"


def test_no_user_text_points_at_paths_a_clone_does_not_have() -> None:
    bad = re.compile(r"\.\./shared|/work/|/home/\w|/root/|/Users/")
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:80]}" for path in USER_TEXT
             for n, line in enumerate(path.read_text().splitlines(), 1) if bad.search(line)]
    assert found == []


def test_the_readme_is_short_and_names_the_corpus_variable_and_no_registry_install() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 220
    assert "NEARDUP_CORPUS" in text
    assert not re.search(r"pip install ['\"]?neardup", text), "neardup is not on PyPI"


def test_the_readme_links_resolve() -> None:
    text = README.read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    for link in links:
        if link.startswith(("http://", "https://")):
            continue
        path = link.split("#")[0]
        assert (ROOT / path).exists(), f"README links to {link}, which does not exist"
        if "#" in link:
            anchor = link.split("#")[1]
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(), re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h.lower()).strip().replace(" ", "-") for h in headings}
            assert anchor in slugs, f"README links to {link}: no such heading"


def test_every_public_name_of_the_python_api_is_in_its_reference() -> None:
    """docs/api.md renders each name of `neardup_core.__all__` and `neardup_core.embedded.__all__`
    (deprecated ones aside) from its docstring: a name exported without a reference entry fails here."""
    import neardup_core
    import neardup_core.embedded

    rendered = set(re.findall(r"^::: ([\w.]+)$", (ROOT / "docs" / "api.md").read_text(), re.M))
    short = {name.rpartition(".")[2] for name in rendered}
    deprecated = {"open_engine"}
    missing = [f"{module.__name__}.{name}" for module in (neardup_core, neardup_core.embedded)
               for name in module.__all__ if name not in deprecated and name not in short]
    assert missing == [], f"not in docs/api.md: {missing}"
