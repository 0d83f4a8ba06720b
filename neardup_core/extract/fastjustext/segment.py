"""Segment: the lxml parser target that cleans and makes jusText's paragraphs while libxml2 parses,
with no tree (`_paragraph_target`), one reused per thread (`_reusable`); the root
`lxml.html.fromstring` would choose (`_rerooted`); the tree path for the shapes it merges or reorders
(`segment`, `_replay`); and `paragraphs_of`, which picks between the two.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from justext.core import PARAGRAPH_TAGS, decode_html
from lxml import etree
from lxml.html import defs

from neardup_core.extract.fastjustext.clean import (
    _FULL_HTML,
    KILL_TAGS,
    REMOVE_TAGS,
    clean,
    declared_bytes,
    parse_root,
)
from neardup_core.extract.fastjustext.paragraphs import FastParagraph, Paragraphs, _Elements
from neardup_core.extract.fastjustext.whitespace import _normalized_length

_AFTER_ROOT = 1 << 62  # a skip depth that never returns to zero
# libxml2 builds no element deeper than this (without its "huge" option) and stops parsing there.
MAX_DEPTH = 256
# What a tag means to the cleaner and the paragraph maker, in one lookup (cleaner kinds last).
# A noscript element is inline to jusText; the kind only notes that the page shows one.
_INLINE, _BLOCK, _BR, _ANCHOR, _KILLED, _REMOVED, _LINK, _IMAGE, _NOSCRIPT = range(9)
_TAG_KINDS: dict[str, int] = {
    **dict.fromkeys(PARAGRAPH_TAGS, _BLOCK), **dict.fromkeys(KILL_TAGS, _KILLED),
    **dict.fromkeys(REMOVE_TAGS, _REMOVED), "br": _BR, "a": _ANCHOR, "link": _LINK, "image": _IMAGE,
    "noscript": _NOSCRIPT,
}


@dataclass(frozen=True, slots=True)
class _Target:
    """The lxml parser-target interface (`start`, `end`, `data`, `pi`, `close`) of `_paragraph_target`,
    plus `tail` for the text after the root element, `facts` and `reset` (see `_paragraph_target`)."""

    start: Callable[[str, Mapping[str, str]], None]
    end: Callable[[str], None]
    data: Callable[[str], None]
    pi: Callable[..., None]
    close: Callable[[], Paragraphs]
    tail: Callable[[str], None]
    facts: dict[str, int]
    reset: Callable[[_Shape | None], None]
    comment: Callable[[str], None] | None = None


@dataclass(slots=True)
class _Shape:
    """What `lxml.html.fromstring` looks at to choose the root of a document that does not start with
    ``<html`` or ``<!doctype``, noted while parsing."""

    heads: int = 0
    bodies: int = 0
    others: int = 0  # other children of the html element
    body_children: int = 0  # child nodes of the body: elements, comments and processing instructions
    first_child: str | None = None  # the tag of the body's first child node; "" for a comment or PI
    body_text: bool = False  # non-blank text directly in the body
    outside_text: bool = False  # non-blank text in html but outside its children
    has_block: bool = False  # an element of `lxml.html.defs.block_tags` in the body
    has_paragraph_tag: bool = False  # an element of jusText's paragraph tags in the body


def _paragraph_target(kinds: Mapping[str, int] = _TAG_KINDS, shape: _Shape | None = None) -> _Target:
    """A parser target that cleans while parsing and makes jusText's paragraphs, with no tree.

    Cleaning: killed elements are skipped with their content, removed ones are passed over with their
    content kept, and the text between two visible events is joined into one text node: the events
    the cleaned tree would give. Elements after the root element closes become siblings of the root
    in libxml2's tree, which lxml's root (and so jusText) never sees, and libxml2's tree builder stops
    at the first element deeper than `MAX_DEPTH`; what follows either is ignored here too (as if
    skipped). `facts["elements"]` counts root elements: zero for a document without elements.

    Segmentation follows `justext.core.ParagraphMaker`: block tags and ``<br><br>`` end a paragraph,
    text inside ``<a>`` counts as link text (its normalised length, per text node), blank text nodes
    are skipped, and a paragraph without text is dropped (stock jusText drops it because
    `Paragraph.__len__` makes it falsy). `close()` returns the paragraphs.

    With a `shape`, the target also notes there what `lxml.html.fromstring` needs to choose the root
    (see `_rerooted`). `reset(shape)` readies the target for another document, so that a parser
    holding it can be reused (see `_reusable`).

    The handlers are closures over local state rather than methods: they run once per element and
    text node, and attribute access would cost more than the work itself.
    """
    kind_of = kinds.get
    noting = shape is not None
    facts = {"elements": 0}
    # The state of the document being parsed: set by `reset`.
    paragraphs = Paragraphs()
    chunks: list[str] = []
    pending = ""  # the text since the last visible event
    elements = _Elements()
    add_tag = elements.tags.append
    add_parent = elements.parents.append
    add_attributes = elements.attributes.append
    parent_of = elements.parents.__getitem__
    count = current = links = tags = depth = skip = path = 0
    has_text = in_link = after_br = False
    top = ""

    def reset(new_shape: _Shape | None) -> None:
        nonlocal paragraphs, chunks, pending, elements, add_tag, add_parent, add_attributes, parent_of, count
        nonlocal current
        nonlocal links, tags, depth, skip, path, has_text, in_link, after_br, top, shape
        paragraphs = Paragraphs()
        chunks = []
        pending = ""
        elements = _Elements()
        add_tag = elements.tags.append
        add_parent = elements.parents.append
        add_attributes = elements.attributes.append
        parent_of = elements.parents.__getitem__
        count = 0  # elements so far
        current = -1  # the innermost open element
        links = tags = depth = skip = 0
        path = -1  # the element of the current paragraph
        has_text = in_link = after_br = False
        top = ""  # with a shape: the tag of the current child of the root
        shape = new_shape
        facts["elements"] = 0

    reset(shape)

    def note_start(tag: str) -> None:
        nonlocal top
        assert shape is not None
        level = depth + skip + 1  # the depth of this element in libxml2's tree, the root's is 1
        if skip >= _AFTER_ROOT or level > MAX_DEPTH:
            return
        if level == 2:
            top = tag
            if tag == "head":
                shape.heads += 1
            elif tag == "body":
                shape.bodies += 1
            else:
                shape.others += 1
        elif level > 2 and top == "body":
            if level == 3:
                note_body_child(tag)
            shape.has_block = shape.has_block or tag in defs.block_tags
            shape.has_paragraph_tag = shape.has_paragraph_tag or tag in PARAGRAPH_TAGS

    def note_body_child(tag: str) -> None:
        assert shape is not None
        shape.body_children += 1
        if shape.first_child is None:
            shape.first_child = tag

    def note_text(text: str) -> None:
        assert shape is not None
        if (depth == 1 or (depth == 2 and top == "body")) and not text.isspace():
            if depth == 1:
                shape.outside_text = True
            else:
                shape.body_text = True

    def comment(text: str) -> None:
        if not skip and depth == 2 and top == "body":
            note_body_child("")

    def flush() -> None:
        nonlocal pending, has_text, links, after_br
        text = pending
        pending = ""
        if text.isspace():
            return
        chunks.append(text)
        has_text = True
        if in_link:
            links += _normalized_length(text)
        after_br = False

    def new_paragraph(new_path: int) -> None:
        nonlocal chunks, links, tags, path, has_text
        if has_text:
            paragraphs.append(FastParagraph(elements, path, chunks, links, tags))
            chunks = []
            has_text = False
        elif chunks:
            chunks = []
        links = tags = 0
        path = new_path

    # `start` and `end` run for every element: they do what `flush` and `new_paragraph` do inline.
    def start(tag: str, attrib: Mapping[str, str]) -> None:
        nonlocal depth, skip, links, tags, path, after_br, in_link, pending, count, current
        nonlocal chunks, has_text
        if skip:
            skip += 1
            if depth + skip > MAX_DEPTH:
                skip = _AFTER_ROOT
            return
        if depth >= MAX_DEPTH:  # libxml2 stops building the tree here: nothing after is in it
            skip = _AFTER_ROOT
            return
        kind = kind_of(tag, _INLINE)
        if kind >= _KILLED:
            if kind == _KILLED or (kind == _LINK and "stylesheet" in (attrib.get("rel") or "").lower()):
                skip = 1
                return
            if kind == _REMOVED:
                depth += 1
                return
            if kind == _IMAGE:
                tag = "img"
            elif kind == _NOSCRIPT:
                paragraphs.noscript = True
        depth += 1
        if pending:
            if not pending.isspace():  # (most text between tags is indentation) what `flush` does
                chunks.append(pending)
                has_text = True
                if in_link:
                    links += (len(pending) if "  " not in pending and pending.isprintable()
                              else _normalized_length(pending))
                after_br = False
            pending = ""
        if current < 0:
            facts["elements"] += 1
        add_tag(tag)
        add_parent(current)
        add_attributes(attrib)
        node = current = count
        count += 1
        if kind == _BLOCK:
            if has_text:
                paragraphs.append(FastParagraph(elements, path, chunks, links, tags))
                chunks = []
                has_text = False
            elif chunks:
                chunks = []
            links = tags = 0
            path = node
        elif kind == _BR:
            if after_br:
                tags -= 1  # a <br><br> separator is not a tag of either paragraph
                new_paragraph(node)
            else:
                after_br = True
                chunks.append(" ")
                tags += 1
        else:
            after_br = False
            if kind == _ANCHOR:
                in_link = True
            tags += 1

    def end(tag: str) -> None:
        nonlocal depth, skip, links, tags, path, in_link, pending, current, chunks, has_text, after_br
        if skip:
            skip -= 1
            return
        depth -= 1
        kind = kind_of(tag, _INLINE)
        if kind != _REMOVED:
            if pending:
                if not pending.isspace():  # what `flush` does
                    chunks.append(pending)
                    has_text = True
                    if in_link:
                        links += (len(pending) if "  " not in pending and pending.isprintable()
                                  else _normalized_length(pending))
                    after_br = False
                pending = ""
            current = parent_of(current)
            if kind == _BLOCK:
                if has_text:
                    paragraphs.append(FastParagraph(elements, path, chunks, links, tags))
                    chunks = []
                    has_text = False
                elif chunks:
                    chunks = []
                links = tags = 0
                path = current
            elif kind == _ANCHOR:
                in_link = False
        if not depth:
            skip = _AFTER_ROOT

    def data(text: str) -> None:
        nonlocal pending
        if depth and not skip:
            pending = pending + text if pending else text

    def pi(target: str, text: str | None = None) -> None:
        if shape is not None:
            comment("")
        if depth and not skip and pending:
            flush()

    def tail(text: str) -> None:
        nonlocal pending
        pending += text

    def close() -> Paragraphs:
        if pending:
            flush()
        new_paragraph(-1)
        return paragraphs

    if not noting:
        return _Target(start=start, end=end, data=data, pi=pi, close=close, tail=tail, facts=facts,
                       reset=reset)

    def start_noting(tag: str, attrib: Mapping[str, str]) -> None:
        note_start(tag)
        start(tag, attrib)

    def data_noting(text: str) -> None:
        data(text)
        if depth and not skip:
            note_text(text)

    return _Target(start=start_noting, end=end, data=data_noting, pi=pi, close=close, tail=tail,
                   facts=facts, reset=reset, comment=comment)


def _replay(el: etree._Element, target: _Target) -> None:
    """Feed the tree at `el` to `target` as parser events, the way `lxml.sax.saxify` walks it."""
    tag = el.tag
    if tag.__class__ is str:
        target.start(tag, el.attrib)  # kept for the template check (stylesheet links are gone by now)
        if el.text:
            target.data(el.text)
        for child in el:
            _replay(child, target)
            if child.tail:
                target.data(child.tail)
        target.end(tag)
    elif tag is etree.PI:
        target.pi(el.target, el.text)


def segment(root: etree._Element) -> Paragraphs:
    """The paragraphs `justext.core.ParagraphMaker` makes from the cleaned tree at `root`; the
    elements above `root` in its document are their elements' `outer`."""
    target = _paragraph_target()
    _replay(root, target)
    if root.tail:
        target.tail(root.tail)
    paragraphs = target.close()
    if paragraphs:
        paragraphs[0]._elements.outer = [(str(el.tag), el.attrib) for el in root.iterancestors()]
    return paragraphs


