"""A web site to crawl: hosts with distinct articles and the copies crawlers waste fetches on.

What a crawler meets, rendered on demand from a seed (`CrawlSite.render(url)`), so a real crawler can
follow its links (served over HTTP by `SiteServer`, which Scrapy reaches as its HTTP proxy: every request
names its host):

- two news hosts (`news.example`, `herald.example`) in their own templates: a home page, sections
  listing their articles with a summary each, and the articles (distinct texts);
- sort variants of each section (`?sort=date|title|popular`: the same items in another order);
- a print version of each article (`/articles/SLUG/print`, another template around the same text);
- session ids: each article links three related ones with a `?sid=` token made for that link, so every
  link is another URL of the same page;
- a mirror of `herald.example` (`mirror.herald.example`, the same pages under the same paths), linked
  from its About page;
- a wire service (`wire.example`) syndicating herald's articles under `/syndicated/herald/2026/SLUG`
  in its template, beside a few articles of its own, linked from news' About page;
- a calendar trap (`calendar.news.example`): `/calendar/YYYY-MM-DD` for `trap_days` days, each page
  saying that nothing happens that day and linking the day before and after, and a month either way.

Every page carries its content in `<meta name="content-id">`: what the page holds, equal for every copy of
one text (a print version, a mirror, a syndicated copy, a session id or a sort variant have their
original's), so a crawl's distinct texts reached and duplicate items are counted without neardup.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from neardup_core.testing.synthetic import TOPICS, _Prose

NEWS = "news.example"
HERALD = "herald.example"
MIRROR = "mirror.herald.example"
WIRE = "wire.example"
TRAP = "calendar.news.example"
HOSTS = (NEWS, HERALD, MIRROR, WIRE, TRAP)
START_URLS = (f"http://{NEWS}/", f"http://{HERALD}/")
SORTS = ("date", "title", "popular")
TRAP_START = date(2026, 1, 1)
CONTENT_TYPE = "text/html; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Article:
    host: str
    slug: str
    section: str
    title: str
    summary: str
    paragraphs: tuple[str, ...]

    @property
    def content_id(self) -> str:
        return f"article:{self.host}/{self.slug}"


@dataclass
class CrawlSite:
    """The site of one seed: `articles` per host, `trap_days` calendar days."""

    seed: int = 23
    articles_per_section: int = 8
    trap_days: int = 400
    articles: dict[str, dict[str, Article]] = field(default_factory=dict)
    sections: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        topics = sorted(TOPICS)
        plan = {NEWS: topics[:3], HERALD: topics[3:6], WIRE: topics[6:7]}
        for host, host_topics in plan.items():
            self.sections[host] = tuple(host_topics)
            per_host: dict[str, Article] = {}
            for topic in host_topics:
                count = self.articles_per_section if host != WIRE else 3
                for i in range(count):
                    prose = _Prose(random.Random(rng.getrandbits(64)), topic)
                    title = prose.title()
                    slug = "-".join(title.lower().split()[:4]) + f"-{topic[:3]}{i}"
                    summary = " ".join(prose.sentence() for _ in range(3))
                    per_host[slug] = Article(host, slug, topic, title, summary, tuple(prose.paragraphs(220)))
            self.articles[host] = per_host

    def content_ids(self) -> set[str]:
        """Every distinct main text the site holds (what a complete crawl reaches)."""
        out = {f"home:{h}" for h in (NEWS, HERALD, WIRE, TRAP)} | {f"about:{h}" for h in (NEWS, HERALD)}
        out |= {f"section:{h}/{s}" for h, sections in self.sections.items() for s in sections}
        out |= {a.content_id for per_host in self.articles.values() for a in per_host.values()}
        return out | {"calendar:empty"}

    def render(self, url: str) -> tuple[int, str, str | None]:
        """(status, HTML body, content id) of a URL; 404 with no content id for one the site lacks."""
        parts = urlsplit(url)
        host, path = parts.hostname or "", parts.path or "/"
        query = parse_qs(parts.query)
        found = self._render(host, path, query)
        if found is None:
            return 404, _page("Not found", "<p>Not found.</p>", "missing", host), None
        return 200, found[0], found[1]

    def _render(self, host: str, path: str, query: dict[str, list[str]]) -> tuple[str, str] | None:
        if host == TRAP:
            return self._calendar(path)
        source = HERALD if host == MIRROR else host
        if source not in self.articles:
            return None
        articles = self.articles[source]
        if host == WIRE and path.startswith("/syndicated/herald/2026/"):
            article = self.articles[HERALD].get(path.rsplit("/", 1)[1])
            return (self._article_page(WIRE, article, print_version=False), article.content_id) if article else None
        if path == "/":
            return self._home(host, source), f"home:{source}"
        if path == "/about" and source in (NEWS, HERALD):
            return self._about(host, source), f"about:{source}"
        if path.startswith("/section/"):
            section = path.removeprefix("/section/")
            if section not in self.sections[source]:
                return None
            sort = query.get("sort", ["date"])[0]
            return self._section(host, source, section, sort), f"section:{source}/{section}"
        if path.startswith("/articles/"):
            slug, _, rest = path.removeprefix("/articles/").partition("/")
            article = articles.get(slug)
            if article is None or rest not in ("", "print"):
                return None
            return self._article_page(host, article, print_version=rest == "print"), article.content_id
        return None

    def _home(self, host: str, source: str) -> str:
        sections = "".join(f'<li><a href="/section/{s}">{s.capitalize()}</a></li>' for s in self.sections[source])
        latest = list(self.articles[source].values())[:4]
        items = "".join(f'<li><a href="/articles/{a.slug}">{escape(a.title)}</a></li>' for a in latest)
        intro = {NEWS: "The News is the daily paper of the valley towns, with reporters in every district.",
                 HERALD: "The Evening Herald has covered the coast and its harbours since the first edition.",
                 WIRE: "The Wire distributes stories from partner newspapers to publishers across the region."
                 }[source]
        more = ""
        if source == NEWS:
            more = f'<p><a href="http://{TRAP}/calendar/{TRAP_START.isoformat()}">Community calendar</a></p>'
        if source == WIRE:
            wire = [f'<li><a href="/syndicated/herald/2026/{a.slug}">{escape(a.title)}</a></li>'
                    for a in self.articles[HERALD].values()]
            wire += [f'<li><a href="/articles/{a.slug}">{escape(a.title)}</a></li>'
                     for a in self.articles[WIRE].values()]
            more = f"<ul>{''.join(wire)}</ul>"
        main = (f"<h1>Welcome</h1><p>{intro} {intro.replace('the', 'our', 1)}</p><ul>{sections}</ul>"
                f"<ul>{items}</ul>{more}")
        return _page("Home", main, f"home:{source}", host)

    def _about(self, host: str, source: str) -> str:
        link = (f'<a href="http://{MIRROR}/">our mirror</a>' if source == HERALD
                else f'<a href="http://{WIRE}/">the wire service we share stories with</a>')
        text = {NEWS: "The News was founded by a group of printers who wanted the valley to have its own paper, "
                      "and it is still owned by a trust that reinvests every profit in its newsroom.",
                HERALD: "The Herald employs forty journalists and photographers, and its archive of front pages "
                        "goes back to the great storm that flooded the harbour district."}[source]
        return _page("About us", f"<h1>About us</h1><p>{text}</p><p>Visit {link}.</p>", f"about:{source}", host)

    def _section(self, host: str, source: str, section: str, sort: str) -> str:
        items = [a for a in self.articles[source].values() if a.section == section]
        if sort == "title":
            items.sort(key=lambda a: a.title)
        elif sort == "popular":
            items.sort(key=lambda a: hashlib.sha256(a.slug.encode()).digest())
        listed = "".join(f'<div class="item"><h2><a href="/articles/{a.slug}">{escape(a.title)}</a></h2>'
                         f"<p>{escape(a.summary)}</p></div>" for a in items)
        sorts = "".join(f'<li><a href="/section/{section}?sort={s}">by {s}</a></li>' for s in SORTS)
        main = f"<h1>{section.capitalize()}</h1><ul>{sorts}</ul>{listed}"
        return _page(section.capitalize(), main, f"section:{source}/{section}", host)

    def _article_page(self, host: str, article: Article, *, print_version: bool) -> str:
        body = "".join(f"<p>{escape(p)}</p>" for p in article.paragraphs)
        main = f"<article><h1>{escape(article.title)}</h1>{body}</article>"
        if print_version:
            return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(article.title)}</title>'
                    f'<meta name="content-id" content="{article.content_id}"></head><body class="print">{main}'
                    f"</body></html>")
        others = [a for a in self.articles[article.host].values() if a.slug != article.slug]
        rng = random.Random(f"{self.seed}/{article.host}/{article.slug}")
        related = "".join(
            f'<li><a href="/articles/{a.slug}?sid={_sid(article.slug, a.slug)}">{escape(a.title)}</a></li>'
            for a in rng.sample(others, 3)) if host != WIRE else ""
        extra = (f'<p><a href="/articles/{article.slug}/print">Print this article</a></p>'
                 f'<h3>Related</h3><ul>{related}</ul>') if host != WIRE else ""
        return _page(article.title, main + extra, article.content_id, host)

    def _calendar(self, path: str) -> tuple[str, str] | None:
        if path == "/":
            return (_page("Calendar", "<h1>Community calendar</h1><p>Concerts, markets, meetings and classes in "
                          "the valley towns, entered by the organisers themselves.</p>", "home:" + TRAP, TRAP),
                    f"home:{TRAP}")
        if not path.startswith("/calendar/"):
            return None
        try:
            day = date.fromisoformat(path.removeprefix("/calendar/"))
        except ValueError:
            return None
        if not 0 <= (day - TRAP_START).days < self.trap_days:
            return None
        links = "".join(f'<li><a href="/calendar/{(day + timedelta(days=d)).isoformat()}">{label}</a></li>'
                        for d, label in ((-1, "Previous day"), (1, "Next day"), (-30, "Month before"),
                                         (30, "Month after")))
        main = (f"<h1>Events on {day.isoformat()}</h1><p>There are no events on {day.isoformat()} yet. "
                "Organisers can add concerts, markets, meetings and classes to the community calendar, and "
                f"they appear here once a volunteer has checked them.</p><ul>{links}</ul>"
                f'<p><a href="/">All events</a></p>')
        return _page(f"Calendar {day.isoformat()}", main, "calendar:empty", TRAP), "calendar:empty"


def _sid(source: str, target: str) -> str:
    return hashlib.sha256(f"{source}>{target}".encode()).hexdigest()[:20]


def _page(title: str, main: str, content_id: str, host: str) -> str:
    """A page in its host's template: navigation, main content, footer."""
    name = {NEWS: "The News", HERALD: "Evening Herald", MIRROR: "Evening Herald", WIRE: "The Wire",
            TRAP: "Community Calendar"}.get(host, host)
    nav = "".join(f'<li><a href="{href}">{label}</a></li>'
                  for href, label in (("/", "Home"), ("/about", "About us"), ("/subscribe", "Subscribe")))
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)} | {name}</title>'
            f'<meta name="content-id" content="{escape(content_id)}"></head><body><header><div class="logo">'
            f"{name}</div><nav><ul>{nav}</ul></nav></header><main>{main}</main><footer><p>&copy; 2026 {name}. "
            f"All rights reserved.</p></footer></body></html>")


class SiteServer(ThreadingHTTPServer):
    """The site over HTTP on 127.0.0.1 (a free port), answering by each request's host (a proxy request
    names it in the request line, a direct one in `Host`); counts what it served."""

    daemon_threads = True

    def __init__(self, site: CrawlSite) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.site = site
        self.served: Counter[str] = Counter()
        """URL -> times served (200 or 404)."""
        self.contents: Counter[str] = Counter()
        """content id -> times served."""
        self.order: list[str] = []
        """URLs in the order served."""
        self.lock = threading.Lock()

    @property
    def proxy(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: SiteServer

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = self.path if self.path.startswith("http://") else f"http://{self.headers['Host']}{self.path}"
        status, body, content_id = self.server.site.render(url)
        with self.server.lock:
            self.server.served[url] += 1
            self.server.order.append(url)
            if content_id is not None:
                self.server.contents[content_id] += 1
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        return None
