"""jusText stoplists: by language name or code, guessed from a page's words, or all merged.

jusText classifies a paragraph by its share of stopwords, so the stoplist must match the page's
language. Loading a stoplist reads and lower-cases a few thousand words, so every list, the union and
the word-to-languages index behind `detect_stoplist` are built once per process and cached.

Detection is deliberately cheap: the stoplist with the most hits on the page's words wins (the rule
the corpus pairs were computed with). It needs enough words and a clear share of hits; otherwise the
language counts as unknown and the caller uses the union of all lists.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import justext
import numpy as np

# ISO 639 codes (and a few legacy or Wikipedia codes) to jusText's stoplist names.
_CODES = {
    "af": "Afrikaans", "sq": "Albanian", "ar": "Arabic", "an": "Aragonese", "hy": "Armenian",
    "rup": "Aromanian", "ast": "Asturian", "az": "Azerbaijani", "eu": "Basque", "be": "Belarusian",
    "be-tarask": "Belarusian_Taraskievica", "bn": "Bengali", "bpy": "Bishnupriya_Manipuri",
    "bs": "Bosnian", "br": "Breton", "bg": "Bulgarian", "ca": "Catalan", "ceb": "Cebuano",
    "cv": "Chuvash", "hr": "Croatian", "cs": "Czech", "da": "Danish", "nl": "Dutch", "en": "English",
    "eo": "Esperanto", "et": "Estonian", "fi": "Finnish", "fr": "French", "gl": "Galician",
    "ka": "Georgian", "de": "German", "el": "Greek", "gu": "Gujarati", "ht": "Haitian", "he": "Hebrew",
    "iw": "Hebrew", "hi": "Hindi", "hu": "Hungarian", "is": "Icelandic", "io": "Ido", "ig": "Igbo",
    "id": "Indonesian", "in": "Indonesian", "ga": "Irish", "it": "Italian", "jv": "Javanese",
    "kn": "Kannada", "kk": "Kazakh", "ko": "Korean", "ku": "Kurdish", "ky": "Kyrgyz", "la": "Latin",
    "lv": "Latvian", "lt": "Lithuanian", "lmo": "Lombard", "nds": "Low_Saxon", "lb": "Luxembourgish",
    "mk": "Macedonian", "ms": "Malay", "ml": "Malayalam", "mt": "Maltese", "mr": "Marathi",
    "nap": "Neapolitan", "ne": "Nepali", "new": "Newar", "nb": "Norwegian_Bokmal",
    "no": "Norwegian_Bokmal", "nn": "Norwegian_Nynorsk", "oc": "Occitan", "fa": "Persian",
    "pms": "Piedmontese", "pl": "Polish", "pt": "Portuguese", "qu": "Quechua", "ro": "Romanian",
    "mo": "Romanian", "ru": "Russian", "sgs": "Samogitian", "sr": "Serbian", "sh": "Serbo_Croatian",
    "scn": "Sicilian", "simple": "Simple_English", "sk": "Slovak", "sl": "Slovenian", "es": "Spanish",
    "su": "Sundanese", "sw": "Swahili", "sv": "Swedish", "tl": "Tagalog", "fil": "Tagalog",
    "ta": "Tamil", "te": "Telugu", "tr": "Turkish", "tk": "Turkmen", "uk": "Ukrainian", "ur": "Urdu",
    "uz": "Uzbek", "vi": "Vietnamese", "vo": "Volapuk", "wa": "Walloon", "war": "Waray_Waray",
    "cy": "Welsh", "fy": "West_Frisian", "pnb": "Western_Panjabi", "yo": "Yoruba",
}

# Detection needs this many words, and the winner must match this share of them.
MIN_DETECT_WORDS = 20
MIN_HIT_SHARE = 0.08
# The words a guess looks at: enough to be sure, few enough to be cheap on long pages.
MAX_DETECT_WORDS = 3000

_LANG_ATTR = re.compile(r"""<html\b[^>]*?\s(?:xml:)?lang\s*=\s*["']?\s*([A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*)""",
                        re.IGNORECASE)
_CONTENT_LANGUAGE = re.compile(
    r"""<meta\b[^>]*?http-equiv\s*=\s*["']?content-language["']?[^>]*?content\s*=\s*["']?\s*"""
    r"""([A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*)""",
    re.IGNORECASE,
)
_DECLARATION_WINDOW = 8192


