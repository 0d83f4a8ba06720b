"""The real-web corpus (`$NEARDUP_CORPUS`, or `shared/corpus` beside the repository; docs/corpus.md): where
it is, its manifest, and its pages as the bytes a crawler fetched or as decoded text.

Tests skip and benchmarks stop with a clear message when it is absent; nothing copies its pages."""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from neardup_core.ingest.decode import decode_body

MANIFEST = "MANIFEST.jsonl"


def corpus_dir() -> Path:
    """`$NEARDUP_CORPUS`, else `shared/corpus` beside the repository this package is checked out in."""
    env = os.environ.get("NEARDUP_CORPUS")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "corpus"


def has_corpus(corpus: Path) -> bool:
    return (corpus / MANIFEST).is_file()


@dataclass(frozen=True, slots=True)
class CorpusPage:
    """One manifest row: the page's path (relative to the corpus folder), its original URL when the
    source recorded one, its site (host without `www.`) and its template group."""

    path: str
    url: str | None
    site: str
    group: str | None

    @property
    def event_url(self) -> str:
        """The URL to publish the page under: its own, or a stable made-up one on its site."""
        return self.url or f"https://{self.site or 'unknown.invalid'}/corpus/{self.path}"


def read_manifest(corpus: Path) -> list[CorpusPage]:
    """The corpus pages in manifest order."""
    with (corpus / MANIFEST).open("rb") as fh:
        rows = [orjson.loads(line) for line in fh if line.strip()]
    return [CorpusPage(r["path"], r.get("url"), r.get("site") or "", r.get("group")) for r in rows]


def page_bytes(corpus: Path, path: str) -> bytes:
    """A page's raw body, as fetched (the corpus stores it gzipped)."""
    return gzip.decompress((corpus / path).read_bytes())


def load_html(corpus: Path, path: str) -> str:
    """A corpus page as text, decoded as a fetch would be."""
    return decode_body(page_bytes(corpus, path)).text


def read_curated(corpus: Path) -> list[dict[str, Any]]:
    """The curated pairs (`PAIRS.jsonl`), each with an `id` (its line number, from 1)."""
    with (corpus / "PAIRS.jsonl").open("rb") as fh:
        rows = [orjson.loads(line) for line in fh if line.strip()]
    return [{"id": n, **r} for n, r in enumerate(rows, 1)]
