"""A labelled pair set built at run time from the real-web corpus (`shared/corpus`).

Positives are (page, variant) pairs: every kind of `neardup_core.testing.variants` applied to a seeded sample
of corpus pages that carry an article. Pages whose main text is shorter than `min_words` words, and
pages where jusText kept nothing (the extraction fell back to the full visible text), are no article
to copy: they are skipped and counted. The template of the `template` variant is another sampled
page of another site in the same language (nobody syndicates a German article into an English
template), whose main container holds at least `MIN_CONTAINER_SHARE` of its main text.

Negatives are the hard false-positive case of a crawler: every pair of different pages of one
template group (one site in one capture period), so the two pages share all their boilerplate and
differ only in the article. Left out are the pairs that are not different articles: those that the
curated `PAIRS.jsonl` calls anything but distinct (duplicate, near-duplicate, partial overlap,
ambiguous), and those the corpus keeps back from PAIRS.jsonl but whose ground-truth texts, or a
reading, show one article. The curated distinct pairs (extraction collisions) stay in.

The rows are what `neardup tune` reads: ``{"a": path, "b": path | {"html": ...}, "duplicate": bool,
"kind": ...}`` with absolute paths.
"""

from __future__ import annotations

import gzip
import hashlib
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import orjson

from neardup_core.ingest.decode import decode_body
from neardup_core.testing.corpus import CorpusPage, load_html, read_curated, read_manifest
from neardup_core.testing.evaluate import PairScore, pair_score
from neardup_core.testing.variants import MainContent, main_container, main_content, parse, variants_of

NEGATIVE = "same-group"
NOT_DISTINCT = frozenset({"duplicate", "near-duplicate", "partial-overlap", "ambiguous"})
SAME_GOLD_JACCARD = 0.5
"""Same-group pairs whose ground-truth main texts share this much (word 5-gram Jaccard) are one article
fetched twice or one story told twice, not different articles: the corpus keeps half of its curated
pairs back, and these are among them."""
SAME_ARTICLE = {
    frozenset(("pages/l3s-gn1/localnewsleader.com__b82e9772.html.gz",
               "pages/l3s-gn1/localnewsleader.com__fc246c87.html.gz")):
        "one AP story (same headline, dateline and text) on two sister sites of one network, the "
        "corpus README's syndicated-copy example; no ground truth for L3S pages",
}
"""Same-group pairs without ground truth that are one article, found by reading them."""
MIN_CONTAINER_SHARE = 0.8
"""A template page must hold this share of its main text in one container, or replacing that container
would leave its own article on the page next to the new one (a merge, not a copy)."""

Fingerprint = tuple[Any, ...]
"""(text digest, SimHash) or (text digest, SimHash, MinHash signature) of a page."""
CURATED_LABELS = {"duplicate": True, "near-duplicate": True, "distinct": False}
"""The curated labels a pair set can score; partial overlaps and ambiguous pairs are neither."""


@dataclass
class LabelledSet:
    """The rows, and how they were made (counts for the report)."""

    rows: list[dict[str, Any]]
    sampled: int = 0
    skipped_short: list[str] = field(default_factory=list)
    skipped_fallback: list[str] = field(default_factory=list)
    template_hosts: int = 0
    excluded_negatives: dict[str, str] = field(default_factory=dict)
    """Same-group pairs left out of the negatives, with the reason."""

    def kinds(self) -> Counter[str]:
        return Counter(r["kind"] for r in self.rows)








def seeded_order(items: Iterable[str], seed: int) -> list[str]:
    """The items in an order fixed by the seed (stable across runs and Python versions)."""
    return sorted(items, key=lambda s: hashlib.sha256(f"{seed}:{s}".encode()).digest())


def read_ground_truth(corpus: Path) -> dict[str, str]:
    """The main text that the source datasets publish, by page path (for some sources only)."""
    out: dict[str, str] = {}
    for path in sorted((corpus / "ground-truth").glob("*.jsonl.gz")):
        with gzip.open(path, "rb") as fh:
            for line in fh:
                if line.strip():
                    row = orjson.loads(line)
                    out[row["path"]] = row["text"]
    return out


def _five_grams(text: str) -> set[str]:
    words = text.lower().split()
    return {" ".join(words[i:i + 5]) for i in range(len(words) - 4)}