def _rerooted(paragraphs: Paragraphs, shape: _Shape,
              kinds: Mapping[str, int]) -> Paragraphs | None:
    """The paragraphs of the element `lxml.html.fromstring` chooses, from those of the whole document
    of `shape`; None for the shapes it merges or reorders (several heads or bodies, text or elements
    outside the body), which take the tree path.

    The choice: the document when it has a head or no body; the body's only child when the body holds
    nothing else (no text, comment or other element; a removed element becomes a div); else the body,
    renamed div if it holds a block-level element and span if not. Paragraphs then lose the path above
    the new root, and a span root, not being a block, starts no paragraph: the one the body started is
    the document's first (empty path, one more tag).
    """
    if shape.heads > 1 or shape.bodies > 1:
        return None
    if shape.heads == 1 or shape.bodies == 0:
        return paragraphs
    if shape.outside_text or shape.others:
        return None
    if shape.body_children == 1 and not shape.body_text:
        if shape.first_child == "":
            return None
        rename = "div" if kinds.get(shape.first_child or "") == _REMOVED else None
    else:
        rename = "div" if shape.has_block else "span"
    if rename == "span" and shape.has_paragraph_tag:
        return None
    if not paragraphs:
        return paragraphs
    elements = paragraphs[0]._elements
    new_root_depth = 3 if rename is None else 2  # the body's child, or the body: counted from html
    depths = [-1 if p._node < 0 else elements.depth(p._node) for p in paragraphs]
    deepest = max(range(len(paragraphs)), key=depths.__getitem__)
    if depths[deepest] >= new_root_depth:
        # Every element at that depth is the same one: the body, or its only child.
        root = elements.ancestor(paragraphs[deepest]._node, depths[deepest] - new_root_depth)
        elements.reroot(root, rename)
    for paragraph, depth in zip(paragraphs, depths, strict=True):
        if depth < new_root_depth or (rename == "span" and depth == new_root_depth):
            if rename == "span" and depth == new_root_depth:
                paragraph.tags_count += 1
            paragraph._node = -1
            paragraph.dom_path = ""
        else:
            paragraph.dom_path = elements.dom(paragraph._node)
        paragraph._heading = None
    return paragraphs


