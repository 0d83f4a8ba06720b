"""jusText stoplists: by language name or code, guessed from a page's words, or all merged.

jusText classifies a paragraph by its share of stopwords, so the stoplist must match the page's
language. Loading a stoplist reads and lower-cases a few thousand words, so every list, the union and
the word-to-languages index behind `detect_stoplist` are built once per process, when first needed,
and kept. The index (150,000 words) takes longer to build from the 100 lists than a process takes to
start, and every pool worker needs it, so it is also cached on disk (`index_cache_path`): built once
per jusText version, loaded from then on, rebuilt when the file is missing or unreadable.

Detection is deliberately cheap: the stoplist with the most hits on the page's words wins (the rule
the corpus pairs were computed with). One correction: many lists were built from Wikipedia text and
picked up English words (Marathi holds 250 of the 453 English stopwords, Uzbek and Finnish about
100), so on English pages they out-hit English; for detection, English stopwords count for English
only. It needs enough words and a clear share of hits; otherwise the language counts as unknown and
the caller uses the union of all lists.
"""

from __future__ import annotations

import array
import contextlib
import functools
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import justext
import msgpack

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
MAX_DETECT_WORDS = 400

_LANG_ATTR = re.compile(
    r"""<html\b[^>]*?\s(?:xml:)?lang\s*=\s*["']?\s*([A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*)""", re.IGNORECASE)
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
    return frozenset(_word_index())  # every word of every list, without loading the lists


def stoplist_for(language: str | None) -> str | None:
    """The stoplist name for a language name, ISO code or language tag (``"de-AT"``, ``"English"``,
    a Content-Language value like ``"en, fr"``); None when jusText has no list for it."""
    if not language:
        return None
    first = language.split(",")[0].strip()
    if not first:
        return None
    by_name = _names_by_lower_case()
    normalised = first.replace("-", "_").lower()
    if normalised in by_name:
        return by_name[normalised]
    tag = first.replace("_", "-").lower()
    if tag in _CODES:
        return _CODES[tag]
    return _CODES.get(tag.split("-")[0])


@functools.cache
def _names_by_lower_case() -> dict[str, str]:
    return {name.lower(): name for name in stoplist_names()}


def declared_language(html: str) -> str | None:
    """The language the page declares (``<html lang>``, else a Content-Language meta), unparsed."""
    head = html[:_DECLARATION_WINDOW]
    match = _LANG_ATTR.search(head) or _CONTENT_LANGUAGE.search(head)
    return match.group(1) if match else None


# Bump when the layout of the cached index changes.
INDEX_FORMAT = 1


CACHE_DIR_ENV = "NEARDUP_CACHE_DIR"


def cache_dir() -> Path:
    """Where neardup keeps files it can rebuild: ``$NEARDUP_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/neardup``, else ``~/.cache/neardup`` (streams/settings.py checks the variable)."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "neardup"


def index_cache_path() -> Path:
    """The file the word index is cached in, named by jusText's version (whose lists it holds)."""
    version = getattr(justext, "__version__", "unknown")
    return cache_dir() / f"stoplist-index-justext-{version}-v{INDEX_FORMAT}.msgpack"


@functools.cache
def _word_index() -> dict[str, tuple[str, ...]]:
    """Which stoplists hold each word (for detection: English stopwords count for English only):
    from the disk cache, else built and saved there."""
    path = index_cache_path()
    index = _load_index(path)
    if index is None:
        index = build_word_index()
        _save_index(path, index)
    return index


def build_word_index() -> dict[str, tuple[str, ...]]:
    """The word index of `_word_index`, built from the stoplists."""
    english = stoplist("English")
    index: dict[str, tuple[str, ...]] = {}
    holders_of = index.get
    for name in stoplist_names():
        words = stoplist(name) if name == "English" else stoplist(name) - english
        holder = (name,)
        index.update({word: holders_of(word, ()) + holder for word in words})
    return index


def _load_index(path: Path) -> dict[str, tuple[str, ...]] | None:
    """The index saved at `path`, or None when there is none or it is unreadable, damaged, or for
    other stoplists."""
    try:
        saved = msgpack.unpackb(path.read_bytes())
        names = stoplist_names()
        if (saved["format"], saved["byteorder"], tuple(saved["names"])) != (
                INDEX_FORMAT, sys.byteorder, names):
            return None
        holder_sets = [tuple(names[i] for i in indices) for indices in saved["holders"]]
        ids = array.array("I")
        ids.frombytes(saved["ids"])
        return dict(zip(saved["words"].split("\n"), map(holder_sets.__getitem__, ids), strict=True))
    except Exception:  # a missing, truncated or foreign file: anything but a valid index is a miss
        return None


def _save_index(path: Path, index: dict[str, tuple[str, ...]]) -> None:
    """Save `index` at `path` atomically (a whole file or none; concurrent writers write the same
    bytes). Best effort: a read-only or full disk only costs the next process a rebuild."""
    names = stoplist_names()
    position = {name: i for i, name in enumerate(names)}
    set_ids: dict[tuple[str, ...], int] = {}
    ids = array.array("I", [set_ids.setdefault(holders, len(set_ids)) for holders in index.values()])
    data = msgpack.packb({
        "format": INDEX_FORMAT,
        "byteorder": sys.byteorder,  # of the ids
        "names": list(names),
        "holders": [[position[name] for name in holders] for holders in set_ids],
        "words": "\n".join(index),  # stopwords are lines of the stoplist files: no newlines
        "ids": ids.tobytes(),
    })
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def stoplist_hits(words: Iterable[str]) -> dict[str, int]:
    """How many of `words` (any case) each stoplist holds, English stopwords counting for English
    only; only stoplists with hits appear."""
    return lower_stoplist_hits(" ".join(words).lower().split())


def lower_stoplist_hits(words: Iterable[str]) -> dict[str, int]:
    """`stoplist_hits` for lower-cased words."""
    # Count each distinct set of holders once, then spread the counts: a page's words fall into few
    # such sets (every English stopword into one), so this touches far fewer items than counting
    # every holder of every word.
    hits: dict[str, int] = {}
    for names, count in Counter(filter(None, map(_word_index().get, words))).items():
        for name in names:
            hits[name] = hits.get(name, 0) + count
    return hits


def detect_stoplist(words: list[str]) -> str | None:
    """The stoplist with the most hits on `words` (at most `MAX_DETECT_WORDS` of them), or None when
    there are too few words or hits to tell."""
    sample = words[:MAX_DETECT_WORDS]
    return best_stoplist(stoplist_hits(sample), len(sample))


def best_stoplist(hits: dict[str, int], words: int) -> str | None:
    """The stoplist with the most `hits` among `words` words (ties go to the first name in
    alphabetical order), or None below `MIN_DETECT_WORDS` words or `MIN_HIT_SHARE` of them."""
    if words < MIN_DETECT_WORDS or not hits:
        return None
    best = max(sorted(hits), key=hits.__getitem__)
    return best if hits[best] >= MIN_HIT_SHARE * words else None
