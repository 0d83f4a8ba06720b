"""Recognising an extraction that kept only template text, and what the page really holds instead.

jusText judges paragraphs one by one, so it can drop a page's content and keep a block every page of
the site shares: a BBC article of one-sentence paragraphs (all "near-good", none long enough to
anchor them) loses to the footer's browser notice; a photo-blog post with no prose keeps the
sidebar's app widget; a section index page keeps the footer. Two different pages of one site then
have the same main text and become exact duplicates at any k. This module looks at one page only
(no cross-page state, so scan and stream agree), in three steps, cheapest first:

1. **Gate.** Did jusText keep a small share of the visible text (under `MAX_KEPT_SHARE` of the
   characters of all paragraphs)? A page whose kept text is most of what it shows is not suspect, and
   nothing more is computed (most pages stop here).
2. **Dropped prose block.** Group the prose-like paragraphs (jusText's context-free class good or
   near-good: long enough, enough stopwords, few links) by the element that contains them. When the
   largest group (the page's text-dense block) holds at least `MIN_BLOCK_CHARS` characters, more than
   jusText kept in all, and jusText kept almost none of it (under `MAX_KEPT_IN_BLOCK`), what jusText
   kept lies outside the page's content: the main text becomes that block's paragraphs.
3. **Kept text in template or outside content elements.** Otherwise each kept paragraph takes the
   role of its nearest element that declares one (`template_role`), read from the tags and attributes
   the fast segmenter noted while it parsed (`_SegmentRoles`; stock jusText's paragraphs are located
   in the page's cleaned tree, parsed once more, `_TreeRoles`): template (``aside``, ``nav``,
   ``footer``, or a class or id word such as sidebar, widget, footer, nav, menu, comment, related),
   content (``article``, ``main``, or article, content, main, story, entry, post), or none. When
   at least `MIN_TEMPLATE_SHARE` of the kept characters are template, or lie outside content
   elements while the page has content elements with at least `MIN_OWN_WORDS` words, jusText kept
   template. The page is then decided on its content elements' text when it has enough of it, else
   on its own visible text (the paragraphs outside template elements with jusText's link density or
   less) when that has at least `MIN_OWN_WORDS` words, else it holds nothing but template and is
   skipped with that reason.

The outcome is a `TemplateFinding`: the reason (a skipped page's decision carries it as its `reason`),
the replacement paragraphs, or none for a skip.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal

from justext.core import MAX_LINK_DENSITY_DEFAULT
from lxml import etree

from neardup_core.extract.fastjustext.clean import clean, parse_root

MAX_KEPT_SHARE = 0.3
"""The gate: only pages whose kept characters are under this share of all paragraph characters are
examined further."""
MIN_BLOCK_CHARS = 400
"""A dropped prose block must hold this many characters of prose to replace what jusText kept."""
MAX_KEPT_IN_BLOCK = 0.1
"""... and jusText must have kept under this share of it."""
MIN_TEMPLATE_SHARE = 0.9
"""The share of the kept characters inside template elements that makes the kept text template."""
MIN_OWN_WORDS = 20
"""The words the page's own visible text (outside template elements) needs to be decided on; fewer,
and the page is skipped."""
_PROSE = frozenset({"good", "neargood"})

TEMPLATE_TAGS = frozenset({"aside", "nav", "footer"})
_TEMPLATE_WORDS = (
    "sidebar", "widget", "foot", "nav", "menu", "aside", "comment", "related", "share",
    "social", "banner", "breadcrumb", "promo", "sponsor", "disclaimer", "copyright", "subscribe",
    "newsletter", "login", "signin", "cookie", "sitemap", "toolbar", "rail", "masthead", "trackback",
    "blogroll", "tagcloud", "sharing", "recent", "popular",
)
CONTENT_TAGS = frozenset({"article", "main"})
_CONTENT_WORDS = ("article", "content", "main", "story", "entry")
_CONTENT_NAMES = frozenset({"post"})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")

Action = Literal["block", "content", "own-text", "skip"]


@dataclass(frozen=True, slots=True)
class TemplateFinding:
    """jusText's kept text judged template: why (`reason`), what the page is decided on instead
    (`paragraphs`, empty when it is skipped) and how (`action`: the dropped prose ``"block"``, the
    declared ``"content"`` elements, the page's ``"own-text"`` outside template elements, or
    ``"skip"``); `kept` is what jusText had kept."""

    action: Action
    reason: str
    paragraphs: tuple[str, ...]
    kept: tuple[str, ...]


def template_role(el: Any) -> bool | None:
    """What element `el` says of the text inside it: True for a template element (its tag is
    ``aside``, ``nav`` or ``footer``, or a word of its class or id starts with a template word such as
    ``sidebar``, ``widget``, ``footer``, ``nav``, ``menu``, ``comment``), False for a content element
    (its tag is ``article`` or ``main``, or a word of its class or id starts with ``article``,
    ``content``, ``main``, ``story``, ``entry`` or is ``post``), None when it says neither. Both in one
    element (``post-footer``, ``widget-content``) is template. Class and id words are split at
    non-letters and at camel case (``articleBody``: article, body)."""
    tag = el.tag
    if not isinstance(tag, str):
        return None
    return declared_role(tag, el.attrib)


def declared_role(tag: str, attributes: Mapping[str, str]) -> bool | None:
    """`template_role` of an element with this tag and these attributes."""
    if tag in TEMPLATE_TAGS:
        return True
    if tag in CONTENT_TAGS:
        return False
    if not attributes:
        return None
    names = f"{attributes.get('class') or ''} {attributes.get('id') or ''}"
    if not names.strip():
        return None
    words = [w.lower() for w in _WORD.findall(names)]
    if any(w.startswith(_TEMPLATE_WORDS) for w in words):
        return True
    if any(w.startswith(_CONTENT_WORDS) or w in _CONTENT_NAMES for w in words):
        return False
    return None


def text_role(el: Any) -> bool | None:
    """What the text of element `el` is: the role (`template_role`) of the nearest of it and its
    ancestors that has one; None when none has. A blog's posts inside a ``widget`` are content when
    the post's own element says ``post``; a sidebar inside the ``main`` wrapper is template."""
    while el is not None:
        role = template_role(el)
        if role is not None:
            return role
        el = el.getparent()
    return None


