"""The paragraph and element model: `_Elements` (each element's tag and parent, one parse's worth),
`FastParagraph` (a jusText `Paragraph` whose text and counts are computed once), `Paragraphs` (a
page's list of them) and `longest_words` (the stoplist detector's sample).

What segmentation makes and classification reads; dom paths, xpaths and heading tests are derived
from `_Elements` only when asked.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping

from justext.paragraph import HEADINGS_PATTERN, Paragraph

from neardup_core.extract.fastjustext.whitespace import _normalize_stripped


@functools.lru_cache(maxsize=4096)
def _tag_is_heading(tag: str) -> bool:
    """Whether `tag` is an ``h<digit>`` heading tag (kept per tag: a page has few distinct tags)."""
    return "h" in tag and HEADINGS_PATTERN.search(tag) is not None


class _Elements:
    """The elements one parse met, in document order: each one's tag, parent (an index, -1 for none)
    and attributes (the mapping the parser gave, kept as it is). A paragraph names its element by
    index. Appending a tag, an int and a reference per element is all the parser target does; a dom
    path is joined when a paragraph is made, an xpath (which needs each element's order among its
    same-tag siblings) only when one is read, and the attributes are read only by the template check
    (`neardup_core.extract.template`), which would else parse the page a second time for them.

    `outer` holds the tag and attributes of the elements above the root, nearest first, when the root
    is an element of the document that `lxml.html.fromstring` chose (the body, or its only child): not
    part of jusText's tree, but the template check reads the roles of the root's ancestors in the
    document, as it did when it found the root's element there.
    """

    __slots__ = ("tags", "parents", "attributes", "outer", "_doms", "_xpaths", "_orders", "_headings")

    def __init__(self) -> None:
        self.tags: list[str] = []
        self.parents: list[int] = []
        self.attributes: list[Mapping[str, str]] = []
        self.outer: list[tuple[str, Mapping[str, str]]] = []
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
        """Each element's 1-based order among its parent's children of the same tag (xpath indices)."""
        counts: dict[tuple[int, str], int] = {}
        orders = []
        for key in zip(self.parents, self.tags, strict=True):
            order = counts[key] = counts.get(key, 0) + 1
            orders.append(order)
        return orders

    def reroot(self, root: int, tag: str | None) -> None:
        """Make element `root` a root (renamed `tag`, if given), as `lxml.html.fromstring` does when
        it returns an element of the document; the elements above it become `outer`."""
        above = self.parents[root]
        while above >= 0:
            self.outer.append((self.tags[above], self.attributes[above]))
            above = self.parents[above]
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


class Paragraphs(list[FastParagraph]):
    """A page's paragraphs, in order. `noscript` tells whether the page shows a noscript element
    (one the cleaner keeps): only then can dropping noscript elements change the paragraphs."""

    noscript = False


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
