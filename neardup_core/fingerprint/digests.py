"""SHA-256 digests: of the raw body (byte-identical mirrors) and of the normalised main text
(the same content in another template)."""

from __future__ import annotations

import hashlib

from neardup_core.fingerprint.features import tokens


def body_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def text_sha256(main_text: str) -> str:
    """Digest of the main text after the same normalisation the features use."""
    return tokens_sha256(tokens(main_text))


def tokens_sha256(toks: list[str]) -> str:
    """`text_sha256` of a text given its `features.tokens`."""
    return hashlib.sha256(" ".join(toks).encode("utf-8")).hexdigest()
