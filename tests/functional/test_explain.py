"""`neardup explain A B`: its verdict is what `neardup scan` decides for a file holding just the two pages
(a synthetic pair, and from the corpus a mirror, an edited-words copy and two different articles of one
site); `--json` is one object with the fields; missing files, unknown URLs and rejected pages end with
exit code 2 and the reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from neardup_core.dedup.explain import RANK_PARTS, Explanation, explain
from neardup_core.dedup.rank import rank_of
from neardup_core.fingerprint.simhash import hamming
from neardup_core.ingest.lookup import html_url, load_page
from neardup_core.settings import CoreSettings
from neardup_core.testing.corpus import load_html, read_curated, read_manifest
from neardup_core.testing.labelled import negative_pairs, read_ground_truth
from neardup_core.testing.variants import edited_words, mirror
from streams.cli.explain import folded, ranges, run_explain
from streams.settings import Settings
from tests.corpus.corpus import CORPUS, NEEDS_CORPUS

ROOT = Path(__file__).resolve().parents[2]
FETCHED_AT = "2026-11-30T12:00:00Z"
NOW = 1_796_000_000_000  # the fetch time of HTML files in these tests (2026-11-30)
SETTINGS = CoreSettings()  # what scan runs with in these tests: the defaults (MinHash on)
BASE = "pages/cleanportaleval/bbc.co.uk_news_11.html.gz"
OTHER_ARTICLE = "pages/cleanportaleval/bbc.co.uk_news_12.html.gz"
"""Two BBC world-news articles of one template group: a same-group negative of the labelled set."""
PROSE = ("The council met on a wet Tuesday evening to decide what should happen to the old railway bridge "
         "that has carried trains across the river for more than a century. Engineers told the members that "
         "the iron frame was sound but the deck would need to be replaced within five years. Several residents "
         "spoke in favour of turning the bridge into a footpath and cycle route, while the rail company asked "
         "for more time to study the costs. In the end the members agreed to commission an independent survey "
         "and to hold a public meeting in the spring before any decision is made about the future of the bridge.")


def page(title: str, paragraphs: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<html lang='en'><head><title>{title}</title></head><body><div class='nav'><a href='/'>Home</a> "
            f"<a href='/news'>News</a></div><div class='article'><h1>{title}</h1>{body}</div>"
            "<div class='footer'>Copyright the Example Gazette. All rights reserved.</div></body></html>")


def synthetic_pair() -> tuple[str, str]:
    sentences = PROSE.split(". ")
    a = page("The bridge", [". ".join(sentences[:3]) + ".", ". ".join(sentences[3:])])
    edited = [s.replace("five years", "four years").replace("spring", "early summer") for s in sentences]
    return a, page("The bridge", [". ".join(edited[:3]) + ".", ". ".join(edited[3:])])


def write_pair(tmp: Path, name: str, url_a: str, html_a: str, url_b: str, html_b: str) -> Path:
    path = tmp / f"{name}.jsonl"
    events = [{"url": url, "body": html, "content_type": "text/html", "fetched_at": FETCHED_AT}
              for url, html in ((url_a, html_a), (url_b, html_b))]
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def explained(path: Path, url_a: str, url_b: str) -> Explanation:
    return explain(load_page(f"{path}#{url_a}", now_ms=NOW), load_page(f"{path}#{url_b}", now_ms=NOW), SETTINGS)


def scan_decisions(tmp: Path, path: Path) -> dict[str, dict[str, Any]]:
    """The last decision per URL of `neardup scan` over `path` (the CLI, default settings)."""
    out = tmp / f"{path.stem}.decisions.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "streams.cli", "scan", str(path), "--state", str(tmp / f"{path.stem}.state"),
         "--out", str(out), "--no-progress", "--processes", "1"],
        cwd=ROOT, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, timeout=300)
    assert result.returncode == 0, result.stderr
    latest: dict[str, dict[str, Any]] = {}
    for line in out.read_bytes().splitlines():
        d = orjson.loads(line)
        if d["url"] not in latest or d["revision"] > latest[d["url"]]["revision"]:
            latest[d["url"]] = d
    return latest


def said(d: dict[str, Any]) -> tuple[Any, ...]:
    return d["verdict"], d["duplicate_of"], d["distance"], d["jaccard"], d["reason"]


def assert_same_as_scan(tmp: Path, name: str, url_a: str, html_a: str, url_b: str, html_b: str) -> Explanation:
    path = write_pair(tmp, name, url_a, html_a, url_b, html_b)
    result = explained(path, url_a, url_b)
    scanned = scan_decisions(tmp, path)
    assert set(scanned) == {url_a, url_b}
    assert said(scanned[url_a]) == (result.verdict.a.verdict, result.verdict.a.duplicate_of, result.verdict.a.distance,
                                    result.verdict.a.jaccard, result.verdict.a.reason)
    assert said(scanned[url_b]) == (result.verdict.b.verdict, result.verdict.b.duplicate_of, result.verdict.b.distance,
                                    result.verdict.b.jaccard, result.verdict.b.reason)
    for side, report in (("a", result.a), ("b", result.b)):  # the fingerprints scan published are the ones explained
        url = url_a if side == "a" else url_b
        assert scanned[url]["text_sha256"] == report.text_sha256
        assert scanned[url]["simhash"] == report.simhash
    return result


def test_synthetic_edited_pair_verdict_equals_scan(tmp_path: Path) -> None:
    html_a, html_b = synthetic_pair()
    url_a, url_b = "https://gazette.example/news/bridge", "https://gazette.example/news/bridge-updated"
    result = assert_same_as_scan(tmp_path, "synthetic", url_a, html_a, url_b, html_b)
    assert result.verdict.better == "A" and result.verdict.duplicate == "B"
    assert result.verdict.b.verdict == "near_duplicate" and result.verdict.b.duplicate_of == url_a
    assert result.verdict.a.verdict == "unique"
    assert not result.same_body and not result.same_text
    assert result.simhash is not None and result.simhash.distance == hamming(int(result.a.simhash or "", 16),
                                                                              int(result.b.simhash or "", 16))
    # the pigeonhole: within k bits, at least blocks - k blocks are equal and some table's bucket is shared
    if result.simhash.distance <= SETTINGS.k:
        assert sum(result.simhash.blocks_equal) >= len(result.simhash.blocks_equal) - SETTINGS.k
        assert result.simhash.shared_tables
    changed = [row for row in result.diff if row.tag != "equal"]
    assert changed and all(row.tag == "replace" for row in changed)
    marked = {words for row in changed for words, is_changed in row.b if is_changed}
    assert any("four" in words for words in marked) and any("summer" in words for words in marked)


def test_html_files_give_the_verdict_of_the_same_events_in_a_jsonl(tmp_path: Path) -> None:
    html_a, html_b = synthetic_pair()
    (tmp_path / "a.html").write_text(html_a)
    (tmp_path / "b.html").write_text(html_b)
    url_a, url_b = "https://gazette.example/news/bridge", "https://gazette.example/news/bridge-updated"
    from_files = explain(load_page(f"{tmp_path / 'a.html'}#{url_a}", now_ms=NOW),
                         load_page(f"{tmp_path / 'b.html'}#{url_b}", now_ms=NOW), SETTINGS)
    from_jsonl = explained(write_pair(tmp_path, "pair", url_a, html_a, url_b, html_b), url_a, url_b)
    assert from_files.verdict == from_jsonl.verdict
    assert (from_files.a.text_sha256, from_files.b.simhash) == (from_jsonl.a.text_sha256, from_jsonl.b.simhash)
    # without a URL, an HTML file is a page at https://file.invalid/<its path>
    plain = explain(load_page(str(tmp_path / "a.html"), now_ms=NOW), load_page(str(tmp_path / "b.html"), now_ms=NOW),
                    SETTINGS)
    assert plain.a.url == html_url(tmp_path / "a.html") and plain.verdict.b.duplicate_of == plain.a.url


def test_worse_ranked_a_is_the_duplicate_and_the_rank_part_is_named(tmp_path: Path) -> None:
    html_a, html_b = synthetic_pair()
    url_a, url_b = "http://gazette.example/news/bridge", "https://gazette.example/news/bridge"
    result = assert_same_as_scan(tmp_path, "swapped", url_a, html_a, url_b, html_b)
    assert result.verdict.better == "B" and result.verdict.duplicate == "A"
    assert result.verdict.b.verdict == "unique" and result.verdict.a.duplicate_of == url_b
    assert "scheme" in result.verdict.rank_reason
    assert len(RANK_PARTS) == len(rank_of(url_a, 0.0, 0, "")), "RANK_PARTS must name every element of a Rank"


def test_skipped_page_and_same_url_are_not_compared(tmp_path: Path) -> None:
    html_a, _ = synthetic_pair()
    path = tmp_path / "skip.jsonl"
    path.write_bytes(orjson.dumps({"url": "https://g.example/a", "body": html_a, "fetched_at": FETCHED_AT}) + b"\n"
                     + orjson.dumps({"url": "https://g.example/b", "body": html_a, "status": 404,
                                     "fetched_at": FETCHED_AT}) + b"\n")
    result = explained(path, "https://g.example/a", "https://g.example/b")
    assert result.verdict.rule == "skipped" and result.verdict.b.verdict == "skipped"
    assert result.verdict.b.reason == "HTTP status 404" and result.b.extraction is None
    scanned = scan_decisions(tmp_path, path)
    assert scanned["https://g.example/b"]["verdict"] == "skipped"
    assert scanned["https://g.example/a"]["verdict"] == result.verdict.a.verdict == "unique"
    (tmp_path / "a.html").write_text(html_a)
    same = explain(load_page(str(tmp_path / "a.html"), now_ms=NOW), load_page(str(tmp_path / "a.html"), now_ms=NOW),
                   SETTINGS)
    assert same.verdict.rule == "same URL" and same.verdict.a.verdict == same.verdict.b.verdict == "unique"


def test_json_is_one_object_with_the_fields(tmp_path: Path) -> None:
    html_a, html_b = synthetic_pair()
    url_a, url_b = "https://gazette.example/news/bridge", "https://gazette.example/news/bridge-updated"
    path = write_pair(tmp_path, "json", url_a, html_a, url_b, html_b)
    result = subprocess.run([sys.executable, "-m", "streams.cli", "explain", f"{path}#{url_a}", f"{path}#{url_b}",
                             "--json"], cwd=ROOT, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
                            timeout=120)
    assert result.returncode == 0, result.stderr
    data = orjson.loads(result.stdout)
    expected = explained(path, url_a, url_b).to_dict()
    assert data["verdict"] == orjson.loads(orjson.dumps(expected["verdict"]))
    assert data["verdict"]["b"]["verdict"] == "near_duplicate" and data["verdict"]["rule"]
    for side in ("a", "b"):
        page_data = data[side]
        assert page_data["kind"] == "jsonl" and page_data["position"] == (1 if side == "a" else 2)
        assert len(page_data["body_sha256"]) == 64 and len(page_data["text_sha256"]) == 64
        assert page_data["extraction"]["paragraphs"] and page_data["extraction"]["stoplist"] == "English"
        assert 0.0 <= page_data["extraction"]["boilerplate_share"] <= 1.0
        assert page_data["extraction"]["template"]["outcome"] in ("not gated", "content", "replaced", "skipped")
    assert data["simhash"]["distance"] == expected["simhash"]["distance"]
    assert data["simhash"]["design"] == SETTINGS.design.name
    assert 0.0 <= data["minhash"]["jaccard"] <= 1.0 and data["minhash"]["rows"] == SETTINGS.bands * SETTINGS.rows
    assert data["minhash"]["first_shared_band"] == (data["minhash"]["shared_bands"] or [None])[0]
    assert {row["tag"] for row in data["diff"]} == {"equal", "replace"}  # the title is equal, both paragraphs edited
    assert data["settings"]["k"] == SETTINGS.k


def test_rich_output_says_the_verdict_rule_and_marks_the_changes(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from rich.console import Console

    html_a, html_b = synthetic_pair()
    (tmp_path / "a.html").write_text(html_a)
    (tmp_path / "b.html").write_text(html_b)
    console = Console(width=160, record=True, force_terminal=False)
    assert run_explain(Settings(), str(tmp_path / "a.html"), str(tmp_path / "b.html"), console=console) == 0
    text = console.export_text()
    expected = explain(load_page(str(tmp_path / "a.html"), now_ms=NOW), load_page(str(tmp_path / "b.html"), now_ms=NOW),
                       SETTINGS)
    assert f"verdict: {expected.verdict.headline[:60]}" in " ".join(text.split())
    assert "template check" in text and "stoplist" in text and "English" in text
    assert expected.simhash is not None and f"distance {expected.simhash.distance} bits" in text
    assert "~" in text  # a replaced paragraph, its changed words marked as wdiff does (no colours here)
    assert "[-five-]" in text and "{+four+}" in text


def test_missing_file_unknown_url_and_rejected_page_exit_2_with_the_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    html_a, _ = synthetic_pair()
    good = tmp_path / "good.jsonl"
    good.write_bytes(orjson.dumps({"url": "https://g.example/a", "body": html_a}) + b"\n"
                     + orjson.dumps({"url": "https://g.example/bad", "body_b64": "not base64!"}) + b"\n")
    cases = [
        (str(tmp_path / "absent.html"), "absent.html: no such file"),
        (f"{tmp_path / 'absent.jsonl'}#https://g.example/a", "absent.jsonl: no such file"),
        (f"{good}#https://g.example/nowhere", "no record of https://g.example/nowhere in"),
        (f"{good}#https://g.example/bad", "is rejected at stage validate: 'body_b64' is not valid base64"),
        (str(good), "name one as"),
    ]
    for spec, message in cases:
        assert run_explain(Settings(), f"{good}#https://g.example/a", spec) == 2, spec
        err = capsys.readouterr().err
        assert err.startswith("neardup explain: ") and message in err, (spec, err)
    result = subprocess.run([sys.executable, "-m", "streams.cli", "explain", str(tmp_path / "absent.html"),
                             f"{good}#https://g.example/a"], cwd=ROOT, capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin"}, timeout=120)
    assert result.returncode == 2 and "no such file" in result.stderr and "Traceback" not in result.stderr


def test_warc_record_by_url_verdict_equals_scan(tmp_path: Path) -> None:
    from tests.warcs import Warc, article

    warc = Warc(gzipped=True)
    warc.response("https://w.example/one", article(1), second=1)
    warc.request("https://w.example/two")
    warc.response("https://w.example/two", article(1), second=2)
    path = tmp_path / "crawl.warc.gz"
    path.write_bytes(warc.bytes())
    result = explain(load_page(f"{path}#https://w.example/one", now_ms=NOW),
                     load_page(f"{path}#https://w.example/two", now_ms=NOW), SETTINGS)
    assert result.a.kind == "warc" and result.a.fetched_at == "2026-11-02T10:00:01.000Z" and result.same_body
    assert result.verdict.rule == "exact: body digest" and result.verdict.b.duplicate_of == "https://w.example/one"
    scanned = scan_decisions(tmp_path, path)
    for url, verdict in (("https://w.example/one", result.verdict.a), ("https://w.example/two", result.verdict.b)):
        assert said(scanned[url]) == (verdict.verdict, verdict.duplicate_of, verdict.distance, verdict.jaccard,
                                      verdict.reason)


def test_a_url_fetched_twice_is_its_last_record(tmp_path: Path) -> None:
    html_a, html_b = synthetic_pair()
    path = tmp_path / "twice.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"url": "https://g.example/a", "body": html, "fetched_at": FETCHED_AT})
                              + b"\n" for html in (html_a, html_b)))
    source = load_page(f"{path}#https://G.example:443/a", now_ms=NOW)  # found by the URL's identity
    assert (source.position, source.fetches) == (2, 2)
    assert orjson.loads(source.event.raw)["body"] == html_b


def test_folding_and_ranges() -> None:
    from neardup_core.dedup.explain import DiffRow

    eq, ch = DiffRow("equal", (("x", False),), (("x", False),)), DiffRow("replace", (("a", True),), (("b", True),))
    rows = [eq] * 5 + [ch] + [eq] * 5
    out = folded(rows, 1)
    assert out == [4, eq, ch, eq, 4]
    assert folded(rows, None) == rows and folded([eq, ch, eq], 1) == [eq, ch, eq]
    assert ranges([0, 1, 2, 4, 6, 7]) == "0-2, 4, 6-7" and ranges([]) == "none"


# --- the three pairs from the corpus the issue asks for ---------------------------------------------------------

@pytest.fixture(scope="module")
def base() -> tuple[str, str]:
    pages = {p.path: p for p in read_manifest(CORPUS)}
    return pages[BASE].event_url, load_html(CORPUS, BASE)


def needs_corpus(test: Any) -> Any:
    for mark in NEEDS_CORPUS:
        test = mark(test)
    return test


@needs_corpus
def test_corpus_mirror_pair_is_an_exact_duplicate_as_scan_decides(tmp_path: Path, base: tuple[str, str]) -> None:
    url, html = base
    mirror_url = "http://mirror.example/bbc/news/world-asia-china-22037833"
    result = assert_same_as_scan(tmp_path, "mirror", url, html, mirror_url, mirror(html))
    assert result.same_body and result.verdict.rule == "exact: body digest"
    assert result.verdict.b.verdict == "exact_duplicate" and result.verdict.b.duplicate_of == url


@needs_corpus
def test_corpus_edited_words_pair_verdict_equals_scan(tmp_path: Path, base: tuple[str, str]) -> None:
    url, html = base
    edited_url = "http://mirror.example/bbc/news/world-asia-china-22037833"
    result = assert_same_as_scan(tmp_path, "edited", url, html, edited_url, edited_words(html, seed=3))
    assert result.verdict.b.verdict == "near_duplicate" and not result.same_text
    assert result.minhash is not None and result.minhash.shared_bands
    assert any(row.tag != "equal" for row in result.diff)


@needs_corpus
def test_corpus_two_articles_of_one_site_are_unique_as_scan_decides(tmp_path: Path) -> None:
    negatives, _ = negative_pairs(read_manifest(CORPUS), read_curated(CORPUS), read_ground_truth(CORPUS))
    assert (BASE, OTHER_ARTICLE) in negatives  # a same-group pair of different articles in the labelled set
    pages = {p.path: p for p in read_manifest(CORPUS)}
    url_a, url_b = pages[BASE].event_url, pages[OTHER_ARTICLE].event_url
    result = assert_same_as_scan(tmp_path, "articles", url_a, load_html(CORPUS, BASE), url_b,
                                 load_html(CORPUS, OTHER_ARTICLE))
    assert result.verdict.a.verdict == result.verdict.b.verdict == "unique" and result.verdict.rule == "none"
