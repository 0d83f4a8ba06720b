"""jusText's whitespace normalisation, without its per-match Python callback: the one rule the
paragraph text (`paragraphs`) and the link-character count (`segment`) both follow."""

from __future__ import annotations

import re

_NEWLINE = re.compile(r"[\n\r]")


def normalize_whitespace(text: str) -> str:
    """`justext.utils.normalize_whitespace` without its per-match Python callback: every run of
    whitespace becomes one newline if it holds a ``\\n`` or ``\\r``, else one space."""
    if not text:
        return text
    lead = text[0].isspace()
    trail = text[-1].isspace()
    core = text.strip()
    if not core:
        return "\n" if "\n" in text or "\r" in text else " "
    if "\n" in core or "\r" in core:
        core = "\n".join(filter(None, (" ".join(part.split()) for part in _NEWLINE.split(core))))
    else:
        core = " ".join(core.split())
    if lead:
        head = text[: len(text) - len(text.lstrip())]
        core = ("\n" if "\n" in head or "\r" in head else " ") + core
    if trail:
        tail = text[len(text.rstrip()) :]
        core += "\n" if "\n" in tail or "\r" in tail else " "
    return core


def _normalized_length(chunk: str) -> int:
    """len(normalize_whitespace(chunk)) for a chunk that is not blank, without building it."""
    if "  " not in chunk and chunk.isprintable():  # only single spaces: already normal
        return len(chunk)
    words = chunk.split()
    return sum(map(len, words)) + len(words) - 1 + chunk[0].isspace() + chunk[-1].isspace()


def _normalize_stripped(text: str) -> str:
    """`normalize_whitespace` for a text without leading or trailing whitespace."""
    # Printable text has no whitespace but the space (all others are Unicode separators or controls).
    if "  " not in text and text.isprintable():
        return text
    if "\n" in text or "\r" in text:
        return "\n".join(filter(None, (" ".join(part.split()) for part in _NEWLINE.split(text))))
    return " ".join(text.split())