def gold_jaccard(a: str, b: str) -> float:
    sa, sb = _five_grams(a), _five_grams(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def negative_pairs(pages: list[CorpusPage], curated: list[dict[str, Any]],
                   gold: dict[str, str]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Every pair of different pages in one template group that is not known to be one article,
    and the pairs left out with the reason: labelled other than distinct in PAIRS.jsonl, ground truth
    that says one article (`SAME_GOLD_JACCARD`), or listed in `SAME_ARTICLE`."""
    labels = {frozenset((c["a"], c["b"])): c["expected"] for c in curated}
    by_group: dict[str, list[str]] = defaultdict(list)
    for page in pages:
        if page.group:
            by_group[page.group].append(page.path)
    out, left_out = [], {}
    for group in sorted(by_group):
        for a, b in combinations(sorted(by_group[group]), 2):
            pair = frozenset((a, b))
            label = labels.get(pair)
            if label in NOT_DISTINCT:
                left_out[f"{a} ~ {b}"] = f"PAIRS.jsonl: {label}"
            elif label is None and a in gold and b in gold and \
                    (j := gold_jaccard(gold[a], gold[b])) >= SAME_GOLD_JACCARD:
                left_out[f"{a} ~ {b}"] = f"ground-truth texts largely the same (5-gram Jaccard {j:.2f})"
            elif label is None and pair in SAME_ARTICLE:
                left_out[f"{a} ~ {b}"] = SAME_ARTICLE[pair]
            else:
                out.append((a, b))
    return out, left_out


def build_labelled_set(corpus: Path, *, sample: int | None = 200, seed: int = 7, min_words: int = 50,
                       negatives_sample: int | None = None) -> LabelledSet:
    """Positives from `sample` seeded pages (all pages when None), negatives from all template groups
    (or a seeded `negatives_sample` of those pairs)."""
    corpus = corpus.resolve()
    pages = read_manifest(corpus)
    site_of = {p.path: p.site for p in pages}
    order = seeded_order(site_of, seed)
    chosen = order if sample is None else order[:sample]
    result = LabelledSet(rows=[], sampled=len(chosen))

    bases: dict[str, tuple[str, MainContent]] = {}
    for path in chosen:
        html = load_html(corpus, path)
        content = main_content(html)
        if content.words < min_words:
            result.skipped_short.append(path)
        elif content.fallback:
            result.skipped_fallback.append(path)
        else:
            bases[path] = (html, content)

    hosts = [p for p, (html, content) in bases.items()
             if main_container(parse(html), content.paragraphs)[1] >= MIN_CONTAINER_SHARE]
    result.template_hosts = len(hosts)
    for path, (html, _) in bases.items():
        rng = random.Random(f"template:{seed}:{path}")
        language = bases[path][1].language
        others = [h for h in hosts if site_of[h] != site_of[path] and bases[h][1].language == language]
        host = rng.choice(others) if others else None
        variants = variants_of(html, seed=_int_seed(seed, path),
                               template_html=bases[host][0] if host else None)
        for kind, variant in variants.items():
            row: dict[str, Any] = {"a": str(corpus / path), "b": {"html": variant}, "duplicate": True,
                                   "kind": kind, "base": path}
            if kind == "template":
                row["template"] = host
            result.rows.append(row)

    negatives, result.excluded_negatives = negative_pairs(pages, read_curated(corpus),
                                                          read_ground_truth(corpus))
    if negatives_sample is not None and negatives_sample < len(negatives):
        keep = set(seeded_order((f"{a}|{b}" for a, b in negatives), seed)[:negatives_sample])
        negatives = [(a, b) for a, b in negatives if f"{a}|{b}" in keep]
    result.rows.extend({"a": str(corpus / a), "b": str(corpus / b), "duplicate": False, "kind": NEGATIVE,
                        "base": a} for a, b in negatives)
    return result


def curated_rows(corpus: Path, already: Iterable[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """The curated pairs of PAIRS.jsonl labelled duplicate, near-duplicate or distinct, as rows of
    kind `curated:<relation>`, except pairs already among `already` (the same-group negatives hold the
    curated distinct pairs of one template group)."""
    corpus = corpus.resolve()
    seen = {frozenset((str(r["a"]), str(r["b"]))) for r in already if isinstance(r["b"], str)}
    out = []
    for pair in read_curated(corpus):
        label = CURATED_LABELS.get(pair["expected"])
        a, b = str(corpus / pair["a"]), str(corpus / pair["b"])
        if label is None or frozenset((a, b)) in seen:
            continue
        out.append({"a": a, "b": b, "duplicate": label, "kind": f"curated:{pair['relation']}", "base": pair["a"],
                    "curated": pair["id"]})
    return out


def _int_seed(seed: int, path: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{path}".encode()).digest()[:8], "big")


def write_rows(rows: Iterable[dict[str, Any]], path: Path) -> int:
    n = 0
    with path.open("wb") as fh:
        for row in rows:
            fh.write(orjson.dumps(row) + b"\n")
            n += 1
    return n


def member_html(ref: Any) -> str:
    """The HTML of a pair member: an absolute path to a corpus page, or ``{"html": ...}``."""
    if isinstance(ref, dict):
        return str(ref["html"])
    path = Path(ref)
    return decode_body(gzip.decompress(path.read_bytes())).text


def scored_rows(rows: list[dict[str, Any]],
                fingerprint: Callable[[str], Fingerprint]) -> Iterator[tuple[dict[str, Any], PairScore]]:
    """Each row with its `PairScore`; a page met twice (by path) is fingerprinted once."""
    cache: dict[str, Fingerprint] = {}

    def of(ref: Any) -> Fingerprint:
        if isinstance(ref, dict):
            return fingerprint(member_html(ref))
        if ref not in cache:
            cache[ref] = fingerprint(member_html(ref))
        return cache[ref]

    for row in rows:
        yield row, pair_score(bool(row["duplicate"]), of(row["a"]), of(row["b"]))
