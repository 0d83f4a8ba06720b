"""Where the shared real-web corpus is, and the marks of the tests that need it."""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"

NEEDS_CORPUS = [
    pytest.mark.corpus,
    pytest.mark.skipif(not (CORPUS / "MANIFEST.jsonl").is_file(),
                       reason=f"the real-web corpus is absent: no MANIFEST.jsonl at {CORPUS} "
                              "(../shared/corpus relative to the repository root)"),
]