_PARSERS = threading.local()


def _reusable(extra_kill: tuple[str, ...], noting: bool) -> tuple[etree.HTMLParser, _Target]:
    """This thread's parser and target for `extra_kill` (and noting the document's shape or not).
    A new parser costs as much as parsing a small page (libxml2 sets up a context on first use);
    one parser serves one parse at a time, hence one per thread."""
    cache: dict[tuple[tuple[str, ...], bool], tuple[etree.HTMLParser, _Target]] | None = getattr(
        _PARSERS, "cache", None)
    if cache is None or len(cache) > 8:  # few variants are ever used
        cache = _PARSERS.cache = {}
    found = cache.get((extra_kill, noting))
    if found is None:
        target = _paragraph_target(_kinds(extra_kill), _Shape() if noting else None)
        found = cache[(extra_kill, noting)] = (etree.HTMLParser(target=target), target)
    return found


@functools.lru_cache(maxsize=8)
def _kinds(extra_kill: tuple[str, ...]) -> Mapping[str, int]:
    """`_TAG_KINDS` with the `extra_kill` elements dropped with their content."""
    return {**_TAG_KINDS, **dict.fromkeys(extra_kill, _KILLED)} if extra_kill else _TAG_KINDS


def _streamed(html: str, extra_kill: tuple[str, ...] = (), raw: bytes | None = None) -> Paragraphs | None:
    """The paragraphs of `html` (decoded from `raw`, if given) made while parsing, or None when
    `html` needs the tree path."""
    full = bool(_FULL_HTML.match(html))
    shape = None if full else _Shape()
    parser, target = _reusable(extra_kill, not full)
    target.reset(shape)
    try:
        try:
            paragraphs: Paragraphs = etree.fromstring(html, parser)
        except ValueError:  # a string with an XML encoding declaration: see `parse_root`
            shape = None if full else _Shape()
            target.reset(shape)
            data, encoding = declared_bytes(html, raw)
            paragraphs = etree.fromstring(data, etree.HTMLParser(target=target, encoding=encoding))
        if not target.facts["elements"]:
            raise etree.ParserError("Document is empty")
    finally:
        target.reset(None)  # let go of this document
    return paragraphs if shape is None else _rerooted(paragraphs, shape, _kinds(extra_kill))


def paragraphs_of(html: str | bytes, *, extra_kill: tuple[str, ...] = ()) -> Paragraphs:
    """jusText's paragraphs of `html`, not yet classified; `extra_kill` names more elements to drop
    with their content (the fallback drops ``noscript``). Bytes are decoded as stock jusText decodes
    them (`justext.core.decode_html`: a meta charset, else UTF-8, else UTF-8 with replacements; a
    text with an XML encoding declaration is parsed from the bytes, see `clean.declared_bytes`).

    Raises `lxml.etree.ParserError` for a document without elements.
    """
    raw = html if isinstance(html, bytes) else None
    text = str(decode_html(html)) if isinstance(html, bytes) else html
    paragraphs = _streamed(text, extra_kill, raw)
    if paragraphs is None:
        root = parse_root(text, raw=raw)
        if root.tag.__class__ is not str:  # a lone comment chosen as the root: no content
            return Paragraphs()
        clean(root, extra_kill)
        paragraphs = segment(root)
    return paragraphs
