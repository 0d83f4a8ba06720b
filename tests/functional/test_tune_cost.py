"""`neardup tune` with costs (issue 26): the duplicate rate estimated from a sample of the crawl through
`scan`, the cost table and recommendation on the command line and in the Markdown report, and the flags
refused with one clear line."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from neardup_core.testing.synthetic import generate_crawl_with_truth, write_jsonl
from streams.cli.tune import estimate_duplicate_rate
from streams.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams.cli", "tune", *args], cwd=cwd, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
                          timeout=300)


def truth_rate(truths: list[object]) -> float:
    """The share of duplicate URLs by the generator's truth (the last event of each URL)."""
    latest = {t.url: t.verdict for t in truths}  # type: ignore[attr-defined]
    decided = [v for v in latest.values() if v != "skipped"]
    return sum(v != "unique" for v in decided) / len(decided)


def test_the_rate_estimated_from_a_sample_is_the_crawls(tmp_path: Path) -> None:
    events, truths = generate_crawl_with_truth(seed=11)
    sample = tmp_path / "sample.jsonl"
    write_jsonl(events, sample)
    rate, decided = estimate_duplicate_rate(sample, Settings())
    expected = truth_rate(truths)
    assert decided == len({t.url for t in truths})
    assert 0.1 < expected < 0.9
    assert rate == pytest.approx(expected, abs=0.05), (rate, expected)
    assert not list(tmp_path.glob("state*"))  # the temporary state is not left beside the sample


def words(rng: random.Random, n: int) -> list[str]:
    return [f"w{rng.randrange(5000)}" for _ in range(n)]


def text_pairs(path: Path) -> None:
    """Twelve articles of 150 words, each paired with an edited copy (duplicate) and another article
    (distinct)."""
    rng = random.Random(3)
    articles = [words(rng, 150) for _ in range(13)]
    rows = []
    for n, art in enumerate(articles[:12]):
        edited = list(art)
        for i in rng.sample(range(150), n % 6):
            edited[i] = "changed"
        rows.append({"a": {"text": " ".join(art)}, "b": {"text": " ".join(edited)}, "duplicate": True})
        rows.append({"a": {"text": " ".join(art)}, "b": {"text": " ".join(articles[n + 1])}, "duplicate": False})
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


def test_tune_with_costs_and_a_sample_prints_and_reports_the_cheapest_setting(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    text_pairs(pairs)
    sample = tmp_path / "sample.jsonl"
    write_jsonl(generate_crawl_with_truth(seed=11)[0], sample)
    report, plot = tmp_path / "tune.md", tmp_path / "tune.png"
    result = run(["--pairs", str(pairs), "--cost-lost-page", "100", "--cost-duplicate-entry", "1", "--sample",
                  str(sample), "--report", str(report), "--plot", str(plot), "--max-k", "8"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "an estimate, the share of duplicate verdicts" in result.stderr
    out = " ".join(result.stdout.split())
    assert "least expected cost at precision >= 0.998:" in out
    assert "the default both k=3, 20x4 J=0.75:" in out
    assert "(estimated from" in out
    text = report.read_text()
    assert text.startswith("### expected cost per setting")
    lines = [line for line in text.splitlines() if line.startswith("| recommended: ")]
    assert len(lines) == 1
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert cells[2] == "0"  # at 100:1 no setting with a false merge on these pairs is the cheapest
    assert plot.stat().st_size > 10_000


@pytest.mark.parametrize(("args", "message"), [
    (["--cost-lost-page", "1"], "--cost-lost-page and --cost-duplicate-entry go together"),
    (["--cost-lost-page", "1", "--cost-duplicate-entry", "1"],
     "the costs need a duplicate rate: give --duplicate-rate or --sample (one of them)"),
    (["--cost-lost-page", "1", "--cost-duplicate-entry", "1", "--duplicate-rate", "1.5"],
     "--duplicate-rate must be a number from 0 to 1, not 1.5"),
    (["--cost-lost-page", "-2", "--cost-duplicate-entry", "1", "--duplicate-rate", "0.2"],
     "--cost-lost-page must be a finite number >= 0, not -2.0"),
    (["--containment-corpus", "."], "--containment-corpus . has no MANIFEST.jsonl: give a corpus folder (its pages "
                                    "and their manifest)"),
    (["--containment-sample", "5"], "--containment-sample needs --containment-corpus"),
])
def test_bad_cost_or_containment_flags_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"a": {"text": "x"}, "b": {"text": "y"}, "duplicate": true}\n')
    result = run(["--pairs", str(pairs), *args], tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [f"neardup tune: {message}"]


@pytest.mark.parametrize(("line", "says"), [
    ('{"a": "x.html", "b": "y.html", "relation": "exact-duplicate"}', "a labelled pair needs 'a', 'b' and 'duplicate'"),
    ('{"a": "x.html", "duplicate": true}', "a labelled pair needs 'a', 'b' and 'duplicate'"),
    ("[1, 2]", "a labelled pair needs 'a', 'b' and 'duplicate'"),
    ("{not json", "not JSON"),
])
def test_a_pairs_file_of_another_shape_is_refused_with_its_line(tmp_path: Path, line: str, says: str) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(f'{{"a": {{"text": "x"}}, "b": {{"text": "y"}}, "duplicate": true}}\n{line}\n')
    result = run(["--pairs", str(pairs)], tmp_path)
    assert result.returncode == 2, result.stderr
    [message] = result.stderr.strip().splitlines()
    assert message.startswith(f"neardup tune: {pairs}:2: {says}"), message
    assert "Traceback" not in result.stderr
