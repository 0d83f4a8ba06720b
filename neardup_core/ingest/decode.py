"""From a fetched body's bytes to text: which charset, from where, and when to give up.

The charset comes from the first source that names one Python knows and that decodes the body
cleanly, in this order:

1. ``event``: the `encoding` field of the fetch event (the crawler already knew);
2. ``header``: the charset parameter of the Content-Type (the argument, else the headers);
3. ``meta``: ``<meta charset>``, ``<meta http-equiv="Content-Type">`` or an XML declaration in the
   first few KB;
4. ``bom``: a UTF-8/16/32 byte-order mark;
5. ``detected``: UTF-8 if the body is valid UTF-8, else charset-normalizer's best guess (Windows-1252
   when it guesses any Latin single-byte code page), else Windows-1252.

Unknown or bogus names fall through to the next source, and so does a declared charset the bytes
do not decode in (a page labelled UTF-8 that is really Windows-1252 is common); if nothing decodes
cleanly, the first declared charset is used with replacement characters. Labels follow browsers
where Python's codec of the same name is stricter or narrower (ISO-8859-1 and ASCII mean
Windows-1252, GB2312 means GB18030, ...). A decoding that looks like binary (many control or
replacement characters, as images or compressed data give) counts as a failure too; a body with no
sensible decoding at all raises `DecodeError`.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from charset_normalizer import from_bytes

Source = Literal["event", "header", "meta", "bom", "detected"]

# How many leading bytes may hold a <meta> charset (the HTML standard prescans 1024; real pages
# often put it after long scripts or comments).
META_WINDOW = 8192
# charset-normalizer guesses from this many leading bytes (it is slow on large bodies).
DETECT_WINDOW = 65536
# A decoded text with a larger share of control or replacement characters is not text.
MAX_JUNK_SHARE = 0.05
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# Labels whose browser meaning is a superset of Python's codec of the same name (WHATWG Encoding).
_SUPERSETS = {
    "iso-8859-1": "cp1252", "iso8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252",
    "l1": "cp1252", "us-ascii": "cp1252", "ascii": "cp1252", "iso-8859-9": "cp1254",
    "iso8859-9": "cp1254", "latin5": "cp1254", "gb2312": "gb18030", "gbk": "gb18030",
    "x-gbk": "gb18030", "tis-620": "cp874", "iso-8859-11": "cp874", "euc-kr": "cp949",
    "ks-c-5601-1987": "cp949", "shift_jis": "cp932", "shift-jis": "cp932", "sjis": "cp932",
    "x-sjis": "cp932", "big5": "big5hkscs", "x-user-defined": "cp1252", "utf8": "utf-8",
    "unicode-1-1-utf-8": "utf-8",
}
# Latin single-byte code pages an unlabelled page is read in as Windows-1252 (as browsers do).
_LATIN_SINGLE_BYTE = frozenset({
    "cp1250", "cp1257", "cp437", "cp775", "cp850", "cp852", "cp857", "cp858", "cp860", "cp861", "cp863",
    "cp865", "iso8859-1", "iso8859-2", "iso8859-3", "iso8859-4", "iso8859-10", "iso8859-13", "iso8859-14",
    "iso8859-15", "iso8859-16", "mac-roman", "mac-iceland", "mac-latin2", "mac-croatian", "mac-romanian",
    "ascii",
})
# Codecs that are not page encodings, or that browsers refuse for safety (UTF-7 hides markup).
_REFUSED = frozenset({"utf-7", "utf_7", "rot-13", "rot_13", "rot13"})
# When the browser superset fails on a byte it leaves undefined, the narrower codec still decodes.
_NARROWER = {"cp1254": "iso8859-9", "cp874": "iso8859-11"}

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?\s*([^"'\s;,]+)""", re.IGNORECASE)
_META_CHARSET = re.compile(
    rb"""<meta\b[^>]*?\bcharset\s*=\s*["']?\s*([A-Za-z0-9_.:+-]+)""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml\b[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9_.:+-]+)""", re.IGNORECASE)
