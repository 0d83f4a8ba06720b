"""Labelled containment pairs built at run time from the real-web corpus (`shared/corpus`).

A pair is two main texts, A (the container) and B (the page it may contain), with the exact
containment of B's shingles in A's (`containment.exact_containment` over `features.token_features` at
the settings' shingle size): the label the estimate is judged against. Three kinds:

- `embedded` (partial copies): a seeded sample of corpus articles (main text of at least `min_words`
  words, jusText kept prose rather than falling back to the full text) is each embedded once per
  band of `EMBED_BANDS`: a contiguous run of a fraction f of B's words, f drawn in the band (30% to
  95% of B), placed inside "own text" made of other real articles' paragraphs (other sites, B's
  language when there are enough), before and after it. The own text is `own_ratio` times the
  excerpt, drawn log-uniformly in `OWN_RATIO`, so A is from about half as large as B (a short excerpt
  with a line of comment) to over ten times larger: the small-B-in-large-A case is in the set.
- `same-group` (template-only negatives): pairs of different pages of one template group (one site
  in one capture period, `labelled.negative_pairs`, which leaves out those known to be one article),
  both directions, with their main texts as `neardup scan` extracts them: whatever boilerplate jusText
  keeps on both is what they share.
- `unrelated`: sampled articles of different sites paired with each other.

Only texts are made, in memory: no corpus page is copied anywhere. Deterministic for one corpus,
seed and settings.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from neardup_core.extract.main_text import ExtractError, extract
from neardup_core.fingerprint.containment import exact_containment
from neardup_core.fingerprint.features import token_features, tokens
from neardup_core.fingerprint.page import skip_reason
from neardup_core.settings import DEFAULT_SETTINGS, CoreSettings
from neardup_core.testing.corpus import load_html, read_curated, read_manifest
from neardup_core.testing.labelled import negative_pairs, read_ground_truth, seeded_order

EMBEDDED = "embedded"
SAME_GROUP = "same-group"
UNRELATED = "unrelated"
EMBED_BANDS = ((0.30, 0.50), (0.50, 0.70), (0.70, 0.90), (0.90, 0.95))
"""The fractions of B's words embedded in A: one pair per band and article, f uniform in the band."""
OWN_RATIO = (0.2, 16.0)
"""A's own text, in words, over the embedded excerpt's: drawn log-uniformly in this range."""


@dataclass(frozen=True, slots=True)
class ContainmentPair:
    """Two main texts and the exact containment of B's shingles in A's.

    `base` and `other` are the corpus paths behind B and A (for `embedded`, `other` is the first page
    the own text came from); `fraction` is the share of B's words embedded (None for negatives);
    `shingles_a` and `shingles_b` are the distinct shingle counts."""

    kind: str
    a: str
    b: str
    base: str
    other: str
    exact: float
    shingles_a: int
    shingles_b: int
    fraction: float | None = None

    @property
    def size_ratio(self) -> float:
        """|A| / |B| in distinct shingles: the estimate's error grows with it."""
        return self.shingles_a / self.shingles_b if self.shingles_b else math.inf


@dataclass
class ContainmentSet:
    """The pairs, and how they were made (counts for the report)."""

    pairs: list[ContainmentPair] = field(default_factory=list)
    sampled: int = 0
    articles: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    """Sampled pages that are no article to embed, with the reason."""

    def count(self, kind: str) -> int:
        return sum(1 for p in self.pairs if p.kind == kind)


@dataclass(frozen=True, slots=True)
class _Text:
    paragraphs: tuple[str, ...]
    language: str | None
    fallback: bool

    @property
    def text(self) -> str:
        return "\n".join(self.paragraphs)

    @property
    def words(self) -> int:
        return sum(len(p.split()) for p in self.paragraphs)


def _main_text(corpus: Path, path: str) -> _Text | None:
    """A page's main text as `neardup scan` extracts it, or None when scan would skip the page."""
    try:
        main = extract(load_html(corpus, path))
    except ExtractError:
        return None
    if skip_reason(main) is not None:
        return None
    paragraphs = tuple(" ".join(p.split()) for p in main.paragraphs)
    return _Text(tuple(p for p in paragraphs if p), main.language, main.fallback)


def exact_pair(kind: str, a: str, b: str, base: str, other: str, settings: CoreSettings,
               fraction: float | None = None) -> ContainmentPair | None:
    """The pair with its exact containment and shingle counts; None when either text has fewer than
    `settings.min_features` shingles (no signature: scan would not sign it)."""
    fa = token_features(tokens(a), settings.shingle_size)
    fb = token_features(tokens(b), settings.shingle_size)
    if len(fa) < settings.min_features or len(fb) < settings.min_features:
        return None
    return ContainmentPair(kind, a, b, base, other, exact_containment(fa.hashes, fb.hashes), len(fa), len(fb),
                           fraction)


