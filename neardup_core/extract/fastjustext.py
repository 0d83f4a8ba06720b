"""jusText, faster: the same paragraphs and the same decisions at several times the speed.

Stock `justext.justext` spends its time outside the classifier: it copies the lxml tree to clean it
with `lxml_html_clean.Cleaner`, replays the tree as SAX events (a namespace map, an attribute object
and a path string per element), builds a `Paragraph` with its dom path and xpath at every block
boundary (most of them empty), and renormalises a paragraph's whitespace with a Python callback
every time its text is read.

Here the page is parsed once with no tree: an lxml parser target (`_paragraph_target`) receives
libxml2's events and does, as they come, what the three stock steps do one after the other:

1. clean: what the Cleaner removes with jusText's options (scripts, styles, comments, the head, form
   controls, stylesheet links: dropped with their content; forms, iframes, objects: unwrapped) is
   skipped, and the text between two events that survive cleaning is joined into one text node, as
   the cleaned tree holds it;
2. segment by `justext.core.ParagraphMaker`'s rules (block tags and ``<br><br>`` end a paragraph,
   link text counted per text node), noting only each element's tag and parent (`_Elements`): dom
   paths are joined per paragraph, xpaths and heading tests made when asked;
3. classify by the rules of jusText's `classify_paragraphs` and `revise_paragraph_classification`
   with their default parameters (`classify`), on `FastParagraph` objects whose text and counts are
   computed once, counting stopwords only where a paragraph's density decides its class.

Each thread reuses one parser and target (`_reusable`): a new lxml parser costs libxml2 a context
set-up worth a small page.

The events are those of libxml2's parser, which also builds the tree stock jusText walks, so the two
agree as long as the tree is the whole stream: the parts where it is not (what follows the root
element or the depth limit, and `lxml.html.fromstring`'s choice of another root for documents that
do not start with ``<html`` or ``<!doctype``) are reproduced in `_paragraph_target` and `_rerooted`.
The few shapes that `fromstring` merges or reorders take the tree path instead: `parse_root`, `clean`
with lxml's C-level `strip_elements` / `strip_tags`, and `segment`.

Checked against stock jusText on every corpus page (every paragraph's text, class, dom path, xpath,
link characters and tag count) and on random markup (tests/unit/test_extract.py);
`bench/bench_extract.py` measures speed and agreement.
"""

from __future__ import annotations

import functools
import operator
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import islice

from justext.core import (
    LENGTH_HIGH_DEFAULT,
    LENGTH_LOW_DEFAULT,
    MAX_HEADING_DISTANCE_DEFAULT,
    MAX_LINK_DENSITY_DEFAULT,
    PARAGRAPH_TAGS,
    STOPWORDS_HIGH_DEFAULT,
    STOPWORDS_LOW_DEFAULT,
    define_stoplist,
)
from justext.paragraph import HEADINGS_PATTERN, Paragraph
from lxml import etree
from lxml.html import defs

# What jusText's preprocessor (lxml_html_clean.Cleaner with jusText's options) deletes with its
# content (`kill`), and what it unwraps, keeping the content (`remove`).
KILL_TAGS = ("head", "script", "style", "applet", "button", "input", "select", "textarea", "base")
REMOVE_TAGS = ("form", "iframe", "embed", "layer", "object", "param")
_KILL = frozenset(KILL_TAGS)
_REMOVE = frozenset(REMOVE_TAGS)
_FULL_HTML = re.compile(r"^\s*<(?:html|!doctype)", re.IGNORECASE)
_NEWLINE = re.compile(r"[\n\r]")
_NO_ATTRIBUTES: dict[str, str] = {}
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


@functools.lru_cache(maxsize=4096)
def _tag_is_heading(tag: str) -> bool:
    return "h" in tag and HEADINGS_PATTERN.search(tag) is not None


