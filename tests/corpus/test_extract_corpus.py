"""Decoding and extraction on the real-web corpus (`NEARDUP_CORPUS`, docs/corpus.md): no page fails, the fast engine
keeps what stock jusText keeps, and the main text overlaps the sources' gold text.

The overlap floors are the measured means (bag of lower-cased words, per page, then averaged) minus
a margin of 0.03, so a change that makes extraction clearly worse fails here. Measured on the 391
gold pages with the template check: recall 0.867, precision 0.885 (per source, recall / precision:
cleaneval 0.894 / 0.989, cleanportaleval 0.798 / 0.808, dragnet 0.774 / 0.826, msv-big9 0.951 / 0.928,
msv-chaos 0.941 / 0.876, scrapinghub-aeb 0.893 / 0.867, tiptopjaw-wceb 0.657 / 0.835); without it
(jusText's kept text as it is) recall 0.850, precision 0.875 (bench/bench_extraction.py). Run with
``-s`` to see them.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict

import justext
import pytest
from lxml import etree

from neardup_core.extract import fastjustext, template
from neardup_core.extract.fastjustext.clean import clean, parse_root
from neardup_core.extract.main_text import Extraction, choose_stoplist, extract
from neardup_core.extract.stoplists import stoplist, union_stoplist
from neardup_core.testing.corpus import load_html, read_curated, read_manifest
from tests.corpus.corpus import CORPUS, NEEDS_CORPUS

pytestmark = NEEDS_CORPUS

MIN_AGREEMENT = 0.99
RECALL_FLOOR = 0.82
PRECISION_FLOOR = 0.84
_WORD = re.compile(r"\w+")


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    """Every corpus page, decoded (decoding every page is itself the first check)."""
    return {page.path: load_html(CORPUS, page.path) for page in read_manifest(CORPUS)}


@pytest.fixture(scope="module")
def extractions(pages: dict[str, str]) -> dict[str, Extraction]:
    return {path: extract(html) for path, html in pages.items()}


def test_every_page_decodes_and_extracts(pages: dict[str, str], extractions: dict[str, Extraction]) -> None:
    assert len(extractions) == len(pages) > 700
    with_text = sum(bool(e.text) for e in extractions.values())
    assert with_text >= 0.98 * len(pages)
    assert all(0.0 <= e.boilerplate_ratio <= 1.0 for e in extractions.values())


def test_fast_engine_keeps_what_stock_jusText_keeps(pages: dict[str, str]) -> None:
    """Every other page, to stay well under a minute (bench/bench_extract.py checks them all)."""
    sample = dict(list(pages.items())[::2])
    same = 0
    differing = []
    for path, html in sample.items():
        try:
            name = choose_stoplist(html, [p.text for p in fastjustext.paragraphs_of(html)])
        except etree.ParserError:
            continue  # no elements: both engines give nothing
        words = stoplist(name) if name else union_stoplist()
        stock = [(p.text, p.class_type) for p in justext.justext(html, words)]
        fast = [(p.text, p.class_type) for p in fastjustext.justext(html, words)]
        if [t for t, c in stock if c == "good"] == [t for t, c in fast if c == "good"]:
            same += 1
        else:
            differing.append(path)
    print(f"\nkept paragraphs identical on {same}/{len(sample)} pages")
    assert same >= MIN_AGREEMENT * len(sample), differing[:10]


def _words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


def test_main_text_overlaps_the_gold_text(extractions: dict[str, Extraction]) -> None:
    recall: dict[str, list[float]] = defaultdict(list)
    precision: dict[str, list[float]] = defaultdict(list)
    for gold_file in sorted((CORPUS / "ground-truth").glob("*.jsonl.gz")):
        source = gold_file.name.removesuffix(".jsonl.gz")
        with gzip.open(gold_file, "rt") as lines:
            for line in lines:
                gold = json.loads(line)
                if gold["path"] not in extractions:
                    continue
                expected, got = _words(gold["text"]), _words(extractions[gold["path"]].text)
                common = sum((expected & got).values())
                recall[source].append(common / max(1, sum(expected.values())))
                precision[source].append(common / max(1, sum(got.values())))
    all_recall = [r for values in recall.values() for r in values]
    all_precision = [p for values in precision.values() for p in values]
    report = [f"{s}: {len(recall[s])} pages, recall {sum(recall[s]) / len(recall[s]):.3f}, "
              f"precision {sum(precision[s]) / len(precision[s]):.3f}" for s in sorted(recall)]
    mean_recall = sum(all_recall) / len(all_recall)
    mean_precision = sum(all_precision) / len(all_precision)
    report.append(f"all: {len(all_recall)} pages, recall {mean_recall:.3f}, precision {mean_precision:.3f}")
    print("\n" + "\n".join(report))
    assert len(all_recall) > 350
    assert mean_recall >= RECALL_FLOOR, report
    assert mean_precision >= PRECISION_FLOOR, report


def _f1(gold: str, text: str) -> float:
    expected, got = _words(gold), _words(text)
    common = sum((expected & got).values())
    if not common:
        return 0.0
    precision, recall = common / sum(got.values()), common / sum(expected.values())
    return 2 * precision * recall / (precision + recall)


def test_template_check_does_not_make_extraction_worse(pages: dict[str, str],
                                                       extractions: dict[str, Extraction]) -> None:
    """On the gold pages, the template check (`neardup_core.extract.template`) raises the mean F1 and
    leaves most pages alone; the curated extraction collisions no longer share a main text."""
    before, after = [], []
    for gold_file in sorted((CORPUS / "ground-truth").glob("*.jsonl.gz")):
        with gzip.open(gold_file, "rt") as lines:
            for line in lines:
                gold = json.loads(line)
                if gold["path"] in pages:
                    before.append(_f1(gold["text"], extract(pages[gold["path"]], template_check=False).text))
                    after.append(_f1(gold["text"], extractions[gold["path"]].text))
    changed = sum(e.template is not None for e in extractions.values())
    print(f"\nmean F1 {sum(before) / len(before):.3f} -> {sum(after) / len(after):.3f}; "
          f"{changed} of {len(extractions)} pages changed by the template check")
    assert sum(after) >= sum(before)
    assert changed <= 0.05 * len(extractions)
    for pair in read_curated(CORPUS):
        if pair["relation"] == "extraction-collision":
            a, b = extractions[pair["a"]], extractions[pair["b"]]
            assert not a.text or a.text != b.text, pair["evidence"]


def test_the_segmenter_notes_the_roles_the_template_check_read_from_a_second_parse(pages: dict[str, str]) -> None:
    """Every paragraph of every page: the role of its element that the template check reads from the fast
    segmenter's notes is the one the page's cleaned tree, parsed again, gives (what the check read before)."""
    differ = []
    count = 0
    for path, html in pages.items():
        paragraphs = fastjustext.paragraphs_of(html)
        if not paragraphs:
            continue
        noted = template.element_roles(html, paragraphs)
        assert isinstance(noted, template._SegmentRoles)
        root = parse_root(html)
        clean(root)
        parsed = template._TreeRoles(root)
        count += len(paragraphs)
        differ += [(path, p.xpath) for p in paragraphs if noted.of(p) != parsed.of(p)]
    assert count > 50_000 and differ == []
