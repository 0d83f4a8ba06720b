"""The fast jusText engine takes bytes as stock jusText does (jusText's own
`test_preprocess_simple_bytes_string` and `..._bytes_xhtml_string_with_declaration` inputs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import justext
import pytest

from neardup_core.extract import fastjustext
from neardup_core.extract.stoplists import stoplist

SIMPLE = (b"<html><head><title>Title</title></head><body><h1>Header</h1>"
          b"<p>pre<span>text</span>post<em>emph</em>popost</p><p>footer <em>like</em> a boss</p>"
          b"  <!-- abcdefgh -->\n</body></html>")
XHTML = (b'<?xml version="1.0" encoding="windows-1250"?><!DOCTYPE html>'
         b'<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="sk" lang="sk"><head><title>Hello World</title>'
         b'<meta http-equiv="imagetoolbar" content="no" />'
         b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1250" />'
         b'</head><body id="index"></body></html>')
ARTICLE = ("<p>Prípad sa týka mesta, ktoré v utorok schválilo nový plán pre park pri rieke, ktorý bol "
           "zatvorený viac ako dva roky, kým inžinieri opravovali múry.</p>" * 3)
XHTML_TEXT = XHTML.replace(b"</body>", ARTICLE.encode("cp1250") + b"</body>")
UTF8_UNLABELLED = ("<html><body><p>Café crème, naïve façade: the words of a page without a charset.</p>"
                   "</body></html>").encode()
NOT_UTF8_UNLABELLED = b"<html><body><p>Caf\xe9 cr\xe8me in Windows-1252, labelled nowhere.</p></body></html>"


def facts(paragraphs: Sequence[Any]) -> list[tuple[object, ...]]:
    return [(p.text, p.class_type, p.dom_path, p.xpath, p.chars_count_in_links, p.tags_count, p.heading)
            for p in paragraphs]


@pytest.mark.parametrize("html", [SIMPLE, XHTML, XHTML_TEXT, UTF8_UNLABELLED, NOT_UTF8_UNLABELLED],
                         ids=["simple", "xhtml-declaration", "xhtml-cp1250-text", "utf8", "replaced"])
def test_bytes_give_stock_jusText_paragraphs(html: bytes) -> None:
    words = stoplist("English")
    assert facts(fastjustext.justext(html, words)) == facts(justext.justext(html, words))


def test_labelled_bytes_and_their_text_give_the_same_paragraphs() -> None:
    page = XHTML_TEXT.replace(b'<?xml version="1.0" encoding="windows-1250"?>', b"")
    words = stoplist("Slovak")
    from_bytes = facts(fastjustext.justext(page, words))
    assert from_bytes == facts(fastjustext.justext(page.decode("cp1250"), words))
    assert len(from_bytes) == 3 and all(str(text).startswith("Prípad") for text, *_ in from_bytes)