class _Elements:
    """The elements one parse met, in document order: each one's tag and parent (an index, -1 for
    none). A paragraph names its element by index. Appending a tag and an int per element is all the
    parser target does; a dom path is joined when a paragraph is made, and an xpath (which needs each
    element's order among its same-tag siblings) only when one is read.
    """

    __slots__ = ("tags", "parents", "_doms", "_xpaths", "_orders", "_headings")

    def __init__(self) -> None:
        self.tags: list[str] = []
        self.parents: list[int] = []
        self._doms: dict[int, str] = {}
        self._xpaths: dict[int, str] = {}
        self._orders: list[int] | None = None
        self._headings: dict[int, bool] = {}

    def dom(self, node: int) -> str:
        """The dom path of element `node`: the tags from the root down, joined by dots."""
        dom = self._doms.get(node)
        if dom is None:
            parent = self.parents[node]
            tag = self.tags[node]
            dom = self._doms[node] = tag if parent < 0 else f"{self.dom(parent)}.{tag}"
        return dom

    def is_heading(self, node: int) -> bool:
        """`Paragraph.is_heading` for a paragraph of element `node`: an ``h<digit>`` tag on its dom
        path. The pattern cannot match across the dots that join the tags, so each element's own tag
        is tested once, and its answer shared with the elements below it."""
        heading = self._headings.get(node)
        if heading is None:
            parent = self.parents[node]
            heading = self._headings[node] = (parent >= 0 and self.is_heading(parent)) or (
                _tag_is_heading(self.tags[node]))
        return heading

    def xpath(self, node: int) -> str:
        """The xpath of element `node`: ``/tag[order]`` steps from the root down."""
        xpath = self._xpaths.get(node)
        if xpath is None:
            if self._orders is None:
                self._orders = self._sibling_orders()
            parent = self.parents[node]
            prefix = "" if parent < 0 else self.xpath(parent)
            xpath = self._xpaths[node] = f"{prefix}/{self.tags[node]}[{self._orders[node]}]"
        return xpath

    def _sibling_orders(self) -> list[int]:
        counts: dict[tuple[int, str], int] = {}
        orders = []
        for key in zip(self.parents, self.tags, strict=True):
            order = counts[key] = counts.get(key, 0) + 1
            orders.append(order)
        return orders

    def reroot(self, root: int, tag: str | None) -> None:
        """Make element `root` a root (renamed `tag`, if given), as `lxml.html.fromstring` does when
        it returns an element of the document."""
        self.parents[root] = -1
        if tag is not None:
            self.tags[root] = tag
        self._doms.clear()
        self._xpaths.clear()
        self._headings.clear()

    def depth(self, node: int) -> int:
        """How many elements lead from the root to `node`, both counted."""
        depth = 0
        while node >= 0:
            depth += 1
            node = self.parents[node]
        return depth

    def ancestor(self, node: int, steps: int) -> int:
        """The element `steps` levels above `node`."""
        for _ in range(steps):
            node = self.parents[node]
        return node


class FastParagraph(Paragraph):
    """A `justext.paragraph.Paragraph` whose text, length and word count are computed once, not on
    every access, and whose lower-cased words (`lower_words`) and stopword count are kept once made.

    `text_nodes` holds the raw text nodes; `text` is their whitespace-normalised concatenation, equal
    to what the stock class computes from its normalised nodes. `xpath` is built on first access.
    """

    # Slots are quicker to set than the base class's instance dict, and they replace its `text`
    # property with a plain value. `is_heading` (and `heading`, which stock classification copies
    # from it) is computed when first read: the classification reads it for few paragraphs.
    __slots__ = ("text", "dom_path", "text_nodes", "chars_count_in_links", "tags_count", "class_type",
                 "cf_class", "_heading", "_elements", "_node", "_length", "_words", "_stopwords",
                 "_lower_words")

    def __init__(self, elements: _Elements, node: int, text_nodes: list[str], chars_in_links: int,
                 tags_count: int) -> None:
        self._elements = elements
        self._node = node
        if node < 0:
            self.dom_path = ""
        else:  # paragraphs of one element share its dom path: skip the call when it is known
            dom = elements._doms.get(node)
            self.dom_path = elements.dom(node) if dom is None else dom
        self._heading: bool | None = None
        self.text_nodes = text_nodes
        self.chars_count_in_links = chars_in_links
        self.tags_count = tags_count
        self.class_type = ""
        raw = text_nodes[0] if len(text_nodes) == 1 else "".join(text_nodes)
        if "  " not in raw and raw.isprintable():  # only single spaces (most paragraphs): no split
            text = raw.strip()
            self._words = text.count(" ") + 1 if text else 0
        elif "\n" in raw or "\r" in raw:
            text = _normalize_stripped(raw.strip())
            self._words = text.count(" ") + text.count("\n") + 1 if text else 0
        else:  # every run of whitespace becomes one space
            words = raw.split()
            text = " ".join(words)
            self._words = len(words)
        self.text = text
        self._length = len(text)
        self._stopwords: tuple[frozenset[str], int] | None = None
        self._lower_words: list[str] | None = None

    @property  # type: ignore[override]
    def is_heading(self) -> bool:
        heading = self._heading
        if heading is None:
            heading = self._heading = self._node >= 0 and self._elements.is_heading(self._node)
        return heading

    @property
    def heading(self) -> bool:
        return self.is_heading

    @heading.setter
    def heading(self, value: bool) -> None:
        self._heading = value

    def lower_words(self) -> list[str]:
        """The words of the text, lower-cased (kept: stoplist detection and classification both
        need them)."""
        words = self._lower_words
        if words is None:
            words = self._lower_words = self.text.lower().split()
        return words

    @property
    def xpath(self) -> str:
        return "/" if self._node < 0 else self._elements.xpath(self._node)

    def __len__(self) -> int:
        return self._length

    @property
    def words_count(self) -> int:
        return self._words

    def stopwords_count(self, stopwords: frozenset[str]) -> int:
        known = self._stopwords
        if known is not None and known[0] is stopwords:
            return known[1]
        # Lower-casing the text then splitting it gives the same words as splitting then lower-casing.
        return sum(map(stopwords.__contains__, self.text.lower().split()))

    def stopwords_density(self, stopwords: frozenset[str]) -> float:
        if not self._words:
            return 0
        known = self._stopwords
        if known is not None and known[0] is stopwords:
            return known[1] / self._words
        return self.stopwords_count(stopwords) / self._words

    def links_density(self) -> float:
        if not self._length:
            return 0
        return self.chars_count_in_links / self._length