_ASCII_JUNK = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F])  # the junk characters below 0x80
_C1_UTF8 = re.compile(rb"\xc2[\x80-\x9f]")  # U+0080..U+009F in UTF-8


class DecodeError(ValueError):
    """The body is not text in any charset we could find or guess."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded body: the text, the Python codec that decoded it, and where the charset came from."""

    text: str
    charset: str
    source: Source


def is_html_content_type(ct: str | None) -> bool:
    """True for text/html and application/xhtml+xml (parameters ignored); a missing or blank
    Content-Type counts as HTML, since crawlers often drop it."""
    if ct is None or not ct.strip():
        return True
    return ct.split(";", 1)[0].strip().lower() in _HTML_TYPES


def charset_of_content_type(ct: str | None) -> str | None:
    """The charset parameter of a Content-Type value, or None."""
    if not ct:
        return None
    match = _CHARSET_PARAM.search(ct)
    return match.group(1) if match else None


def resolve_charset(label: str | None) -> str | None:
    """The Python codec name for a charset label as browsers read it, or None when Python has no
    text codec by that name (or it is refused)."""
    if not label:
        return None
    name = label.strip().strip("\"'").lower()
    if not name or name in _REFUSED:
        return None
    name = _SUPERSETS.get(name.replace("_", "-"), name)
    try:
        info = codecs.lookup(name)
    except LookupError:
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _REFUSED:
        return None
    return info.name


def decode_body(body: bytes, *, encoding: str | None = None, content_type: str | None = None,
                headers: Mapping[str, str] | None = None) -> Decoded:
    """Decode a fetched body (see the module docstring for the order of sources).

    Raises `DecodeError` for a body that decodes to no sensible text.
    """
    declared = list(_declared(body, encoding, content_type, headers))
    if not body:
        source, charset = declared[0] if declared else ("detected", "utf-8")
        return Decoded("", charset, source)
    tried: list[str] = []
    for source, charset in declared:
        text = _decode_strict(body, charset)
        if text is None:
            tried.append(f"{charset} ({source}): invalid bytes")
            continue
        decoded = Decoded(text, charset, source)
        junk = _junk_share(text, body if charset == "utf-8" else None)
        if junk <= MAX_JUNK_SHARE:
            return decoded
        tried.append(f"{charset} ({source}): {junk:.0%} control or replacement characters")
    for detected in _guesses(body):
        junk = _junk_share(detected.text, body if detected.charset == "utf-8" else None)
        if junk <= MAX_JUNK_SHARE:
            return detected
        tried.append(f"{detected.charset} (detected): {junk:.0%} control or replacement characters")
    if declared:
        source, charset = declared[0]
        text = _strip_bom(body.decode(charset, "replace"))
        if _junk_share(text) <= MAX_JUNK_SHARE:
            return Decoded(text, charset, source)
    if body.startswith(_GZIP_MAGIC):  # a saved .html.gz, a crawler storing the bytes as sent
        raise DecodeError(f"binary body, gzip-compressed ({len(body)} bytes): decompress it or name its "
                          "Content-Encoding in `headers`")
    raise DecodeError(f"undecodable or binary body ({len(body)} bytes, starting {body[:12]!r}): "
                      + "; ".join(tried))


_GZIP_MAGIC = b"\x1f\x8b"
"""How a gzip stream starts: a body that no charset decodes and starts so is a compressed page."""


def _declared(body: bytes, encoding: str | None, content_type: str | None,
              headers: Mapping[str, str] | None) -> Iterator[tuple[Source, str]]:
    """The usable charsets the event, the headers, the page and its BOM declare, in order."""
    seen: set[str] = set()
    header_ct = content_type
    if header_ct is None and headers:
        header_ct = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    candidates: list[tuple[Source, str | None]] = [
        ("event", encoding),
        ("header", charset_of_content_type(header_ct)),
        ("meta", _meta_charset(body)),
        ("bom", _bom_charset(body)),
    ]
    for source, label in candidates:
        charset = resolve_charset(label)
        if charset is not None and charset not in seen:
            seen.add(charset)
            yield source, charset


