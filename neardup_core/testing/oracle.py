"""The brute-force oracle: the decision rule applied to all pairs, O(n^2). For tests.

Pairs that cannot match are passed over without calling the rule (`_Neighbours`): the rule's own
preconditions (equal digests, SimHash within k, a band of equal rows, an equal containment minimum)
pick a superset of the pairs it can match, found with dicts and numpy instead of n^2 Python calls.

`oracle_partials` applies the partial-copy rule (`dedup/rule.py`, `partial_match`) to all pairs the same
way, and `exact_containments` gives the true containment behind each page it names, from the shingle
sets, for what the estimate cannot say."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup_core.dedup.gather import JACCARD_DIGITS
from neardup_core.dedup.rule import (
    Match,
    better,
    better_ranked,
    match_of,
    merge_partials,
    named_partials,
    partial_match,
    verdict_of,
)
from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.containment import exact_containment
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import has_containment
from neardup_core.index.tables import BandDesign, TableDesign

Partials = tuple[tuple[str, float], ...]
"""A `partial_of` as (URL identity, containment rounded to `JACCARD_DIGITS`) pairs, in its order."""


class _Neighbours:
    """Per page, the versions the rule could relate it to, in their order in `versions`: those with its main
    text or body digest, with a SimHash within `k` bits, with a band of equal rows (`lsh`; what
    `minhash.shared_band` tests) or, with `minima_bands`, an equal containment minimum in one of the first
    bands (`rule.shared_minimum`). Every pair `match_of` or `partial_match` accepts is among them."""

    def __init__(self, versions: Sequence[PageVersion], k: int, lsh: BandDesign | None = None,
                 minima_bands: int | None = None) -> None:
        self.versions = versions
        self.k = k
        self.lsh = lsh
        self.minima_bands = minima_bands
        self.by_key: dict[Hashable, list[int]] = defaultdict(list)
        for i, v in enumerate(versions):
            for key in self._keys(v):
                self.by_key[key].append(i)
        self.has_simhash = np.array([v.simhash is not None for v in versions], dtype=bool)
        self.simhashes = np.array([v.simhash or 0 for v in versions], dtype=np.uint64)

    def _keys(self, v: PageVersion) -> list[Hashable]:
        keys: list[Hashable] = [("text", v.text_sha256), ("body", v.body_sha256)]
        if self.lsh is not None and v.minhash is not None:
            width = self.lsh.rows * self.lsh.bits // 8
            keys += [("band", len(v.minhash), band, v.minhash[band * width:(band + 1) * width])
                     for band in range(self.lsh.bands)]
        if self.minima_bands is not None and v.minima is not None:
            n = min(self.minima_bands, len(v.minima) // 4)
            keys += [("minimum", band, v.minima[band * 4:(band + 1) * 4]) for band in range(n)]
        return keys

    def of(self, page: PageVersion) -> list[PageVersion]:
        found: set[int] = set()
        for key in self._keys(page):
            found.update(self.by_key.get(key, ()))
        if page.simhash is not None and len(self.versions):
            near = np.bitwise_count(self.simhashes ^ np.uint64(page.simhash)) <= self.k
            found.update(np.flatnonzero(near & self.has_simhash).tolist())
        return [self.versions[i] for i in sorted(found)]


def oracle_decisions(versions: Iterable[PageVersion], current: dict[str, PageVersion], k: int,
                     skipped: Iterable[str] = (), lsh: BandDesign | None = None
                     ) -> dict[str, tuple[str, str | None, int | None]]:
    """(verdict, duplicate_of, distance) per URL for its current version, over all versions.

    `versions` are every indexed version (earlier versions of a URL stay matchable), `current`
    the version each URL's decision is about, `skipped` the URLs whose current fetch was skipped;
    with `lsh`, the MinHash part of the rule too (a shared band and a Jaccard estimate >= J).
    """
    neighbours = _Neighbours(list(versions), k, lsh)
    out: dict[str, tuple[str, str | None, int | None]] = {}
    for url, page in current.items():
        best: Match | None = None
        for other in neighbours.of(page):
            if better_ranked(other, page):
                best = better(best, match_of(page, other, k, lsh))
        out[url] = (verdict_of(best), best.candidate.url if best else None, best.distance if best else None)
    for url in skipped:
        out[url] = ("skipped", None, None)
    return out


def oracle_from_fetches(fetches: Iterable[Fetch], k: int, lsh: BandDesign | None = None,
                        max_versions: int | None = None) -> dict[str, tuple[str, str | None, int | None]]:
    """The oracle's decisions for a set of fetches, in any order, with duplicates and recrawls.

    A version is a URL's main text (a skipped fetch's: its body), ranked by its first fetch, whose
    body it carries: a recrawl whose raw bytes moved while its main text stayed is no new version
    (`neardup_core/dedup/gather.py`). A URL's decision is about the version of its latest fetch.
    URLs are compared by their identity (`url_identity`), and the decisions are keyed by it.

    With `max_versions` (`CoreSettings.max_versions`), a URL lets its oldest versions go, and what
    a page matches depends on arrival order, as the engine's does: `fetches` are taken in the order
    they arrive, and a version counts for a URL's current version if it had not gone when the current
    version was probed (after that, its own probe found the current version). Each URL's fetches must
    arrive in fetch-time order (a crawler's recrawls do), so a version is probed once; else ValueError.
    """
    fetches = list(fetches)
    if max_versions is None:
        versions, current = _versions(fetches)
        skipped = list(dict.fromkeys(u for f in fetches if (u := url_identity(f.url)) not in current))
        return oracle_decisions(versions, current, k, skipped, lsh)
    lives, held = _capped_versions(fetches, max_versions)
    out: dict[str, tuple[str, str | None, int | None]] = {}
    for url, life in held.items():
        if life.page is None:
            out[url] = ("skipped", None, None)
            continue
        best: Match | None = None
        for other in lives:
            if other.page is not None and other.gone > life.probed and better_ranked(other.page, life.page):
                best = better(best, match_of(life.page, other.page, k, lsh))
        out[url] = (verdict_of(best), best.candidate.url if best else None, best.distance if best else None)
    return out

def oracle_partials(fetches: Iterable[Fetch], design: TableDesign) -> dict[str, Partials]:
    """`partial_of` per URL identity for its current version, by the rule over all pairs of versions (every
    indexed version counts, as for duplicates): per main text it holds through a bucket that is not
    saturated (`saturated_buckets`), that text's best-ranked version of another URL, the `MAX_PARTIALS`
    best of them; empty for exact duplicates and skipped URLs. Without
    `max_versions` caps or a retention (the oracle's duplicates take them; this one does not)."""
    fetches = list(fetches)
    versions, current = _versions(fetches)
    verdicts = oracle_from_fetches(fetches, design.k, design.lsh)
    out: dict[str, Partials] = {url: () for url in verdicts}
    if design.partial is None:
        return out
    neighbours = _Neighbours(versions, design.k, minima_bands=design.partial.bands)
    saturated = saturated_buckets(versions, design)
    for url, page in current.items():
        if verdicts[url][0] == "exact_duplicate":
            continue
        found = [p for other in neighbours.of(page) if (p := partial_match(page, other, design)) is not None]
        dead = sum(1 << band for band, minimum in _buckets(page, design) if (band, minimum) in saturated)
        out[url] = tuple((url_identity(p.candidate.url), round(p.containment, JACCARD_DIGITS))
                         for p in named_partials(merge_partials((), found), dead))
    return out


def _buckets(page: PageVersion, design: TableDesign) -> list[tuple[int, bytes]]:
    """The containment buckets of a page: (band, its minimum there) per band, when it is probed in them."""
    if design.partial is None or not has_containment(design, page):
        return []
    assert page.minima is not None
    return [(band, page.minima[band * 4:(band + 1) * 4]) for band in range(design.partial.bands)]


def saturated_buckets(versions: Iterable[PageVersion], design: TableDesign) -> set[tuple[int, bytes]]:
    """The containment buckets (band, minimum) into which the versions put more distinct main texts than the
    design's cap (`ContainmentDesign.bucket_texts`; none without one): those no pair counts through."""
    if design.partial is None or not design.partial.bucket_texts:
        return set()
    texts: dict[tuple[int, bytes], set[str]] = defaultdict(set)
    for page in versions:
        for bucket in _buckets(page, design):
            texts[bucket].add(page.text_sha256)
    return {bucket for bucket, held in texts.items() if len(held) > design.partial.bucket_texts}


def exact_containments(partials: Mapping[str, Partials], fetches: Iterable[Fetch],
                       shingles_of: Mapping[str, npt.NDArray[np.uint64]]) -> dict[tuple[str, str], float]:
    """The exact containment (`containment.exact_containment`) of each named page's shingles in its
    holder's, by (holder identity, named identity), from `shingles_of` (a main text's digest -> its
    shingle hashes) and the current versions of `fetches`."""
    versions, current = _versions(list(fetches))
    text_of = {url: page.text_sha256 for url, page in current.items()}
    for v in versions:
        text_of.setdefault(v.identity, v.text_sha256)
    return {(url, named): exact_containment(shingles_of[text_of[url]], shingles_of[text_of[named]])
            for url, named_list in partials.items() for named, _ in named_list}


Said = tuple[Any, ...]
"""(verdict, duplicate_of, distance) or (verdict, duplicate_of, distance, jaccard) of a URL."""


def rule_problems(decided: Mapping[str, Said], fetches: Iterable[Fetch], k: int, *, chains: bool = False,
                  lsh: BandDesign | None = None, max_versions: int | None = None) -> list[str]:
    """What breaks the decision rule in `decided` ((verdict, duplicate_of, distance) per URL), for
    the oracle over `fetches`; empty when nothing does.

    URLs (keys and `duplicate_of`) are compared by their identity (`url_identity`). Verdicts must be
    the oracle's exactly. `duplicate_of` need not be the oracle's best match: it
    must name a URL with a better-ranked version that matches the page by the verdict's kind (an
    exact match when the verdict is exact), at the distance given (and with the Jaccard estimate
    given, when the tuples carry one; with `max_versions`, any version the URL ever held counts, gone
    or not, and the verdicts are those of `oracle_from_fetches` in the fetches' order). With `chains`, following
    `duplicate_of` from any duplicate must end, without a cycle, at a page that is not a duplicate:
    true when every URL has one body; a URL recrawled with another body can be the duplicate of
    content another URL used to have and the other way round (the oracle's own best matches too).
    """
    fetches = list(fetches)
    expected = oracle_from_fetches(fetches, k, lsh, max_versions)
    if max_versions is None:
        versions, current = _versions(fetches)
    else:
        lives, held = _capped_versions(fetches, max_versions)
        versions = [life.page for life in lives if life.page is not None]
        current = {url: life.page for url, life in held.items() if life.page is not None}
    by_url: dict[str, list[PageVersion]] = {}
    for v in versions:
        by_url.setdefault(v.identity, []).append(v)
    # URLs by their identity: a decision names a URL (and its duplicate_of) as received
    decided = {url_identity(url): (s[0], None if s[1] is None else url_identity(s[1]), *s[2:])
               for url, s in decided.items()}
    problems = [f"{url}: decided {decided.get(url)}, the oracle says {want}" for url, want in expected.items()
                if url not in decided or decided[url][0] != want[0]]
    problems += [f"{url}: decided, but not in the input" for url in decided if url not in expected]
    for url, said in decided.items():
        verdict, target, distance = said[:3]
        jaccard = said[3] if len(said) > 3 else None
        if verdict not in ("exact_duplicate", "near_duplicate"):
            if target is not None:
                problems.append(f"{url}: {verdict} names duplicate_of {target}")
            continue
        page = current.get(url)
        matches = [m for other in by_url.get(target or "", []) if page is not None and better_ranked(other, page)
                   and (m := match_of(page, other, k, lsh)) is not None and m.exact == (verdict == "exact_duplicate")
                   and m.distance == distance
                   and (len(said) < 4 or (None if m.jaccard is None else round(m.jaccard, JACCARD_DIGITS)) == jaccard)]
        if not matches:
            problems.append(f"{url}: {verdict} of {target} at distance {distance} (Jaccard {jaccard}), which is no "
                            f"better-ranked match of that kind")
        seen = {url}
        while chains and target is not None and target in decided and decided[target][0] in ("exact_duplicate",
                                                                                  "near_duplicate"):
            if target in seen:
                problems.append(f"{url}: duplicate_of goes round in a cycle through {target}")
                break
            seen.add(target)
            target = decided[target][1]
    return problems


def _version_key(f: Fetch) -> tuple[str, str, str]:
    """What makes a fetch a version of its URL: its main text, or its body when it has none."""
    page = f.version
    return (page.identity, "text", page.text_sha256) if page is not None else (url_identity(f.url), "body",
                                                                              f.body_sha256)


def _versions(fetches: list[Fetch]) -> tuple[list[PageVersion], dict[str, PageVersion]]:
    """Every indexed version (ranked by its first fetch) and each URL's current one, by URL identity:
    the version of its latest fetch (ties: the larger first body, as `UrlState.current` orders)."""
    first: dict[tuple[str, str, str], Fetch] = {}
    last: dict[tuple[str, str, str], int] = {}
    for f in fetches:
        key = _version_key(f)
        if key not in first or f.fetched_at_ms < first[key].fetched_at_ms:
            first[key] = f
        last[key] = max(last.get(key, f.fetched_at_ms), f.fetched_at_ms)
    latest: dict[str, tuple[str, str, str]] = {}
    for key in first:
        url = key[0]
        if url not in latest or (last[key], first[key].body_sha256) > (last[latest[url]],
                                                                      first[latest[url]].body_sha256):
            latest[url] = key
    versions = [v for f in first.values() if (v := f.version) is not None]
    current = {url: v for url, key in latest.items() if (v := first[key].version) is not None}
    return versions, current


@dataclass(slots=True)
class _Life:
    """One version from its probe to when its URL let it go (arrival positions; `gone` never: inf)."""

    page: PageVersion | None
    body: str
    first_ms: int
    last_ms: int
    probed: int
    gone: float = math.inf


def _capped_versions(fetches: list[Fetch], max_versions: int) -> tuple[list[_Life], dict[str, _Life]]:
    """Every version's life in arrival order, and the current version each URL holds at the end."""
    lives: list[_Life] = []
    held: dict[str, dict[tuple[str, str, str], _Life]] = {}
    for at, f in enumerate(fetches):
        key = _version_key(f)
        versions = held.setdefault(key[0], {})
        life = versions.get(key)
        if life is not None:
            if f.fetched_at_ms < life.first_ms:
                raise ValueError(f"{f.url}: fetched at {f.fetched_at_ms}, before a version it holds was first fetched")
            life.last_ms = max(life.last_ms, f.fetched_at_ms)
            continue
        life = versions[key] = _Life(f.version, f.body_sha256, f.fetched_at_ms, f.fetched_at_ms, at)
        lives.append(life)
        for old in sorted(versions, key=lambda v: (versions[v].last_ms, versions[v].body))[:-max_versions]:
            versions.pop(old).gone = at
    current = {url: max(versions.values(), key=lambda v: (v.last_ms, v.body)) for url, versions in held.items()}
    return lives, current