def count_stopwords(paragraphs: list[FastParagraph], stopwords: frozenset[str]) -> None:
    """Count the stopwords of all paragraphs in one pass over their joined text (one lower-casing,
    one split, one C-level membership map) and remember the counts for `stopwords`."""
    flags = map(stopwords.__contains__, "\n".join([p.text for p in paragraphs]).lower().split())
    for paragraph in paragraphs:
        paragraph._stopwords = (stopwords, sum(islice(flags, paragraph._words)))


def parse_root(html: str) -> etree._Element:
    """The element `lxml.html.fromstring` returns for `html` (the document, or the single fragment
    element, or a div/span around several), built from plain lxml elements.

    A string with an XML encoding declaration cannot be parsed as text; like jusText, it is parsed
    from its UTF-8 bytes, but told they are UTF-8. Raises `etree.ParserError` for a document without
    elements.
    """
    try:
        doc = etree.fromstring(html, etree.HTMLParser())
    except ValueError:
        doc = etree.fromstring(html.encode("utf-8", "replace"), etree.HTMLParser(encoding="utf-8"))
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


class Paragraphs(list[FastParagraph]):
    """A page's paragraphs, in order. `noscript` tells whether the page shows a noscript element
    (one the cleaner keeps): only then can dropping noscript elements change the paragraphs."""

    noscript = False


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
    parent_of = elements.parents.__getitem__
    count = current = links = tags = depth = skip = path = 0
    has_text = in_link = after_br = False
    top = ""

    def reset(new_shape: _Shape | None) -> None:
        nonlocal paragraphs, chunks, pending, elements, add_tag, add_parent, parent_of, count, current
        nonlocal links, tags, depth, skip, path, has_text, in_link, after_br, top, shape
        paragraphs = Paragraphs()
        chunks = []
        pending = ""
        elements = _Elements()
        add_tag = elements.tags.append
        add_parent = elements.parents.append
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
        target.start(tag, _NO_ATTRIBUTES)  # attributes matter only to stylesheet links, gone by now
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
    """The paragraphs `justext.core.ParagraphMaker` makes from the cleaned tree at `root`."""
    target = _paragraph_target()
    _replay(root, target)
    if root.tail:
        target.tail(root.tail)
    paragraphs = target.close()
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


def _streamed(html: str, extra_kill: tuple[str, ...] = ()) -> Paragraphs | None:
    """The paragraphs of `html` made while parsing, or None when `html` needs the tree path."""
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
            paragraphs = etree.fromstring(html.encode("utf-8", "replace"),
                                          etree.HTMLParser(target=target, encoding="utf-8"))
        if not target.facts["elements"]:
            raise etree.ParserError("Document is empty")
    finally:
        target.reset(None)  # let go of this document
    return paragraphs if shape is None else _rerooted(paragraphs, shape, _kinds(extra_kill))


def paragraphs_of(html: str, *, extra_kill: tuple[str, ...] = ()) -> Paragraphs:
    """jusText's paragraphs of `html`, not yet classified; `extra_kill` names more elements to drop
    with their content (the fallback drops ``noscript``).

    Raises `lxml.etree.ParserError` for a document without elements.
    """
    paragraphs = _streamed(html, extra_kill)
    if paragraphs is None:
        root = parse_root(html)
        if root.tag.__class__ is not str:  # a lone comment chosen as the root: no content
            return Paragraphs()
        clean(root, extra_kill)
        paragraphs = segment(root)
    return paragraphs


def longest_words(paragraphs: list[FastParagraph], limit: int) -> list[str]:
    """The first `limit` lower-cased words of the paragraphs taken longest first (the same order as
    a stable sort of their texts by length, longest first)."""
    words: list[str] = []
    for paragraph in sorted(paragraphs, key=_LENGTH, reverse=True):
        words += paragraph.lower_words()
        if len(words) >= limit:
            del words[limit:]
            break
    return words


_LENGTH = operator.attrgetter("_length")


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


def justext(html: str, stoplist: frozenset[str]) -> list[FastParagraph]:
    """What `justext.justext(html, stoplist)` returns for a text `html`, faster."""
    return classify(paragraphs_of(html), stoplist)