class _SegmentRoles:
    """`text_role` of each fast paragraph's element, from the tags, parents and attributes the fast
    segmenter noted while it parsed the page (`fastjustext.paragraphs._Elements`): the elements of
    jusText's cleaned tree and, above its root, those of the document (`outer`), so no second parse.
    Remembered per element (a page's paragraphs share most of their ancestors)."""

    def __init__(self, elements: Any) -> None:
        self._tags: list[str] = elements.tags
        self._parents: list[int] = elements.parents
        self._attributes: list[Mapping[str, str]] = elements.attributes
        self._outer: list[tuple[str, Mapping[str, str]]] = elements.outer
        self._roles: dict[int, bool | None] = {}

    def of(self, paragraph: Any) -> bool | None:
        """The role of the paragraph's element; None for a paragraph of no element (the root's text)."""
        node: int = paragraph._node
        if node < 0:
            return None
        roles = self._roles
        path = []
        while True:
            if node in roles:
                role = roles[node]
                break
            path.append(node)
            role = declared_role(self._tags[node], self._attributes[node])
            if role is not None:
                break
            node = self._parents[node]
            if node < 0:  # above the root
                role = self._outer_role()
                break
        for seen in path:
            roles[seen] = role
        return role

    def _outer_role(self) -> bool | None:
        for tag, attributes in self._outer:
            role = declared_role(tag, attributes)
            if role is not None:
                return role
        return None


class _TreeRoles:
    """`text_role` of the element at each (stock jusText) paragraph's xpath in jusText's cleaned tree,
    remembered per element and per xpath (a page's paragraphs share most of their ancestors)."""

    def __init__(self, root: Any) -> None:
        self._root = root  # jusText's root: the element `lxml.html.fromstring` returns, not always <html>
        self._at: dict[str, Any] = {}
        self._roles: dict[Any, bool | None] = {}

    def of(self, paragraph: Any) -> bool | None:
        el = self._element(str(paragraph.xpath))
        return None if el is None else self._role(el)

    def _element(self, xpath: str) -> Any:
        """The element an xpath of ``/tag[order]`` steps names (its steps resolved once each)."""
        if xpath in self._at:
            return self._at[xpath]
        head, _, step = xpath.rpartition("/")
        tag, _, order = step.rpartition("[") if step.endswith("]") else (step, "", "")  # a tag may hold "["
        el = None
        if not head:
            el = self._root if tag == self._root.tag else None
        else:
            parent = self._element(head)
            if parent is not None and tag:
                index = int(order.rstrip("]")) - 1 if order else 0
                el = next(islice(parent.iterchildren(tag), index, None), None) if index >= 0 else None
        self._at[xpath] = el
        return el

    def _role(self, el: Any) -> bool | None:
        roles = self._roles
        path = []
        role: bool | None = None
        while el is not None:
            if el in roles:
                role = roles[el]
                break
            path.append(el)
            role = template_role(el)
            if role is not None:
                break
            el = el.getparent()
        for seen in path:
            roles[seen] = role
        return role


def _container(paragraph: Any) -> int | str:
    """The element containing a paragraph's element: its index for the fast engine's paragraphs, else
    its xpath (stock jusText's paragraphs)."""
    elements = getattr(paragraph, "_elements", None)
    if elements is not None:
        node: int = paragraph._node
        return elements.parents[node] if node >= 0 else -1
    return str(paragraph.xpath).rsplit("/", 1)[0]


