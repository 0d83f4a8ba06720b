"""The near-duplicate variants on a small generated page (no corpus needed)."""

from __future__ import annotations

import difflib
import re

import pytest

from neardup_core.extract.main_text import extract
from neardup_core.fingerprint.features import tokens
from neardup_core.fingerprint.page import html_fingerprints
from neardup_core.testing.evaluate import pair_score
from neardup_core.testing.variants import (
    ADS,
    COMMENTS,
    changed_numbers,
    edited_words,
    in_template,
    main_content,
    mirror,
    print_version,
    rotated_ad,
    variants_of,
)

ARTICLE = [
    "The city council voted on Tuesday, March 4, to close the old bridge over the river for at least "
    "18 months while engineers replace the steel supports that were found to be badly corroded during "
    "an inspection last year.",
    "According to the council, about 12,500 cars cross the bridge every day, and most of them will have "
    "to take a detour of nearly four miles through the centre of the town, which is already crowded "
    "during the morning and evening rush hours.",
    "Local shop owners said that they were worried about the loss of passing trade, and several of them "
    "asked the council to provide a free shuttle bus between the two banks of the river for as long as "
    "the work goes on.",
    "The engineers who carried out the inspection said that the bridge was not in danger of collapse, "
    "but that the repairs could not wait any longer, because the cost of the work would rise quickly if "
    "the corrosion were allowed to spread.",
    "A public meeting about the closure will be held in the town hall on Thursday evening, and the "
    "council has promised to publish a detailed timetable of the work on its website before the end of "
    "the month.",
]
OTHER_ARTICLE = [
    "Researchers at the university have found that people who walk for at least half an hour a day are "
    "much less likely to suffer from back pain than those who spend most of their time sitting down at a "
    "desk or in front of a television at home.",
    "The study followed more than two thousand office workers over a period of five years, and asked "
    "them to keep a diary of how much exercise they took and how often they had to see a doctor about "
    "their back or their neck.",
    "The authors say that the results should encourage employers to give their staff more time to move "
    "around during the working day, for example by holding some of their meetings while walking outside "
    "in a park instead of sitting in an office.",
]


def page(title: str, paragraphs: list[str], *, ad: bool = False, site: str = "Riverside Gazette") -> str:
    nav = "".join(f'<li><a href="/{s.lower()}">{s}</a></li>' for s in ("News", "Sport", "Weather", "Contact"))
    slot = '<div class="ad-banner"><a href="https://ads.example/1">Cheap flights to Spain, book now</a></div>'
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title><script>var views = 1234;</script></head>"
        f'<body><div id="header"><a href="/">{site}</a><ul class="nav">{nav}</ul></div>'
        f'{slot if ad else ""}'
        f'<div id="main"><h1>{title}</h1><p class="byline">Published 04/03/2025 09:15, 321 views</p>'
        f'<div class="story">{body}</div></div>'
        f'<div id="footer"><a href="/about">About us</a> | <a href="/privacy">Privacy</a> | '
        f"Copyright 2025 {site}</div></body></html>"
    )


HTML = page("Old bridge to close for repairs", ARTICLE)
HTML_WITH_AD = page("Old bridge to close for repairs", ARTICLE, ad=True)
TEMPLATE = page("Walking keeps back pain away", OTHER_ARTICLE, site="Health Weekly Online")


def words(text: str) -> list[str]:
    return tokens(text)


def test_main_content_finds_the_article() -> None:
    content = main_content(HTML)
    assert content.title == "Old bridge to close for repairs"
    assert all(p in content.paragraphs for p in ARTICLE)
    assert content.words >= 150


@pytest.mark.parametrize("variant", [changed_numbers, rotated_ad, edited_words])
def test_variants_are_deterministic_per_seed(variant) -> None:  # type: ignore[no-untyped-def]
    assert variant(HTML, seed=3) == variant(HTML, seed=3)
    assert variant(HTML, seed=3) != HTML


def test_mirror_is_byte_identical() -> None:
    assert mirror(HTML) is HTML


