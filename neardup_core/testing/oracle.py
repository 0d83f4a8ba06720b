"""The brute-force oracle: the decision rule applied to all pairs, O(n^2). For tests."""

from __future__ import annotations

from collections.abc import Iterable

from neardup_core.dedup.rule import Match, better, better_ranked, match_of, verdict_of
from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.fetch import Fetch


def oracle_decisions(versions: Iterable[PageVersion], current: dict[str, PageVersion], k: int,
                     skipped: Iterable[str] = ()) -> dict[str, tuple[str, str | None, int | None]]:
    """(verdict, duplicate_of, distance) per URL for its current version, over all versions.

    `versions` are every indexed version (earlier versions of a URL stay matchable), `current`
    the version each URL's decision is about, `skipped` the URLs whose current fetch was skipped.
    """
    pool = list(versions)
    out: dict[str, tuple[str, str | None, int | None]] = {}
    for url, page in current.items():
        best: Match | None = None
        for other in pool:
            if better_ranked(other, page):
                best = better(best, match_of(page, other, k))
        out[url] = (verdict_of(best), best.candidate.url if best else None, best.distance if best else None)
    for url in skipped:
        out[url] = ("skipped", None, None)
    return out


def oracle_from_fetches(fetches: Iterable[Fetch], k: int) -> dict[str, tuple[str, str | None, int | None]]:
    """The oracle's decisions for a set of fetches, in any order, with duplicates and recrawls.

    A version is a (URL, body) pair ranked by its first fetch; a URL's decision is about the
    body of its latest fetch.
    """
    first: dict[tuple[str, str], Fetch] = {}
    latest: dict[str, Fetch] = {}
    for f in fetches:
        key = (f.url, f.body_sha256)
        if key not in first or f.fetched_at_ms < first[key].fetched_at_ms:
            first[key] = f
        if f.url not in latest or (f.fetched_at_ms, f.body_sha256) > (latest[f.url].fetched_at_ms,
                                                                      latest[f.url].body_sha256):
            latest[f.url] = f
    versions = [v for f in first.values() if (v := f.version) is not None]
    current: dict[str, PageVersion] = {}
    skipped = []
    for url, f in latest.items():
        v = first[(url, f.body_sha256)].version
        if v is None:
            skipped.append(url)
        else:
            current[url] = v
    return oracle_decisions(versions, current, k, skipped)
