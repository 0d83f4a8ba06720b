"""SHA-256 digests: of the raw body (byte-identical mirrors) and of the normalised main text
(the same content in another template)."""

from __future__ import annotations

import hashlib

from neardup_core.features import normalise_text


def body_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def text_sha256(main_text: str) -> str:
    """Digest of the main text after the same normalisation the features use."""
    return hashlib.sha256(normalise_text(main_text).encode("utf-8")).hexdigest()