def test_changed_numbers_changes_every_number_and_date_but_not_the_features() -> None:
    out = changed_numbers(HTML, seed=1)
    text = extract(out).text
    assert "12,500" not in text and "March" not in text and "Tuesday" not in text
    assert "18 months" not in text
    assert "var views = 1234;" in out  # scripts are not text
    old, new = words(extract(HTML).text), words(text)
    assert len(old) == len(new)
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    assert changed and all(a.isdigit() == b.isdigit() and len(a) == len(b) or not a.isdigit()
                           for a, b in changed)
    assert html_fingerprints(out).simhash == html_fingerprints(HTML).simhash


def test_rotated_ad_replaces_the_ad_slot() -> None:
    out = rotated_ad(HTML_WITH_AD, seed=2)
    assert "Cheap flights to Spain" not in out
    assert sum(ad in out for ad in ADS) == 1
    assert main_content(out).paragraphs == main_content(HTML_WITH_AD).paragraphs


def test_rotated_ad_is_inserted_mid_article_without_a_slot() -> None:
    out = rotated_ad(HTML, seed=2)
    assert sum(ad in out for ad in ADS) == 1
    ad_at = min(out.index(ad) for ad in ADS if ad in out)
    assert out.index(ARTICLE[0]) < ad_at < out.index(ARTICLE[-1])
    assert all(p in out for p in ARTICLE)


def test_appended_comments_come_last_and_are_short() -> None:
    out = variants_of(HTML, seed=5)["comments"]
    found = [c for c in COMMENTS if c in out]
    assert 1 <= len(found) <= 4
    assert re.search(r'<div id="comments"', out)
    assert out.index('id="comments"') > out.index('id="footer"')
    assert all(p in out for p in ARTICLE)


def test_edited_words_changes_a_few_words_of_the_article_only() -> None:
    out = edited_words(HTML, seed=4)
    before = words(" ".join(main_content(HTML).paragraphs))
    after = words(" ".join(main_content(out).paragraphs))
    ops = [op for op in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    assert 1 <= len(ops) <= 5
    assert all(max(i2 - i1, j2 - j1) <= 2 for _, i1, i2, j1, j2 in ops)
    assert "Riverside Gazette" in out and "About us" in out


def test_print_version_holds_only_title_and_article() -> None:
    out = print_version(HTML)
    assert "Old bridge to close for repairs" in out
    assert all(p in out for p in ARTICLE)
    assert "Weather" not in out and "Privacy" not in out and "<script" not in out


def test_in_template_puts_the_article_in_the_other_sites_page() -> None:
    out = in_template(HTML, TEMPLATE)
    assert "Health Weekly Online" in out and "Privacy" in out
    assert all(p in out for p in ARTICLE)
    assert not any(p in out for p in OTHER_ARTICLE)
    assert "<title>Old bridge to close for repairs</title>" in out
    assert "Walking keeps back pain away" not in out


def test_variants_of_a_page_with_an_xml_declaration() -> None:
    xhtml = '<?xml version="1.0" encoding="utf-8"?>\n' + HTML
    out = variants_of(xhtml, seed=1, template_html=TEMPLATE)
    assert set(out) == {"numbers", "ad", "comments", "edits", "print", "mirror", "template"}
    assert out["mirror"] == xhtml
    assert all(ARTICLE[0] in v for k, v in out.items() if k not in ("numbers", "edits"))


def test_variants_keep_the_main_text_or_its_fingerprint() -> None:
    """On a clean page jusText drops the ad, the comments and the other site's chrome, so those
    variants have the same main text; dates and counters move no SimHash bit; edits do."""
    base = html_fingerprints(HTML)[:2]
    scores = {kind: pair_score(True, base, html_fingerprints(variant)[:2])
              for kind, variant in variants_of(HTML, seed=1, template_html=TEMPLATE).items()}
    assert all(scores[kind].exact for kind in ("mirror", "ad", "comments", "print", "template")), scores
    assert not scores["numbers"].exact and scores["numbers"].distance == 0
    assert not scores["edits"].exact and scores["edits"].distance
