"""The rank order: which of two copies is the better canonical (lower rank is better).

Higher `importance` first, then https before http, then fewer path segments and query
parameters, then the shorter URL, then the earlier fetch, then the URL itself, then the body
digest (two bodies fetched at one URL at the same millisecond). The URL parts are those of the
URL's identity (`neardup_core.hosts.urls.url_identity`). Compare Apache Nutch's
DeduplicationJob: score, fetch time, https, URL length.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

from neardup_core.hosts.urls import url_identity

Rank = tuple[float, int, int, int, int, str, str]


def url_shape(url: str) -> int:
    """Path segments plus query parameters: deeper and more parameterised URLs rank lower."""
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    params = [p for p in parts.query.split("&") if p]
    return len(segments) + len(params)


def rank_of(url: str, importance: float, fetched_at_ms: int, body_sha256: str) -> Rank:
    """The rank of a version; the URL parts (scheme, shape, length, the URL tie-break) are those of the
    URL's identity (`url_identity`), so every spelling of one URL ranks the same."""
    https, shape, length, identity = _url_rank(url)
    return (-importance, https, shape, length, fetched_at_ms, identity, body_sha256)


@lru_cache(maxsize=1 << 16)
def _url_rank(url: str) -> tuple[int, int, int, str]:
    """The URL's part of its rank: an index step ranks the same stored versions again and again."""
    identity = url_identity(url)
    return 0 if identity.startswith("https:") else 1, url_shape(identity), len(identity), identity
