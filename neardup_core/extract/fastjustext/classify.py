"""Classify: jusText's context-free and context-sensitive classification (`classify`, `_revised`,
`_promote_heading`) with its default parameters, on `FastParagraph` lists; `justext`, the whole of
`justext.justext` (segment, then classify); `count_stopwords`, a one-pass stopword count.
"""

from __future__ import annotations

from itertools import islice

from justext.core import (
    LENGTH_HIGH_DEFAULT,
    LENGTH_LOW_DEFAULT,
    MAX_HEADING_DISTANCE_DEFAULT,
    MAX_LINK_DENSITY_DEFAULT,
    STOPWORDS_HIGH_DEFAULT,
    STOPWORDS_LOW_DEFAULT,
    define_stoplist,
)

from neardup_core.extract.fastjustext.paragraphs import FastParagraph
from neardup_core.extract.fastjustext.segment import paragraphs_of


def count_stopwords(paragraphs: list[FastParagraph], stopwords: frozenset[str]) -> None:
    """Count the stopwords of all paragraphs in one pass over their joined text (one lower-casing,
    one split, one C-level membership map) and remember the counts for `stopwords`."""
    flags = map(stopwords.__contains__, "\n".join([p.text for p in paragraphs]).lower().split())
    for paragraph in paragraphs:
        paragraph._stopwords = (stopwords, sum(islice(flags, paragraph._words)))


def classify(paragraphs: list[FastParagraph], stoplist: frozenset[str], *,
             lower_cased: bool = False) -> list[FastParagraph]:
    """jusText's context-free and context-sensitive classification, default parameters, in place.
    `lower_cased` says the stoplist's words are lower-case already (as `neardup_core.extract.stoplists`
    makes them), so jusText's lower-cased copy of the list (`define_stoplist`) is not needed.

    The rules of `justext.core.classify_paragraphs` and `revise_paragraph_classification`, step for
    step, on lists of classes instead of paragraph attributes (the stock functions make several
    method calls per paragraph and search for neighbours per paragraph); stopwords are counted only
    for the paragraphs whose density decides their class, and the heading test is made only where
    the rules read it.
    """
    stopwords = stoplist if lower_cased else define_stoplist(stoplist)
    is_stopword = stopwords.__contains__
    cf_classes = []
    for paragraph in paragraphs:
        length = paragraph._length
        words = paragraph._words
        text = paragraph.text
        if length and paragraph.chars_count_in_links / length > MAX_LINK_DENSITY_DEFAULT:
            cf = "bad"
        elif "\xa9" in text or "&copy" in text or "select" in paragraph.dom_path:
            cf = "bad"
        elif length < LENGTH_LOW_DEFAULT:
            cf = "bad" if paragraph.chars_count_in_links > 0 else "short"
        else:
            # Only the paragraphs that get this far need their stopwords counted. Lower-casing the
            # text then splitting it gives the same words as splitting then lower-casing.
            lower_words = paragraph._lower_words
            count = sum(map(is_stopword, text.lower().split() if lower_words is None else lower_words))
            paragraph._stopwords = (stopwords, count)
            density = count / words if words else 0
            if density >= STOPWORDS_HIGH_DEFAULT:
                cf = "good" if length > LENGTH_HIGH_DEFAULT else "neargood"
            elif density >= STOPWORDS_LOW_DEFAULT:
                cf = "neargood"
            else:
                cf = "bad"
        paragraph.cf_class = cf
        cf_classes.append(cf)
    classes = _revised(paragraphs, cf_classes)
    for paragraph, class_type in zip(paragraphs, classes, strict=True):
        paragraph.class_type = class_type
    return paragraphs


def _revised(paragraphs: list[FastParagraph], cf_classes: list[str]) -> list[str]:
    """The classes `justext.core.revise_paragraph_classification` gives paragraphs classed
    `cf_classes` (default maximum heading distance), stage by stage.

    A neighbour is the nearest paragraph before or after that is good or bad ("bad" at either end),
    or, for the second look of the short stage, good, bad or near-good; each stage finds them in two
    passes instead of a search per paragraph.
    """
    n = len(paragraphs)
    classes = [p.class_type for p in paragraphs]
    # Good headings. Stock jusText copies each class from `cf_class` in this same loop, so the
    # paragraphs after a heading still hold their previous class here: for fresh paragraphs none is
    # good, and the stage only copies the classes.
    if "good" not in classes:
        classes = cf_classes[:]
    else:
        for i, cf in enumerate(cf_classes):
            classes[i] = cf
            if cf == "short" and paragraphs[i].heading:
                _promote_heading(paragraphs, classes, i, "neargood")
    # Short paragraphs, all judged by the classes before any of them changes (so only good, bad and
    # near-good ones are neighbours).
    if "short" in classes:
        following: list[tuple[str, str] | None] = [None] * n
        good_bad = near = "bad"
        for i in range(n - 1, -1, -1):
            class_type = classes[i]
            if class_type == "short":
                following[i] = (good_bad, near)
            elif class_type == "neargood":
                near = class_type
            else:
                good_bad = near = class_type
        revised = classes[:]
        good_bad = near = "bad"
        for i, class_type in enumerate(classes):
            if class_type == "short":
                next_good_bad, next_near = following[i]  # type: ignore[misc]
                if good_bad == next_good_bad:
                    revised[i] = good_bad
                elif (good_bad == "bad" and near == "neargood") or (
                        next_good_bad == "bad" and next_near == "neargood"):
                    revised[i] = "good"
                else:
                    revised[i] = "bad"
            elif class_type == "neargood":
                near = class_type
            else:
                good_bad = near = class_type
        classes = revised
    # Near-good paragraphs, in order: one revised counts as the previous neighbour of the next.
    if "neargood" in classes:
        following_good_bad = [""] * n
        good_bad = "bad"
        for i in range(n - 1, -1, -1):
            class_type = classes[i]
            if class_type == "neargood":
                following_good_bad[i] = good_bad
            else:
                good_bad = class_type
        good_bad = "bad"
        for i, class_type in enumerate(classes):
            if class_type == "neargood":
                class_type = classes[i] = (
                    "bad" if good_bad == "bad" and following_good_bad[i] == "bad" else "good")
            good_bad = class_type
    # More good headings.
    for i, class_type in enumerate(classes):
        if class_type == "bad" and cf_classes[i] != "bad" and paragraphs[i].heading:
            _promote_heading(paragraphs, classes, i, "good")
    return classes


def _promote_heading(paragraphs: list[FastParagraph], classes: list[str], i: int, to: str) -> None:
    """Class heading `i` as `to` when a good paragraph follows within the maximum heading distance
    (the characters of the paragraphs between them)."""
    distance = 0
    for j in range(i + 1, len(paragraphs)):
        if distance > MAX_HEADING_DISTANCE_DEFAULT:
            return
        if classes[j] == "good":
            classes[i] = to
            return
        distance += paragraphs[j]._length


def justext(html: str | bytes, stoplist: frozenset[str]) -> list[FastParagraph]:
    """What `justext.justext(html, stoplist)` returns for `html` (text or bytes), faster."""
    return classify(paragraphs_of(html), stoplist)
