"""Clean: what jusText's preprocessor (`lxml_html_clean.Cleaner` with jusText's options) removes,
done on a tree (`parse_root`, `clean`) for the few documents the streaming parse hands back.

The streaming parse (`segment._paragraph_target`) skips the same elements as it goes, by the tag
lists defined here; `_FULL_HTML` is `lxml.html.fromstring`'s test for a whole document.
"""

from __future__ import annotations

import re

from lxml import etree
from lxml.html import defs

# What jusText's preprocessor (lxml_html_clean.Cleaner with jusText's options) deletes with its
# content (`kill`), and what it unwraps, keeping the content (`remove`).
KILL_TAGS = ("head", "script", "style", "applet", "button", "input", "select", "textarea", "base")
REMOVE_TAGS = ("form", "iframe", "embed", "layer", "object", "param")
_KILL = frozenset(KILL_TAGS)
_REMOVE = frozenset(REMOVE_TAGS)
_FULL_HTML = re.compile(r"^\s*<(?:html|!doctype)", re.IGNORECASE)


def declared_bytes(html: str, raw: bytes | None) -> tuple[bytes, str | None]:
    """What stock jusText parses when lxml refuses `html` (a string with an XML encoding declaration):
    the bytes it was decoded from, left to libxml2's own detection, else its UTF-8 bytes, said to be
    UTF-8."""
    return (raw, None) if raw is not None else (html.encode("utf-8", "replace"), "utf-8")


def parse_root(html: str, *, raw: bytes | None = None) -> etree._Element:
    """The element `lxml.html.fromstring` returns for `html` (the document, or the single fragment
    element, or a div/span around several), built from plain lxml elements.

    A string with an XML encoding declaration cannot be parsed as text; like jusText, it is parsed
    from `declared_bytes`. Raises `etree.ParserError` for a document without elements.
    """
    try:
        doc = etree.fromstring(html, etree.HTMLParser())
    except ValueError:
        data, encoding = declared_bytes(html, raw)
        doc = etree.fromstring(data, etree.HTMLParser(encoding=encoding))
    if doc is None:
        raise etree.ParserError("Document is empty")
    if _FULL_HTML.match(html):
        return doc
    bodies = doc.findall("body")
    body = bodies[0] if bodies else None
    if body is not None:
        for other in bodies[1:]:
            if other.text:
                if len(body):
                    body[-1].tail = (body[-1].tail or "") + other.text
                else:
                    body.text = (body.text or "") + other.text
            body.extend(other)
            _drop_tree(other)
    heads = doc.findall("head")
    if heads:
        for other in heads[1:]:
            heads[0].extend(other)
            _drop_tree(other)
        return doc
    if body is None:
        return doc
    if (len(body) == 1 and (not body.text or not body.text.strip())
            and (not body[-1].tail or not body[-1].tail.strip())):
        return body[0]
    body.tag = "div" if any(el.tag in defs.block_tags for el in body.iter(etree.Element)) else "span"
    return body


def _drop_tree(el: etree._Element) -> None:
    """`lxml.html.HtmlElement.drop_tree` for a plain element: remove it, keep its tail text."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        previous = el.getprevious()
        if previous is None:
            parent.text = (parent.text or "") + el.tail
        else:
            previous.tail = (previous.tail or "") + el.tail
    parent.remove(el)


def clean(root: etree._Element, extra_kill: tuple[str, ...] = ()) -> None:
    """Remove in place what jusText's preprocessor removes, in the Cleaner's order (and the elements
    named in `extra_kill`, with their content)."""
    if root.tag in _KILL or root.tag in extra_kill:
        if root.tag != "html":
            root.tag = "div"
        root.clear()
        return
    if root.tag in _REMOVE:
        root.tag = "div"
        root.attrib.clear()
    for el in root.iter("image"):
        el.tag = "img"
    stylesheets = [el for el in root.iter("link") if "stylesheet" in el.get("rel", "").lower()]
    for el in stylesheets:
        _drop_tree(el)
    etree.strip_elements(root, *KILL_TAGS, *extra_kill, etree.Comment, with_tail=False)
    etree.strip_tags(root, *REMOVE_TAGS)
