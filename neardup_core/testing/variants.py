"""Near-duplicate variants of a real HTML page, the copies a crawler meets on the web.

Each variant is a function ``html -> html`` that changes what a second fetch, a mirror or a
syndication partner would change, and nothing else:

- `changed_numbers`: dates, times and counters in the text are different numbers, month and day
  names are different months and days (a recrawl: "updated 3 hours ago", "1,204 comments");
- `rotated_ad`: the ad slots carry a different ad, or an ad is inserted mid-article;
- `appended_comments`: a few short reader comments at the end of the body;
- `edited_words`: a few words of the article replaced or inserted (a correction, a light rewrite);
- `print_version`: a minimal page with the title and the main-content paragraphs only;
- `in_template`: the main paragraphs inside another site's page, in place of its main container;
- `mirror`: the page byte for byte.

The main content is what `neardup_core.extract.main_text` keeps, located in the tree by its text. Every variant
is deterministic: the same page and seed give the same HTML, so a labelled set built from them is
reproducible.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import lxml.html
from lxml import etree

from neardup_core.extract.main_text import extract

_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_NOT_TEXT = frozenset({"script", "style", "noscript", "template", "textarea", "head", "title"})
_BLOCKS = frozenset({"p", "div", "li", "td", "th", "dd", "dt", "blockquote", "pre", "section", "article",
                     "h1", "h2", "h3", "h4", "h5", "h6", "font", "span", "center", "main"})
_NUMBER = re.compile(r"(?<![\w.,])\d+(?=(?:st|nd|rd|th|am|pm)?\b)")
_MONTHS = ("January February March April May June July August September October November "
           "December").split()
_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_CALENDAR = re.compile(r"\b(" + "|".join(_MONTHS + _DAYS) + r")\b", re.IGNORECASE)
_AD_SLOT = re.compile(r"(?:^|[\s_-])(?:ad|ads|advert\w*|sponsor\w*|dfp|adsense|google_ads?\w*)"
                      r"(?:$|[\s_\d-])", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{4,}")

ADS = (
    "Refinance today: fixed rates for homeowners in your area. Compare offers in two minutes.",
    "Summer sale: up to 40 percent off running shoes and outdoor gear. Free returns.",
    "Learn a language in three weeks with our award-winning app. Start your free trial.",
    "Book your winter break now: city hotels from 59 a night, breakfast included.",
    "Switch and save on your energy bill. Get a quote from trusted local suppliers.",
    "The credit card with no annual fee and 2 percent cash back on every purchase.",
)
COMMENTERS = ("jdm1974", "Sarah K.", "overthehill", "Marco", "Anonymous", "lindaq", "Pete from Leeds",
              "readerx", "Tomasz", "a_concerned_parent")
COMMENTS = (
    "Great article, thanks for sharing.",
    "I have been saying this for years and nobody listens.",
    "Interesting read, but I think the author misses the bigger picture here.",
    "Does anyone know where the original report can be found?",
    "This is exactly why I stopped reading the news.",
    "Well written and balanced. More of this please.",
    "Not sure I agree with the conclusion, but good points overall.",
    "Shared this with my colleagues, very useful.",
    "First!",
    "Typo in the third paragraph, otherwise spot on.",
)
EDIT_WORDS = ("reportedly", "notably", "also", "still", "largely", "recently", "indeed", "further",
              "officially", "quietly", "certainly", "apparently", "meanwhile", "significant", "several")

Variant = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class MainContent:
    """A page's title, its main-content paragraphs (as `extract` keeps them), the stoplist language
    they were judged with, and whether they are the full-text fallback (jusText found no prose)."""

    title: str
    paragraphs: list[str]
    language: str | None = None
    fallback: bool = False

    @property
    def words(self) -> int:
        return sum(len(p.split()) for p in self.paragraphs)


def parse(html: str) -> etree._Element:
    """The document root; an XML declaration is dropped (lxml refuses one in a str)."""
    return lxml.html.document_fromstring(_XML_DECLARATION.sub("", html, count=1) or "<html></html>")


def serialise(root: etree._Element) -> str:
    doctype = root.getroottree().docinfo.doctype
    body = lxml.html.tostring(root, encoding="unicode", method="html")
    return f"{doctype}\n{body}" if doctype else body


def squash(text: str) -> str:
    """Whitespace-normalised text, for matching extracted paragraphs to elements."""
    return " ".join(text.split())


def main_content(html: str) -> MainContent:
    """The title and the main paragraphs of a page."""
    ex = extract(html)
    paragraphs = [squash(p) for p in ex.paragraphs]
    return MainContent(_title_of(parse(html)), [p for p in paragraphs if p], ex.language, ex.fallback)


def _title_of(root: etree._Element) -> str:
    """The headline: the `<title>`, or the `<h1>` it contains (without the " | Site" suffix)."""
    titles = [squash(el.text_content()) for el in root.iter("title")]
    title = next((t for t in titles if t), "")
    headlines = [squash(el.text_content()) for el in _body(root).iter("h1")]
    return next((h for h in headlines if len(h) > 10 and (not title or h in title)), title)


def _body(root: etree._Element) -> etree._Element:
    body = root.find(".//body")
    if body is None:
        body = etree.SubElement(root, "body")
    return body


def _text_slots(el: etree._Element) -> Iterator[tuple[etree._Element, str]]:
    """(element, "text" | "tail") for every visible text node under `el`, in document order."""
    for node in el.iter():
        if not isinstance(node.tag, str):  # comments, processing instructions: only their tail shows
            if node is not el:
                yield node, "tail"
            continue
        if node.tag not in _NOT_TEXT:
            yield node, "text"
        if node is not el:
            yield node, "tail"


def _get(node: etree._Element, slot: str) -> str:
    return (node.text if slot == "text" else node.tail) or ""


def _set(node: etree._Element, slot: str, value: str) -> None:
    if slot == "text":
        node.text = value
    else:
        node.tail = value


def main_blocks(root: etree._Element, paragraphs: list[str]) -> list[etree._Element]:
    """The outermost block elements whose whole text is one of the main paragraphs."""
    wanted = set(paragraphs)
    found: list[etree._Element] = []
    taken: set[etree._Element] = set()
    for el in _body(root).iter(*_BLOCKS):
        if squash(el.text_content()) in wanted and not any(a in taken for a in el.iterancestors()):
            found.append(el)
            taken.add(el)
    return found


def main_text_slots(root: etree._Element, paragraphs: list[str],
                    min_words: int = 4) -> list[tuple[etree._Element, str]]:
    """Text nodes of at least `min_words` words that belong to a main paragraph."""
    joined = "\n".join(paragraphs)
    out = []
    for node, slot in _text_slots(_body(root)):
        text = squash(_get(node, slot))
        if len(text.split()) >= min_words and text in joined:
            out.append((node, slot))
    return out


# --- the variants ----------------------------------------------------------------------------------


def mirror(html: str) -> str:
    """The page itself: a byte-identical copy on another URL."""
    return html


def changed_numbers(html: str, seed: int = 0) -> str:
    """Every number in the visible text another number of as many digits, every month and weekday
    name another one: a recrawl with new dates, times and counters."""
    rng = random.Random(f"numbers:{seed}")
    root = parse(html)

    def number(m: re.Match[str]) -> str:
        digits = m.group(0)
        new = digits
        while new == digits:
            first = rng.choice("123456789") if len(digits) > 1 or digits != "0" else rng.choice("0123456789")
            new = first + "".join(rng.choice("0123456789") for _ in digits[1:])
        return new

    def calendar(m: re.Match[str]) -> str:
        word = m.group(0)
        names = _MONTHS if word.capitalize() in _MONTHS else _DAYS
        new = rng.choice([n for n in names if n.lower() != word.lower()])
        return new.upper() if word.isupper() else new if word[0].isupper() else new.lower()

    for node, slot in _text_slots(_body(root)):
        text = _get(node, slot)
        if text.strip():
            _set(node, slot, _CALENDAR.sub(calendar, _NUMBER.sub(number, text)))
    return serialise(root)


def _ad_element(rng: random.Random) -> etree._Element:
    ad = etree.Element("div", {"class": "ad-slot sponsored"})
    label = etree.SubElement(ad, "span", {"class": "ad-label"})
    label.text = "Advertisement"
    link = etree.SubElement(ad, "a", {"href": f"https://ads.example/click?c={rng.randrange(10**6)}"})
    link.text = rng.choice(ADS)
    return ad


def rotated_ad(html: str, seed: int = 0) -> str:
    """Ad slots (elements whose id or class names an ad) hold another ad; a page without one gets an
    ad inserted after a main paragraph in the middle of the article."""
    rng = random.Random(f"ad:{seed}")
    root = parse(html)
    body = _body(root)
    main = main_content(html).paragraphs
    in_main = {el for node, _ in main_text_slots(root, main) for el in (node, *node.iterancestors())}
    slots = {el for el in body.iter() if isinstance(el.tag, str) and el.tag not in _NOT_TEXT
             and el not in in_main and _AD_SLOT.search(f"{el.get('id', '')} {el.get('class', '')}")}
    outermost = [el for el in body.iter() if el in slots and not any(a in slots for a in el.iterancestors())]
    if outermost:
        for el in outermost:
            tail = el.tail
            for child in list(el):
                el.remove(child)
            el.text = None
            el.append(_ad_element(rng))
            el.tail = tail
        return serialise(root)
    blocks = main_blocks(root, main)
    anchor = blocks[len(blocks) // 2] if blocks else None
    ad = _ad_element(rng)
    if anchor is None or anchor.getparent() is None:
        body.insert(0, ad)
    else:
        anchor.addnext(ad)
        ad.tail, anchor.tail = anchor.tail, None
    return serialise(root)


def appended_comments(html: str, seed: int = 0, comments: int | None = None) -> str:
    """A comments section with a few (3 to 4) short reader comments at the end of the body."""
    rng = random.Random(f"comments:{seed}")
    root = parse(html)
    n = comments if comments is not None else rng.randint(3, 4)
    section = etree.SubElement(_body(root), "div", {"id": "comments", "class": "comments"})
    heading = etree.SubElement(section, "h3")
    heading.text = f"{n} Comments"
    for i in range(n):
        item = etree.SubElement(section, "div", {"class": "comment", "id": f"comment-{i + 1}"})
        meta = etree.SubElement(item, "p", {"class": "comment-meta"})
        who = etree.SubElement(meta, "a", {"href": f"/users/{rng.randrange(10**5)}"})
        who.text = rng.choice(COMMENTERS)
        who.tail = f" · {rng.choice(_MONTHS)} {rng.randint(1, 28)}, {rng.randint(2005, 2025)}"
        text = etree.SubElement(item, "p", {"class": "comment-body"})
        text.text = rng.choice(COMMENTS)
        reply = etree.SubElement(item, "a", {"href": f"#reply-{i + 1}", "class": "reply"})
        reply.text = "Reply"
    return serialise(root)


def edited_words(html: str, seed: int = 0, edits: int | None = None) -> str:
    """A few (3 to 5) words of the main paragraphs replaced by, or preceded by, another word."""
    rng = random.Random(f"edits:{seed}")
    root = parse(html)
    n = edits if edits is not None else rng.randint(3, 5)
    slots = main_text_slots(root, main_content(html).paragraphs)
    if not slots:
        return serialise(root)
    for _ in range(n):
        node, slot = rng.choice(slots)
        text = _get(node, slot)
        words = list(_WORD.finditer(text))
        if not words:
            continue
        m = rng.choice(words)
        new = rng.choice([w for w in EDIT_WORDS if w != m.group(0).lower()])
        replacement = new if rng.random() < 0.5 else f"{new} {m.group(0)}"
        _set(node, slot, text[:m.start()] + replacement + text[m.end():])
    return serialise(root)


def _print_page(content: MainContent) -> str:
    root = parse("<html><head><meta charset='utf-8'><title></title></head><body></body></html>")
    root.find(".//title").text = content.title
    body = _body(root)
    if content.title:
        etree.SubElement(body, "h1").text = content.title
    for para in content.paragraphs:
        etree.SubElement(body, "p").text = para
    return "<!DOCTYPE html>\n" + lxml.html.tostring(root, encoding="unicode", method="html")


def print_version(html: str) -> str:
    """A print view: a minimal page with only the title and the main-content paragraphs."""
    return _print_page(main_content(html))


def main_container(root: etree._Element, paragraphs: list[str]) -> tuple[etree._Element | None, float]:
    """The element holding most of the main paragraph text as direct children, and the share of all
    main text it holds (the template's article slot)."""
    total = sum(len(p) for p in paragraphs)
    credit: dict[etree._Element, int] = {}
    for block in main_blocks(root, paragraphs):
        parent = block.getparent()
        if parent is not None:
            credit[parent] = credit.get(parent, 0) + len(squash(block.text_content()))
    if not credit or not total:
        return None, 0.0
    best = max(credit, key=lambda el: credit[el])
    held = sum(len(p) for p in paragraphs if p in squash(best.text_content()))
    return best, held / total


def in_template(html: str, template_html: str) -> str:
    """The page's title and main paragraphs in another site's page: its main container's content and
    its title replaced (syndication, a scraper, a site redesign)."""
    content = main_content(html)
    root = parse(template_html)
    container, _ = main_container(root, main_content(template_html).paragraphs)
    if container is None:
        return _print_page(content)
    tail = container.tail
    for child in list(container):
        container.remove(child)
    container.text = None
    for para in content.paragraphs:
        etree.SubElement(container, "p").text = para
    container.tail = tail
    title = root.find(".//title")
    if title is not None:
        title.text = content.title
    if content.title:  # the template's own headline (outside the container) names the new article
        headline = next(_body(root).iter("h1"), None)
        if headline is None:
            headline = etree.Element("h1")
            container.insert(0, headline)
        for child in list(headline):
            headline.remove(child)
        headline.text = content.title
    return serialise(root)


def variants_of(html: str, seed: int, template_html: str | None = None) -> dict[str, str]:
    """Every variant kind of a page (`template` only when a template page is given)."""
    out = {
        "numbers": changed_numbers(html, seed),
        "ad": rotated_ad(html, seed),
        "comments": appended_comments(html, seed),
        "edits": edited_words(html, seed),
        "print": print_version(html),
        "mirror": mirror(html),
    }
    if template_html is not None:
        out["template"] = in_template(html, template_html)
    return out
