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
   link text counted per text node), noting only each element's tag, parent and attributes
   (`_Elements`): dom paths are joined per paragraph, xpaths and heading tests made when asked, and
   the template check reads the elements' roles from the attributes instead of parsing again;
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

The package, by phase: `whitespace` (jusText's whitespace normalisation), `clean` (the Cleaner's tag
lists and the tree-path cleaning), `paragraphs` (the element and paragraph model), `segment` (the
parser target and `paragraphs_of`) and `classify` (the classifier and `justext`). The names below are
those the rest of the project uses.
"""

from __future__ import annotations

from neardup_core.extract.fastjustext.classify import classify, count_stopwords, justext
from neardup_core.extract.fastjustext.paragraphs import FastParagraph, Paragraphs, longest_words
from neardup_core.extract.fastjustext.segment import paragraphs_of
from neardup_core.extract.fastjustext.whitespace import normalize_whitespace

__all__ = [
    "FastParagraph",
    "Paragraphs",
    "classify",
    "count_stopwords",
    "justext",
    "longest_words",
    "normalize_whitespace",
    "paragraphs_of",
]