def embed(b: str, own: Iterable[str], fraction: float, own_ratio: float, rng: random.Random) -> str:
    """A's main text: a contiguous run of `fraction` of B's words, with own-text paragraphs (taken in
    order from `own` until `own_ratio` times the excerpt's words) split around it at a random point."""
    words = b.split()
    take = max(1, round(fraction * len(words)))
    start = rng.randint(0, len(words) - take)
    excerpt = " ".join(words[start:start + take])
    target = own_ratio * take
    chosen: list[str] = []
    have = 0
    for paragraph in own:
        if have >= target:
            break
        chosen.append(paragraph)
        have += len(paragraph.split())
    cut = rng.randint(0, len(chosen))
    return "\n".join([*chosen[:cut], excerpt, *chosen[cut:]])


def build_containment_pairs(corpus: Path, *, sample: int | None = 100, seed: int = 7, min_words: int = 50,
                            same_group: int | None = 100, unrelated: int | None = 100,
                            settings: CoreSettings = DEFAULT_SETTINGS) -> ContainmentSet:
    """Embedded pairs from `sample` seeded corpus pages (all when None), `same_group` seeded same-group
    page pairs (all when None; two directed pairs each) and `unrelated` pairs of sampled articles."""
    corpus = corpus.resolve()
    pages = read_manifest(corpus)
    site_of = {p.path: p.site for p in pages}
    order = seeded_order(site_of, seed)
    chosen = order if sample is None else order[:sample]
    result = ContainmentSet(sampled=len(chosen))
    texts: dict[str, _Text | None] = {}

    def text_of(path: str) -> _Text | None:
        if path not in texts:
            texts[path] = _main_text(corpus, path)
        return texts[path]

    articles: list[str] = []
    for path in chosen:
        t = text_of(path)
        if t is None:
            result.skipped[path] = "skipped by scan (no main text, or template only)"
        elif t.fallback:
            result.skipped[path] = "jusText kept nothing: the full-text fallback is no article"
        elif t.words < min_words:
            result.skipped[path] = f"main text under {min_words} words"
        else:
            articles.append(path)
    result.articles = len(articles)
    result.pairs.extend(_embedded(articles, {p: t for p, t in texts.items() if t}, site_of, seed, settings))
    result.pairs.extend(_unrelated(articles, texts, site_of, seed, unrelated, settings))

    negatives, _ = negative_pairs(pages, read_curated(corpus), read_ground_truth(corpus))
    keys = seeded_order((f"{a}|{b}" for a, b in negatives), seed)
    for key in keys if same_group is None else keys[:same_group]:
        a, b = key.split("|")
        ta, tb = text_of(a), text_of(b)
        if ta is None or tb is None:
            continue
        for x, y, tx, ty in ((a, b, ta, tb), (b, a, tb, ta)):
            pair = exact_pair(SAME_GROUP, tx.text, ty.text, y, x, settings)
            if pair is not None:
                result.pairs.append(pair)
    return result


def _embedded(articles: list[str], texts: dict[str, _Text], site_of: dict[str, str], seed: int,
              settings: CoreSettings) -> Iterable[ContainmentPair]:
    for path in articles:
        b = texts[path]
        same_language = [p for p in articles if site_of[p] != site_of[path] and texts[p].language == b.language]
        donors = same_language if len(same_language) >= 3 else [p for p in articles if site_of[p] != site_of[path]]
        for lo, hi in EMBED_BANDS:
            rng = random.Random(f"containment:{seed}:{path}:{lo}")
            fraction = rng.uniform(lo, hi)
            own_ratio = math.exp(rng.uniform(math.log(OWN_RATIO[0]), math.log(OWN_RATIO[1])))
            order = rng.sample(donors, len(donors))
            own = chain.from_iterable(texts[donor].paragraphs for donor in order)
            a = embed(b.text, own, fraction, own_ratio, rng)
            pair = exact_pair(EMBEDDED, a, b.text, path, order[0] if order else "", settings, fraction)
            if pair is not None:
                yield pair


def _unrelated(articles: list[str], texts: dict[str, _Text | None], site_of: dict[str, str], seed: int,
               limit: int | None, settings: CoreSettings) -> Iterable[ContainmentPair]:
    rng = random.Random(f"unrelated:{seed}")
    made = 0
    if len(articles) < 2:
        return
    for _ in range(10 * (limit if limit is not None else len(articles))):
        if limit is not None and made >= limit:
            return
        a, b = rng.sample(articles, 2)
        ta, tb = texts[a], texts[b]
        if site_of[a] == site_of[b] or ta is None or tb is None:
            continue
        pair = exact_pair(UNRELATED, ta.text, tb.text, b, a, settings)
        if pair is not None:
            made += 1
            yield pair
