"""Content-Encoding: from the body a server sent to the payload it encodes, with a cap on the size.

gzip (and x-gzip, several members too), deflate (zlib-wrapped as the standard says, or raw as some
servers send it), br when the `brotli` package is installed, and identity; several codings are
undone last first. Inflating stops as soon as the output passes `max_bytes`, so a small bomb costs
at most that much memory. A stream that ends early keeps what it inflated to (as browsers show a
truncated page); one that does not inflate at all raises `ContentError`.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

_GZIP_MAGIC = b"\x1f\x8b"


class ContentError(ValueError):
    """A content-encoded body that does not decode, or that inflates past the cap."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def content_coding(headers: Mapping[str, str]) -> str | None:
    """The Content-Encoding header's value (any case of the name), or None."""
    return next((v for k, v in headers.items() if k.lower() == "content-encoding"), None)


def decode_content(body: bytes, coding: str | None, max_bytes: int) -> bytes:
    """`body` with the codings of a Content-Encoding value undone; raises `ContentError`."""
    for name in reversed([c.strip().lower() for c in (coding or "").split(",")]):
        if name in ("", "identity"):
            continue
        if name in ("gzip", "x-gzip"):
            body = _inflate(body, 16 + zlib.MAX_WBITS, name, max_bytes)
        elif name == "deflate":
            body = _deflate(body, max_bytes)
        elif name == "br":
            body = _brotli(body, max_bytes)
        else:
            raise ContentError(f"unsupported Content-Encoding {name!r}")
    return body


def _over(name: str, max_bytes: int) -> ContentError:
    return ContentError(f"{name} body inflates past the cap of {max_bytes} bytes (NEARDUP_MAX_BODY_BYTES)")


def _inflate(body: bytes, wbits: int, name: str, max_bytes: int) -> bytes:
    out = bytearray()
    data, first = body, True
    while data:
        inflater = zlib.decompressobj(wbits)
        try:
            while data and not inflater.eof:
                out += inflater.decompress(data, max_bytes + 1 - len(out))
                if len(out) > max_bytes:
                    raise _over(name, max_bytes)
                data = inflater.unconsumed_tail
        except zlib.error as exc:
            if first:
                raise ContentError(f"{name} body does not inflate: {exc}") from None
            break  # a damaged gzip member after good ones: the good ones stand
        first = False
        data = inflater.unused_data if wbits > zlib.MAX_WBITS else b""
        if not data.startswith(_GZIP_MAGIC):
            break
    return bytes(out)


def _deflate(body: bytes, max_bytes: int) -> bytes:
    try:
        return _inflate(body, zlib.MAX_WBITS, "deflate", max_bytes)
    except ContentError as exc:
        if "cap" in exc.reason:
            raise
        return _inflate(body, -zlib.MAX_WBITS, "deflate", max_bytes)


def _brotli(body: bytes, max_bytes: int) -> bytes:
    try:
        import brotli
    except ImportError:
        raise ContentError("Content-Encoding br needs the brotli package, which is not installed") from None
    inflater = brotli.Decompressor()
    out = bytearray()
    data = body
    try:
        while not inflater.is_finished():
            out += inflater.process(data, output_buffer_limit=max_bytes + 1 - len(out))
            data = b""
            if len(out) > max_bytes:
                raise _over("br", max_bytes)
            if inflater.can_accept_more_data():
                break
    except brotli.error as exc:
        raise ContentError(f"br body does not decode: {exc}") from None
    return bytes(out)