def find_template(html: str, paragraphs: Sequence[Any]) -> TemplateFinding | None:
    """What to decide the page on when jusText's kept paragraphs (class ``"good"`` among the
    classified `paragraphs` of `html`) are template rather than content; None when they are not."""
    total = 0
    kept_chars = 0
    for p in paragraphs:
        n = len(p.text)
        total += n
        if p.class_type == "good":
            kept_chars += n
    if not kept_chars or kept_chars >= MAX_KEPT_SHARE * total:
        return None
    kept = tuple(p.text for p in paragraphs if p.class_type == "good")
    found = _dropped_block(paragraphs, kept_chars, kept)
    if found is not None:
        return found
    return _template_elements(html, paragraphs, kept_chars, kept)


def _dropped_block(paragraphs: Sequence[Any], kept_chars: int, kept: tuple[str, ...]) -> TemplateFinding | None:
    """The page's largest prose block, when jusText kept almost none of it and it outweighs what was kept."""
    prose: dict[int | str, int] = {}
    kept_in: dict[int | str, int] = {}
    containers = []
    for p in paragraphs:
        where = _container(p)
        containers.append(where)
        if p.cf_class in _PROSE:
            prose[where] = prose.get(where, 0) + len(p.text)
            if p.class_type == "good":
                kept_in[where] = kept_in.get(where, 0) + len(p.text)
    if not prose:
        return None
    block = max(prose, key=prose.__getitem__)
    size = prose[block]
    if size < MIN_BLOCK_CHARS or size <= kept_chars or kept_in.get(block, 0) >= MAX_KEPT_IN_BLOCK * size:
        return None
    texts = tuple(p.text for p, where in zip(paragraphs, containers, strict=True)
                  if where == block and p.cf_class != "bad")
    reason = (f"extraction kept only text outside the page's prose block ({kept_chars} characters kept, "
              f"a block of {size} characters of prose dropped): decided on that block")
    return TemplateFinding("block", reason, texts, kept)


def element_roles(html: str, paragraphs: Sequence[Any]) -> _SegmentRoles | _TreeRoles | None:
    """The roles of the elements of `paragraphs` (of `html`): those the fast segmenter noted, or for
    stock jusText's paragraphs those of the page parsed and cleaned again; None without paragraphs or
    when the page cannot be parsed again."""
    if not paragraphs:
        return None
    elements = getattr(paragraphs[0], "_elements", None)
    if elements is not None:
        return _SegmentRoles(elements)
    try:
        root = parse_root(html)
    except (etree.LxmlError, ValueError):
        return None
    clean(root)
    return _TreeRoles(root)


def _template_elements(html: str, paragraphs: Sequence[Any], kept_chars: int,
                       kept: tuple[str, ...]) -> TemplateFinding | None:
    """Kept text in template elements, or outside the elements that declare the page's content: the
    page's declared content instead, or its own visible text, or a skip."""
    roles = element_roles(html, paragraphs)
    if roles is None:
        return None
    kept_roles = [(len(p.text), roles.of(p)) for p in paragraphs if p.class_type == "good"]
    template_chars = sum(n for n, r in kept_roles if r is True)
    outside = sum(n for n, r in kept_roles if r is not False)
    if outside < MIN_TEMPLATE_SHARE * kept_chars:
        return None  # most of the kept text is in the page's content elements
    texts = [(p.text, roles.of(p), p.links_density() <= MAX_LINK_DENSITY_DEFAULT)
             for p in paragraphs if p.text]
    content = tuple(t for t, r, _ in texts if r is False)
    content_words = _words(content)
    if template_chars >= MIN_TEMPLATE_SHARE * kept_chars:
        what = (f"extraction kept only template text ({template_chars / kept_chars:.0%} of {kept_chars} "
                f"characters in sidebar, navigation or footer elements)")
    elif content_words >= MIN_OWN_WORDS:
        what = (f"extraction kept only text outside the page's content elements ({outside / kept_chars:.0%} "
                f"of {kept_chars} characters)")
    else:
        return None
    if content_words >= MIN_OWN_WORDS:
        return TemplateFinding("content", f"{what}: decided on the page's content elements ({content_words} words)",
                               content, kept)
    own = tuple(t for t, r, few_links in texts if r is not True and few_links)
    words = _words(own)
    if words >= MIN_OWN_WORDS:
        return TemplateFinding("own-text", f"{what}: decided on the page's own visible text ({words} words)",
                               own, kept)
    return TemplateFinding("skip", f"{what}, and the page shows only {words} words of its own", (), kept)


def _words(texts: Sequence[str]) -> int:
    return sum(len(t.split()) for t in texts)
