"""Main-content extraction with jusText: the text a near-duplicate check should compare.

jusText splits a page into paragraphs and keeps those that read like prose (long enough, with enough
stopwords, few links), judging short ones by their neighbours. Four choices around it:

* **Stoplist.** The caller's language (e.g. Content-Language), else the page's ``<html lang>`` or
  Content-Language meta, else the stoplist with the most hits on the page's words (the longest
  paragraphs' words, so a toolbar or menu in another language does not decide). A declared
  language is checked against the words: when its stoplist gets under half the hits of the best
  one, the page is not in that language (templates often keep ``lang="en"``) and the guess wins.
  With no usable declaration and no clear guess, the union of all stoplists is used.
* **Fallback.** When jusText keeps nothing, the page's full visible text (every paragraph, without
  script, style or noscript) is the main text, so a page of short items is not an empty page.
* **Template check.** When jusText keeps a small share of the page and what it kept is template
  rather than content (text outside the page's dropped prose block, or text inside sidebar,
  navigation or footer elements), the page is decided on what it really holds: that prose block, or
  its own visible text outside template elements, or nothing (then `skip_reason` says why and the
  page is skipped). See `neardup_core.extract.template`; ``template_check=False`` gives the plain
  jusText result (for measuring, bench/bench_extraction.py).
* **Engine.** ``"fast"`` (the default) is `neardup_core.extract.fastjustext`: the same paragraphs and
  decisions as stock jusText, several times faster (see bench/bench_extract.py). ``"justext"`` runs
  stock jusText's own preprocessing and paragraph maker, for reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import justext.core
from lxml import etree

from neardup_core.extract import fastjustext
from neardup_core.extract.stoplists import (
    MAX_DETECT_WORDS,
    MIN_DETECT_WORDS,
    best_stoplist,
    declared_language,
    lower_stoplist_hits,
    stoplist,
    stoplist_for,
    union_stoplist,
)
from neardup_core.extract.template import MAX_KEPT_SHARE, TemplateFinding, find_template

Engine = Literal["fast", "justext"]
ENGINES: tuple[Engine, ...] = ("fast", "justext")
_NOSCRIPT = re.compile(r"<noscript", re.IGNORECASE)
# A declared language stands unless its stoplist gets less than this share of the best one's hits.
DECLARED_MIN_HIT_RATIO = 0.5


class ExtractError(ValueError):
    """The HTML could not be parsed at all."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Extraction:
    """The main content of a page.

    `text` is the kept paragraphs joined by newlines; `language` the stoplist used (a jusText name
    such as ``"English"``, None for the union); `boilerplate_ratio` the share of the characters of all
    paragraphs that jusText classed as boilerplate; `fallback` is True when jusText kept nothing and
    the full visible text was used instead. `template` is set when what jusText kept was judged
    template text (`neardup_core.extract.template`): its reason, what jusText had kept, and what
    `text` is instead (empty when the page holds nothing else: `skip_reason`).
    """

    text: str
    paragraphs: tuple[str, ...]
    language: str | None
    boilerplate_ratio: float
    fallback: bool
    template: TemplateFinding | None = None

    @property
    def skip_reason(self) -> str | None:
        """Why the page must not be deduplicated on its main text (it holds only template), or None."""
        template = self.template
        return template.reason if template is not None and template.action == "skip" else None


EMPTY = Extraction(text="", paragraphs=(), language=None, boilerplate_ratio=0.0, fallback=False)