@functools.cache
def stoplist_names() -> tuple[str, ...]:
    """The names of jusText's built-in stoplists, sorted (``"English"``, ``"German"``, ...)."""
    return tuple(sorted(justext.get_stoplists()))


@functools.cache
def stoplist(name: str) -> frozenset[str]:
    """The lower-cased stoplist `name` (a jusText name); `KeyError` when there is none."""
    if name not in stoplist_names():
        raise KeyError(name)
    return frozenset(justext.get_stoplist(name))


@functools.cache
def union_stoplist() -> frozenset[str]:
    """All jusText stoplists merged: the stoplist for pages whose language is unknown."""
    return frozenset().union(*(stoplist(name) for name in stoplist_names()))


def stoplist_for(language: str | None) -> str | None:
    """The stoplist name for a language name, ISO code or language tag (``"de-AT"``, ``"English"``,
    a Content-Language value like ``"en, fr"``); None when jusText has no list for it."""
    if not language:
        return None
    first = language.split(",")[0].strip()
    if not first:
        return None
    by_name = {name.lower(): name for name in stoplist_names()}
    normalised = first.replace("-", "_").lower()
    if normalised in by_name:
        return by_name[normalised]
    tag = first.replace("_", "-").lower()
    if tag in _CODES:
        return _CODES[tag]
    return _CODES.get(tag.split("-")[0])


def declared_language(html: str) -> str | None:
    """The language the page declares (``<html lang>``, else a Content-Language meta), unparsed."""
    head = html[:_DECLARATION_WINDOW]
    match = _LANG_ATTR.search(head) or _CONTENT_LANGUAGE.search(head)
    return match.group(1) if match else None


@dataclass(frozen=True, slots=True)
class _WordIndex:
    """Which stoplists hold each word, as a CSR matrix: word id -> languages[starts[id]:starts[id+1]]."""

    ids: dict[str, int]
    starts: np.ndarray
    languages: np.ndarray


@functools.cache
def _word_index() -> _WordIndex:
    names = stoplist_names()
    holders: dict[str, list[int]] = {}
    for lang, name in enumerate(names):
        for word in stoplist(name):
            holders.setdefault(word, []).append(lang)
    ids = {word: i for i, word in enumerate(holders)}
    lengths = np.fromiter((len(langs) for langs in holders.values()), dtype=np.int64, count=len(holders))
    starts = np.zeros(len(holders) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    languages = np.fromiter((lang for langs in holders.values() for lang in langs), dtype=np.int64,
                            count=int(starts[-1]))
    return _WordIndex(ids, starts, languages)


def stoplist_hits(words: Iterable[str]) -> dict[str, int]:
    """How many of `words` (any case) each stoplist holds; only stoplists with hits appear."""
    index = _word_index()
    counts = Counter(word.lower() for word in words)
    found = [(index.ids[word], n) for word, n in counts.items() if word in index.ids]
    if not found:
        return {}
    word_ids = np.fromiter((i for i, _ in found), dtype=np.int64, count=len(found))
    weights = np.fromiter((n for _, n in found), dtype=np.int64, count=len(found))
    begin, end = index.starts[word_ids], index.starts[word_ids + 1]
    lengths = end - begin
    # The languages of every found word, concatenated: offsets within each word's slice plus its start.
    offsets = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    languages = index.languages[np.repeat(begin, lengths) + offsets]
    totals = np.bincount(languages, weights=np.repeat(weights, lengths), minlength=len(stoplist_names()))
    names = stoplist_names()
    return {names[lang]: int(totals[lang]) for lang in np.flatnonzero(totals)}


def detect_stoplist(words: list[str]) -> str | None:
    """The stoplist with the most hits on `words`, or None when there are too few words or hits to
    tell (ties go to the first name in alphabetical order)."""
    sample = words[:MAX_DETECT_WORDS]
    if len(sample) < MIN_DETECT_WORDS:
        return None
    hits = stoplist_hits(sample)
    if not hits:
        return None
    best = max(sorted(hits), key=hits.__getitem__)
    return best if hits[best] >= MIN_HIT_SHARE * len(sample) else None