def _meta_charset(body: bytes) -> str | None:
    head = body[:META_WINDOW]
    match = _XML_ENCODING.match(head) or _META_CHARSET.search(head)
    if match is None:
        return None
    label = match.group(1).decode("ascii")
    # A page that declares UTF-16 in ASCII bytes is not UTF-16 (browsers read it as UTF-8).
    return "utf-8" if label.lower().startswith(("utf-16", "utf16", "utf-32", "utf32")) else label


def _bom_charset(body: bytes) -> str | None:
    for bom, charset in _BOMS:
        if body.startswith(bom):
            return charset
    return None


def _strip_bom(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


def _c1_controls(exc: UnicodeError) -> tuple[str, int]:
    """Windows-1252 as the WHATWG Encoding standard has it: the five bytes Python's cp1252 leaves
    undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) are the C1 controls of the same number."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return "".join(map(chr, exc.object[exc.start : exc.end])), exc.end


codecs.register_error("neardup-c1-controls", _c1_controls)


def _decode_strict(body: bytes, charset: str) -> str | None:
    """The body in `charset` (or its narrower fallback), or None when the bytes are not valid in it."""
    if charset == "cp1252":
        return _strip_bom(body.decode("cp1252", "neardup-c1-controls"))
    for name in (charset, _NARROWER.get(charset)):
        if name is None:
            continue
        try:
            return _strip_bom(body.decode(name))
        except (UnicodeDecodeError, LookupError):
            continue
    return None


def _guesses(body: bytes) -> Iterator[Decoded]:
    """Decodings of an unlabelled body, best first: UTF-8 if the body is valid UTF-8, charset-normalizer's
    guess from its first bytes, then Windows-1252 (browsers' default for unlabelled Western pages)."""
    try:
        yield Decoded(_strip_bom(body.decode("utf-8")), "utf-8", "detected")
        return
    except UnicodeDecodeError:
        pass
    best = from_bytes(body[:DETECT_WINDOW]).best()
    charset = resolve_charset(best.encoding) if best is not None else None
    # Among Latin single-byte code pages the statistics cannot tell an English page in Windows-1252 from
    # one in Windows-1250 or DOS 852 (smart quotes come out as Central European letters); browsers
    # default to Windows-1252, and so do we.
    if charset in _LATIN_SINGLE_BYTE:
        charset = "cp1252"
    # Markup in UTF-16 or UTF-32 is full of NUL bytes; a guess of either for a body without any is noise.
    if charset is not None and (b"\x00" in body or not charset.startswith(("utf-16", "utf-32"))):
        text = _decode_strict(body, charset)
        yield Decoded(text if text is not None else _strip_bom(body.decode(charset, "replace")), charset,
                      "detected")
    if charset != "cp1252":
        yield Decoded(_strip_bom(body.decode("cp1252", "neardup-c1-controls")), "cp1252", "detected")


def _junk_share(text: str, utf8: bytes | None = None) -> float:
    """The share of control and replacement characters in `text` (C0 but tab, newline, form feed and
    carriage return; DEL; C1; U+FFFD): high for binary bodies. `utf8` is the body `text` was decoded
    from when that was strict UTF-8 (it is then the text's UTF-8 form, a BOM apart: not encoded again).

    Counted on the UTF-8 bytes, at C level: a junk character below 0x80 is one byte of its own (no byte of
    a longer sequence is below 0x80), a C1 character is ``\\xc2`` and one of 0x80-0x9F, and each of those
    sequences is one character; a regex over the text cost twice as much on the pages that are not ASCII
    (most of the corpus's). U+FFFD is counted on the text (one code point, where a search of its three
    UTF-8 bytes cost three times as much)."""
    if not text:
        return 0.0
    if utf8 is None or utf8.startswith(codecs.BOM_UTF8):
        utf8 = text.encode("utf-8", "surrogatepass")  # lone surrogates (from surrogateescape) are not junk
    data = utf8
    junk = len(data) - len(data.translate(None, _ASCII_JUNK))
    if not text.isascii():
        junk += text.count("\ufffd")
        if b"\xc2" in data:
            junk += len(_C1_UTF8.findall(data))
    return junk / len(text)