def extract(html: str, *, language: str | None = None, engine: Engine = "fast",
            template_check: bool = True) -> Extraction:
    """The main content of `html`. Empty or whitespace-only HTML (or a document without elements)
    gives an empty `Extraction`; malformed HTML is parsed leniently; raises `ExtractError` only when
    the parser gives up entirely. `template_check=False` skips the template check (jusText's kept
    text as it is)."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {ENGINES}")
    if not html or html.isspace():
        return EMPTY
    try:
        paragraphs = _paragraphs(html, engine)
    except etree.ParserError as exc:
        if "empty" in str(exc).lower():
            return EMPTY
        raise ExtractError(f"HTML parser failed: {exc}") from None
    except (etree.LxmlError, ValueError, justext.core.JustextError) as exc:
        raise ExtractError(f"HTML parser failed: {exc}") from None
    if isinstance(paragraphs, fastjustext.Paragraphs):
        name = _choose(html, fastjustext.longest_words(paragraphs, MAX_DETECT_WORDS), language)
    else:
        name = choose_stoplist(html, [p.text for p in paragraphs], language)
    words = stoplist(name) if name else union_stoplist()
    if engine == "fast":
        fastjustext.classify(paragraphs, words, lower_cased=True)
    else:
        justext.core.classify_paragraphs(paragraphs, words)
        justext.core.revise_paragraph_classification(paragraphs)
    texts = [p.text for p in paragraphs]
    kept = tuple([text for text, p in zip(texts, paragraphs, strict=True) if p.class_type == "good"])
    total = sum(map(len, texts))
    ratio = 1.0 - sum(map(len, kept)) / total if total else 0.0
    if kept:
        finding = find_template(html, paragraphs) if template_check and 1.0 - ratio < MAX_KEPT_SHARE else None
        if finding is not None:
            return Extraction("\n".join(finding.paragraphs), finding.paragraphs, name, ratio, fallback=False,
                              template=finding)
        return Extraction("\n".join(kept), kept, name, ratio, fallback=False)
    # jusText's cleaning already dropped scripts and styles; drop noscript too, if the page shows any.
    if _shows_noscript(html, paragraphs):
        texts = [p.text for p in _paragraphs(html, engine, visible_only=True)]
    visible = tuple(filter(None, texts))
    return Extraction("\n".join(visible), visible, name, ratio, fallback=bool(visible))


def choose_stoplist(html: str, texts: list[str], language: str | None = None) -> str | None:
    """The jusText stoplist for a page whose paragraphs are `texts` (see the module docstring), or
    None for the union of all stoplists."""
    # The longest paragraphs first: the main text, not a toolbar or menu in another language.
    sample: list[str] = []
    count = 0
    for text in sorted(texts, key=len, reverse=True):
        sample.append(text)
        count += text.count(" ") + text.count("\n") + 1  # paragraph text is whitespace-normalised
        if count >= MAX_DETECT_WORDS:
            break
    words = " ".join(sample).lower().split()[:MAX_DETECT_WORDS]
    return _choose(html, words, language)


def _choose(html: str, words: list[str], language: str | None) -> str | None:
    """`choose_stoplist` for a page whose sample of lower-cased words is `words`."""
    declared = stoplist_for(language) or stoplist_for(declared_language(html))
    if len(words) < MIN_DETECT_WORDS:  # too few words to guess from, or to doubt the declaration
        return declared
    hits = lower_stoplist_hits(words)
    guessed = best_stoplist(hits, len(words))
    if declared is None or guessed is None or guessed == declared:
        return declared or guessed
    return declared if hits.get(declared, 0) >= DECLARED_MIN_HIT_RATIO * hits[guessed] else guessed


def _shows_noscript(html: str, paragraphs: list[Any]) -> bool:
    """Whether the page has a noscript element that dropping could change `paragraphs` by."""
    if isinstance(paragraphs, fastjustext.Paragraphs):
        return paragraphs.noscript
    return _NOSCRIPT.search(html) is not None


def _paragraphs(html: str, engine: Engine, *, visible_only: bool = False) -> list[Any]:
    """jusText's unclassified paragraphs of `html` by `engine`; `visible_only` also drops noscript."""
    extra_kill = ("noscript",) if visible_only else ()
    if engine == "fast":
        return fastjustext.paragraphs_of(html, extra_kill=extra_kill)
    dom = justext.core.preprocessor(justext.core.html_to_dom(html))
    if extra_kill:
        etree.strip_elements(dom, *extra_kill, with_tail=False)
    paragraphs: list[Any] = justext.core.ParagraphMaker.make_paragraphs(dom)
    return paragraphs
