"""Where the shared real-web corpus is, and the marks of the tests that need it."""

from __future__ import annotations

import pytest

from neardup_core.testing.corpus import corpus_dir, has_corpus

CORPUS = corpus_dir()

NEEDS_CORPUS = [
    pytest.mark.corpus,
    pytest.mark.skipif(not has_corpus(CORPUS),
                       reason=f"the real-web corpus is absent: no MANIFEST.jsonl at {CORPUS} "
                              "(set NEARDUP_CORPUS to the corpus directory: docs/corpus.md)"),
]
