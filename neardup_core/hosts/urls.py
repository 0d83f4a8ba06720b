"""URL helpers shared by host scoring and URL-rule learning: the host key, path segments, query parameters.

The host key (`host_of`) is the URL's hostname, lower-cased, without port, userinfo or trailing dot, and
with a leading "www." kept: the crawl frontier keys politeness and budgets by hostname, and `www.a.example`
and `a.example` may be different servers. Where two hostnames of one site should count as the same host
(a www / bare mirror duplicating its own pages is not syndication), compare `site_of` instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import idna


def host_of(url: str) -> str:
    """The host key of a URL: lower-cased hostname, no port, no trailing dot ("" when there is none)."""
    return (urlsplit(url).hostname or "").rstrip(".")


def site_of(host: str) -> str:
    """The host without a leading "www.", so that a www / bare pair of hostnames compares equal."""
    host = host.lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


def same_site(host_a: str, host_b: str) -> bool:
    """True when two hostnames name the same site (equal up to case, trailing dot and a leading "www.")."""
    return site_of(host_a) == site_of(host_b)


def path_of(url: str) -> str:
    """The raw path of a URL (matrix parameters included), "/" when empty."""
    return urlsplit(url).path or "/"


def path_segments(path: str) -> list[str]:
    """The non-empty segments of a path: "/a//b/" gives ["a", "b"]."""
    return [segment for segment in path.split("/") if segment]


def split_matrix(segment: str) -> tuple[str, dict[str, str]]:
    """A path segment without its matrix parameters, and those parameters: "t;jsessionid=A1" gives
    ("t", {"jsessionid": "A1"})."""
    bare, *params = segment.split(";")
    out: dict[str, str] = {}
    for param in params:
        name, _, value = param.partition("=")
        if name:
            out[name.lower()] = value
    return bare, out


def query_params(url: str) -> dict[str, tuple[str, ...]]:
    """The query parameters of a URL, each name with its values in order (blank values kept)."""
    out: dict[str, list[str]] = {}
    for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        out.setdefault(name, []).append(value)
    return {name: tuple(values) for name, values in out.items()}


def without_query_params(url: str, names: Iterable[str]) -> str:
    """The URL with every occurrence of the named query parameters removed, the others kept in order."""
    drop = set(names)
    parts = urlsplit(url)
    if not parts.query or not drop:
        return url
    kept = [(n, v) for n, v in parse_qsl(parts.query, keep_blank_values=True) if n not in drop]
    return urlunsplit(parts._replace(query=urlencode(kept)))


def with_path(url: str, path: str) -> str:
    """The URL with its path replaced."""
    return urlunsplit(urlsplit(url)._replace(path=path))


_DEFAULT_PORTS = {"http": 80, "https": 443}


@lru_cache(maxsize=1 << 16)
def url_identity(url: str) -> str:
    """The URL's identity: the normal form that does not change the resource it names (DESIGN, the
    decision rule). Scheme and host lower-cased, an internationalised host in its punycode form
    (`identity_host`), the scheme's default port (80 for http, 443 for https) and an empty port
    dropped, an empty path written as "/", the fragment dropped; nothing else changes (userinfo, path
    case, query order and percent-encoding are kept). So `http://example.com` and
    `http://Example.com:80/` are one URL, and so are `http://bücher.example/` and
    `http://xn--bcher-kva.example/`. Idempotent. A string without `scheme://authority` loses only its
    fragment."""
    head = url.partition("#")[0]
    scheme, colon, rest = head.partition(":")
    if not colon or not scheme or not rest.startswith("//"):
        return head
    scheme = scheme.lower()
    rest = rest[2:]
    end = len(rest)
    for sep in "/?":
        at = rest.find(sep)
        if at != -1 and at < end:
            end = at
    authority, tail = rest[:end], rest[end:]
    userinfo, at_sign, hostport = authority.rpartition("@")
    if hostport.startswith("["):  # an IPv6 literal
        close = hostport.find("]")
        host, after = (hostport, "") if close == -1 else (hostport[:close + 1], hostport[close + 1:])
    else:
        colon_at = hostport.rfind(":")
        host, after = (hostport, "") if colon_at == -1 else (hostport[:colon_at], hostport[colon_at:])
    port = after[1:] if after.startswith(":") else None
    if port is not None and (port == "" or (port.isascii() and port.isdigit()
                                            and int(port) == _DEFAULT_PORTS.get(scheme))):
        after = ""
    if not tail.startswith("/"):
        tail = "/" + tail
    return f"{scheme}://{userinfo}{at_sign}{identity_host(host)}{after}{tail}"


def identity_host(host: str) -> str:
    """A host as `url_identity` writes it: lower-cased; a host with non-ASCII characters converted to
    its ASCII (punycode) form by IDNA 2008 with the UTS 46 mapping, as browsers resolve it (the `idna`
    package: "BÜCHER.example" and "bücher.example" give "xn--bcher-kva.example", "straße" keeps its ß
    where IDNA 2003 made it "strasse"). A host that is not a valid IDN (a "_", a leading hyphen, an
    empty or over-long label, the bidi rule) stays as lower-cased text: it names no server a browser
    would reach, but its URL still has one identity."""
    if host.isascii():
        return host.lower()
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except UnicodeError:  # idna.IDNAError and its kinds
        return host.lower()
