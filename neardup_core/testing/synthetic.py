"""A deterministic synthetic crawl with known duplicates, for tests, benchmarks and `neardup demo`.

`generate_crawl(seed, scale=...)` returns `pages.fetched` events sorted by `fetched_at`; the same seed
gives the same crawl, byte for byte, without any corpus. At scale 1 it holds about 340 events:

- `www.dailyledger.example`: news articles, and same-host variants of many of them (a changed "updated"
  line at a trailing-slash URL, a view counter at `?ref=`, a rotated ad at `?utm_source=&utm_medium=`, a
  print version at `/print/...` in a minimal template, a few edited words at a mixed-case path, the page
  at `.../index.html`, appended reader comments at `?comments=all`);
- `herald.example`: distinct articles only; some are syndicated to the aggregator;
- `blog.pinecone.example`: distinct posts, plus reposts of some news articles (cross-host copies);
- `aggregator.example`: its own articles and syndicated copies of herald articles and blog posts;
- `archive.example`: a paginated list, `/list?page=N`, where each page lists other entries (`/list` is
  page 1 again);
- `calendar.townhall.example`: a trap serving four pages under many URLs: session ids (`?sid=<hex>`),
  sort orders (`?sort=asc|desc|date`), calendar dates (`/calendar/2026-11-03/`) and `;jsessionid=`;
- recrawls of some articles hours later, half with an unchanged body, half with a new "updated" line.

Every article is 150-400 words of generated prose on its own topic, so distinct articles share few
shingles. `generate_crawl_with_truth` also returns a `Truth` per event, and `truth_decisions` turns
those into the `Decision`s a perfect detector would publish (the canonical is always the earliest
fetched copy, which also ranks best: same or higher importance, fewer segments and parameters).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path
from typing import Any

import orjson

from neardup_core.hosts.urls import host_of
from neardup_core.messages import Decision, Verdict

CRAWL_START = datetime(2026, 11, 3, 8, 0, tzinfo=UTC)
CONTENT_TYPE = "text/html; charset=utf-8"

NEWS = "www.dailyledger.example"
HERALD = "herald.example"
BLOG = "blog.pinecone.example"
AGGREGATOR = "aggregator.example"
ARCHIVE = "archive.example"
TRAP = "calendar.townhall.example"


@dataclass(frozen=True, slots=True)
class Truth:
    """What one generated event is: which content it carries and what a perfect detector says of it."""

    url: str
    content: str
    """Id of the content (an article, a list page, a trap page); equal for all copies of it."""
    kind: str
    """original | variant | syndicated | page | trap | recrawl"""
    variant: str | None
    """For variants and trap pages: how this copy differs (print, edited, sid, calendar, ...)."""
    verdict: Verdict
    duplicate_of: str | None
    """URL of the canonical copy (fetched earlier) for duplicates, else None."""


# --- prose -------------------------------------------------------------------------------------------

TOPICS: dict[str, dict[str, list[str]]] = {
    "climate": {
        "nouns": ["glacier", "heatwave", "drought", "emissions target", "carbon levy", "flood barrier",
                  "wetland", "coastline", "rainfall record", "solar farm", "reforestation plan", "sea wall"],
        "verbs": ["warned about", "measured", "restored", "protected", "monitored", "funded", "mapped"],
        "adjs": ["coastal", "arid", "low-carbon", "seasonal", "fragile", "unprecedented", "regional"],
        "roles": ["hydrologist", "climate scientist", "park ranger", "environment minister"],
    },
    "football": {
        "nouns": ["striker", "midfield", "penalty shootout", "transfer window", "league table", "derby",
                  "goalkeeper", "youth academy", "stadium", "relegation battle", "captain", "corner kick"],
        "verbs": ["signed", "defeated", "substituted", "promoted", "scouted", "coached", "equalised against"],
        "adjs": ["defensive", "attacking", "injured", "unbeaten", "promoted", "relegated", "veteran"],
        "roles": ["head coach", "club chairman", "team captain", "sports analyst"],
    },
    "markets": {
        "nouns": ["bond yield", "quarterly earnings", "interest rate", "currency", "stock index",
                  "pension fund", "inflation figure", "trade deficit", "venture round", "merger", "dividend"],
        "verbs": ["raised", "cut", "acquired", "forecast", "audited", "hedged", "insured"],
        "adjs": ["volatile", "bullish", "bearish", "fiscal", "speculative", "quarterly", "leveraged"],
        "roles": ["chief economist", "fund manager", "central banker", "equity strategist"],
    },
    "space": {
        "nouns": ["satellite", "launch window", "lunar lander", "telescope", "orbit", "rover", "booster",
                  "space station", "asteroid survey", "heat shield", "docking port", "ground station"],
        "verbs": ["launched", "deployed", "photographed", "tracked", "docked with", "calibrated", "observed"],
        "adjs": ["orbital", "reusable", "infrared", "robotic", "crewed", "deep-space", "geostationary"],
        "roles": ["mission director", "astronomer", "flight engineer", "astronaut"],
    },
    "cooking": {
        "nouns": ["sourdough starter", "braise", "spice blend", "tasting menu", "fermentation crock",
                  "pastry", "broth", "herb garden", "cast-iron pan", "harvest festival", "street food stall"],
        "verbs": ["simmered", "roasted", "seasoned", "plated", "foraged", "pickled", "kneaded"],
        "adjs": ["smoky", "crisp", "fragrant", "seasonal", "slow-cooked", "tangy", "rustic"],
        "roles": ["head chef", "food critic", "baker", "restaurant owner"],
    },
    "health": {
        "nouns": ["vaccine trial", "clinic", "waiting list", "nurse rota", "blood test",
                  "screening programme", "pharmacy", "emergency ward", "sleep study", "nutrition guideline",
                  "outbreak"],
        "verbs": ["treated", "screened", "vaccinated", "diagnosed", "discharged", "referred", "studied"],
        "adjs": ["chronic", "preventive", "clinical", "rural", "overstretched", "experimental", "paediatric"],
        "roles": ["epidemiologist", "general practitioner", "hospital director", "health minister"],
    },
    "technology": {
        "nouns": ["chip factory", "data centre", "open-source library", "browser", "encryption standard",
                  "battery cell", "smartphone", "compiler", "network outage", "robot arm", "software update"],
        "verbs": ["shipped", "patched", "benchmarked", "open-sourced", "recalled", "encrypted", "rebuilt"],
        "adjs": ["wireless", "quantum", "embedded", "low-power", "distributed", "proprietary", "modular"],
        "roles": ["chief engineer", "security researcher", "product manager", "startup founder"],
    },
    "music": {
        "nouns": ["symphony", "vinyl reissue", "festival lineup", "string quartet", "album", "choir",
                  "concert hall", "jazz club", "recording session", "world tour", "opera"],
        "verbs": ["recorded", "premiered", "remastered", "toured", "composed", "headlined", "rehearsed"],
        "adjs": ["acoustic", "orchestral", "sold-out", "experimental", "folk", "operatic", "live"],
        "roles": ["conductor", "violinist", "record producer", "festival director"],
    },
    "travel": {
        "nouns": ["night train", "ferry route", "mountain pass", "hostel", "border crossing", "guidebook",
                  "airport terminal", "cycle path", "harbour", "pilgrimage trail", "tourist tax"],
        "verbs": ["reopened", "crossed", "explored", "booked", "rerouted", "hiked", "charted"],
        "adjs": ["scenic", "remote", "crowded", "overnight", "coastal", "alpine", "budget"],
        "roles": ["tour guide", "transport minister", "hotelier", "travel writer"],
    },
    "education": {
        "nouns": ["curriculum", "exam board", "scholarship", "lecture hall", "reading programme",
                  "teacher shortage", "school meal", "university ranking", "apprenticeship", "library"],
        "verbs": ["expanded", "reformed", "graded", "enrolled", "mentored", "inspected", "accredited"],
        "adjs": ["primary", "vocational", "bilingual", "underfunded", "postgraduate", "inclusive", "remote"],
        "roles": ["head teacher", "education secretary", "professor", "school inspector"],
    },
    "transport": {
        "nouns": ["tram line", "bus lane", "electric ferry", "freight corridor", "toll road", "bridge",
                  "signal upgrade", "ticket fare", "depot", "cycle hire scheme", "timetable"],
        "verbs": ["electrified", "delayed", "widened", "tendered", "rerouted", "inspected", "commissioned"],
        "adjs": ["suburban", "high-speed", "congested", "driverless", "regional", "night-time", "accessible"],
        "roles": ["city planner", "rail operator", "traffic engineer", "mayor"],
    },
    "elections": {
        "nouns": ["ballot", "polling station", "coalition", "manifesto", "turnout", "recount", "debate",
                  "campaign fund", "electoral roll", "constituency", "referendum"],
        "verbs": ["campaigned for", "endorsed", "contested", "canvassed", "pledged", "audited", "certified"],
        "adjs": ["marginal", "independent", "partisan", "provisional", "postal", "municipal", "landslide"],
        "roles": ["party leader", "returning officer", "pollster", "campaign manager"],
    },
}

FIRST_NAMES = ["Amara", "Bruno", "Chen", "Dalia", "Emeka", "Freya", "Gustavo", "Hana", "Idris", "Jonas",
               "Kirsten", "Luca", "Maya", "Nikolai", "Oona", "Priya", "Quentin", "Rosa", "Samir", "Tove",
               "Ulla", "Vikram", "Wren", "Ximena", "Yusuf", "Zofia"]
LAST_NAMES = ["Abara", "Brennan", "Castillo", "Dubois", "Eriksen", "Fontaine", "Gallagher", "Haddad",
              "Ivanova", "Jansen", "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov",
              "Quinn", "Rossi", "Sato", "Takahashi", "Umarov", "Vargas", "Whitfield", "Yilmaz", "Zhang"]
PLACES = ["Northbridge", "Calder Vale", "Port Ellery", "Ashford Heights", "Lowmoor", "Brackenfield",
          "Kestrel Bay", "Millhaven", "Stonecross", "Rivermead", "Eastwick", "Highgate Fen", "Oakridge",
          "Saltmarsh", "Thornbury", "Wyvern Point"]
ORGS = ["council", "ministry", "trust", "cooperative", "institute", "association", "agency", "board"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
CONNECTORS = ["Meanwhile", "However", "In a statement", "According to local records", "Earlier this year",
              "By contrast", "For now", "In the meantime", "As a result", "Since then"]

SENTENCES = [
    "{P}, a {role} in {L}, said the {a} {n} had {v} the {n2} faster than anyone expected.",
    "The {L} {org} {v} the {n} on {day}, ending months of uncertainty over the {n2}.",
    "{C}, the {a} {n} is expected to cost about {num} million over the next {small} years.",
    "Residents of {L} {v} the {n} after a {a} winter that left the {n2} badly damaged.",
    "{P} told reporters that the {n} was \"only the first step\" and that the {n2} would follow.",
    "A report by the {L} {org} found that {pct} percent of the {n2} projects were behind schedule.",
    "{C}, a {a} {n} near {L} drew crowds who wanted to see the {n2} for themselves.",
    "The {role} {P} {v} the {n} and called for a review of every {a} {n2} in the region.",
    "Nobody in {L} remembers a {n} quite like this one, {P} said, pointing at the {a} {n2}.",
    "Figures published on {day} show the {n} grew by {pct} percent while the {n2} barely moved.",
    "{C}, the {org} in {L} has {v} the {a} {n2} and plans to do the same with the {n}.",
    "Some experts doubt that the {n} can be {v} in time, citing the {a} state of the {n2}.",
    "The decision to back the {a} {n} was taken after {small} hours of debate in {L}.",
    "{P} and {P2} have {v} the {n} together since {year}, long before the {n2} became news.",
    "Volunteers {v} the {n} at dawn, and by noon the {a} {n2} was open to the public again.",
    "It is the {ordinal} time this decade that the {L} {n} has been {v} by the {org}.",
    "{C}, questions remain about who will pay for the {n2} once the {a} {n} is finished.",
    "Local businesses in {L} say the {a} {n} brought {num} new customers in a single month.",
    "The {org} insists the {n2} is safe, but {P}, a {role}, wants an independent {n}.",
    "Visitors from {L2} travelled to {L} to watch the {a} {n} for the first time.",
    "Asked whether the {n2} could wait, {P} shrugged and said {L} had waited long enough.",
    "Plans for a {a} {n} in {L2} were shelved in {year} and revived only last spring.",
    "At a packed meeting on {day} evening, {small} speakers urged the {org} to rethink the {n}.",
    "{P} keeps a notebook of every {n} in the district and counts {num} entries so far.",
    "Without the {n2}, one {role} warned, the {a} {n} in {L} would not survive another year.",
    "Neighbouring {L2} chose a different path and {v} its own {n2} instead.",
    "The first {n} arrived in {L} by rail, and the {a} {n2} followed a week later.",
    "Under the new rules, every {n2} must be {v} before the {org} signs off on the {n}.",
    "Opponents in {L} gathered {num} signatures against the {a} {n} within a fortnight.",
    "{P}, whose family has lived in {L} for generations, {v} the {n} with quiet pride.",
    "What began as a {a} experiment with the {n} has become a fixture of life in {L2}.",
    "The {org} will publish its findings on the {n2} in {small} weeks, {P} confirmed.",
]


class _Prose:
    """Sentences on one topic from templates; a fresh random stream per article keeps articles apart."""

    def __init__(self, rng: random.Random, topic: str) -> None:
        self.rng = rng
        self.words = TOPICS[topic]

    def person(self) -> str:
        return f"{self.rng.choice(FIRST_NAMES)} {self.rng.choice(LAST_NAMES)}"

    def sentence(self) -> str:
        r, w = self.rng, self.words
        n, n2 = r.sample(w["nouns"], 2)
        return r.choice(SENTENCES).format(
            P=self.person(), P2=self.person(), role=r.choice(w["roles"]), L=r.choice(PLACES),
            L2=r.choice(PLACES), org=r.choice(ORGS), n=n, n2=n2, v=r.choice(w["verbs"]),
            a=r.choice(w["adjs"]), day=r.choice(DAYS), C=r.choice(CONNECTORS), num=r.randint(2, 900),
            small=r.randint(2, 12), pct=r.randint(3, 97), year=r.randint(1998, 2024),
            ordinal=r.choice(["second", "third", "fourth", "fifth"]),
        )

    def paragraphs(self, words: int) -> list[str]:
        out: list[str] = []
        count = 0
        while count < words:
            para = " ".join(self.sentence() for _ in range(self.rng.randint(2, 4)))
            out.append(para)
            count += len(para.split())
        return out

    def title(self) -> str:
        r, w = self.rng, self.words
        return f"{r.choice(w['adjs']).capitalize()} {r.choice(w['nouns'])} {r.choice(w['verbs'])} in " \
               f"{r.choice(PLACES)}"


@dataclass(frozen=True, slots=True)
class _Article:
    key: str
    host: str
    url: str
    slug: str
    title: str
    author: str
    published: datetime
    paragraphs: tuple[str, ...]


def _article(rng: random.Random, host: str, path: str, index: int, topic: str,
             published: datetime) -> _Article:
    prose = _Prose(random.Random(rng.getrandbits(64)), topic)
    title = prose.title()
    slug = "-".join(title.lower().replace(",", "").split()[:6]) + f"-{index}"
    # 150-400 words in all: the paragraphs overshoot their target by at most one paragraph (< 100 words).
    paragraphs = prose.paragraphs(prose.rng.randint(150, 290))
    return _Article(f"{host}/{slug}", host, f"https://{host}/{path}/{slug}", slug, title, prose.person(),
                    published, tuple(paragraphs))


# --- templates --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Site:
    host: str
    name: str
    css: str
    nav: tuple[str, ...]
    footer: str
    ads: tuple[str, ...]
    importance: float | None


SITES = {
    NEWS: _Site(NEWS, "The Daily Ledger", "ledger", ("World", "Business", "Science", "Sport", "Culture",
                "Opinion"), "The Daily Ledger is published by Ledger Media Group, 12 Quay Street.",
                ("Subscribe for 1 euro a week", "Win a weekend in the mountains", "New: the Ledger app",
                 "Save 30% on garden furniture", "Car insurance in five minutes"), 0.8),
    HERALD: _Site(HERALD, "Evening Herald", "herald", ("Home", "Local", "National", "Arts", "Weather"),
                  "Evening Herald, an independent newspaper since 1911.",
                  ("Herald crossword book out now", "Local plumbers you can trust"), 0.7),
    BLOG: _Site(BLOG, "Pinecone Notes", "pinecone", ("Posts", "About", "Archive", "Contact"),
                "Pinecone Notes is a personal blog. Opinions are my own.",
                ("Support this blog on Patreon",), 0.6),
    AGGREGATOR: _Site(AGGREGATOR, "Newsfeed Aggregator", "agg", ("Top", "Latest", "Popular", "Sources"),
                      "Aggregator collects stories from partner publications under licence.",
                      ("Try Aggregator Premium", "Advertise with us", "Download our browser extension"),
                      0.3),
    ARCHIVE: _Site(ARCHIVE, "Regional Archive", "archive", ("Catalogue", "Collections", "Visit", "Help"),
                   "The Regional Archive keeps records of the county since 1850.", ("Become a friend",),
                   0.5),
    TRAP: _Site(TRAP, "Townhall Community Calendar", "townhall", ("Events", "Calendar", "Forum", "Members"),
                "Townhall is run by volunteers.", ("Hall hire from 20 euros",), None),
}


def _links(host: str, titles: Iterable[str]) -> str:
    return "".join(f'<li><a href="https://{host}/articles/{i}">{escape(t)}</a></li>'
                   for i, t in enumerate(titles))


def _page(site: _Site, title: str, main: str, rng: random.Random, *, ad: str | None = None,
          views: int | None = None, extra: str = "", link_query: str = "") -> str:
    """A full page in the site's template: navigation, ad, main content, sidebar, footer."""
    nav = "".join(f'<li><a href="/{n.lower()}{link_query}">{n}</a></li>' for n in site.nav)
    most_read = _links(site.host, (f"{rng.choice(PLACES)} {rng.choice(['update', 'report', 'review'])}"
                                   for _ in range(5)))
    views = views if views is not None else rng.randint(100, 90_000)
    ad = ad if ad is not None else rng.choice(site.ads)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)} | {site.name}'
        f'</title></head><body class="{site.css}"><header><div class="logo">{site.name}</div><nav><ul>{nav}'
        f'</ul></nav></header><div class="ad ad-top"><a href="/ads/1">{escape(ad)}</a></div>'
        f"<main>{main}</main>{extra}"
        f'<aside class="sidebar"><h3>Most read</h3><ul>{most_read}</ul><p class="views">{views:,} views</p>'
        f'</aside><footer><p>{escape(site.footer)}</p><p>&copy; 2026 {site.name}. All rights reserved.</p>'
        f'<ul><li><a href="/privacy">Privacy</a></li><li><a href="/terms">Terms</a></li></ul></footer>'
        f"</body></html>"
    )


def _print_page(title: str, main: str) -> str:
    """The minimal template of a print version: no navigation, ads or sidebar."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'</head><body class="print">{main}<p class="print-note">Printed from the web edition.</p>'
            f"</body></html>")


def _article_html(article: _Article, *, updated: datetime | None = None,
                  paragraphs: Iterable[str] | None = None, comments: Iterable[str] = ()) -> str:
    updated = updated or article.published
    body = "".join(f"<p>{escape(p)}</p>" for p in (paragraphs or article.paragraphs))
    said = "".join(f'<div class="comment"><p>{escape(c)}</p></div>' for c in comments)
    said = f'<section class="comments"><h2>Reader comments</h2>{said}</section>' if said else ""
    return (f"<article><h1>{escape(article.title)}</h1><p class=\"byline\">By {escape(article.author)}. "
            f"Published {article.published:%Y-%m-%d %H:%M}, updated {updated:%Y-%m-%d %H:%M}.</p>"
            f"{body}{said}</article>")


# --- the crawl --------------------------------------------------------------------------------------

VARIANTS = ("updated", "counter", "ads", "print", "edited", "index", "comments")


class _Crawl:
    def __init__(self, seed: int, scale: int) -> None:
        self.rng = random.Random(seed)
        self.scale = scale
        self.rows: list[tuple[datetime, int, dict[str, Any], Truth]] = []
        self.articles: dict[str, list[_Article]] = {}

    def emit(self, at: datetime, url: str, body: str, truth: Truth, importance: float | None) -> None:
        event: dict[str, Any] = {"url": url, "body": body, "fetched_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                 "status": 200, "content_type": CONTENT_TYPE}
        if importance is not None:
            event["importance"] = importance
        self.rows.append((at.replace(microsecond=0), len(self.rows), event, truth))

    def at(self, low_min: float, high_min: float, after: datetime = CRAWL_START) -> datetime:
        return after + timedelta(seconds=round(self.rng.uniform(low_min, high_min) * 60))

    def originals(self, host: str, count: int, path: str) -> None:
        site = SITES[host]
        topics = list(TOPICS)
        out = []
        for i in range(count):
            published = self.at(0, 180)
            article = _article(self.rng, host, path, i, topics[(i + len(host)) % len(topics)], published)
            url = article.url
            self.emit(published, url, _page(site, article.title, _article_html(article), self.rng),
                      Truth(url, article.key, "original", None, "unique", None), site.importance)
            out.append(article)
        self.articles[host] = out

    def variants(self) -> None:
        site = SITES[NEWS]
        importance = (site.importance or 0) - 0.05
        for i, article in enumerate(self.articles[NEWS]):
            kinds = [VARIANTS[i % len(VARIANTS)]] if i < 3 * len(VARIANTS) else []
            if self.rng.random() < 0.25:
                kinds.append(self.rng.choice([k for k in VARIANTS if k not in kinds]))
            for kind in kinds:
                url, body, verdict = self._variant(article, kind, site)
                at = self.at(5, 120, article.published)
                truth = Truth(url, article.key, "variant", kind, verdict, article.url)
                self.emit(at, url, body, truth, importance)

    def _variant(self, article: _Article, kind: str, site: _Site) -> tuple[str, str, Verdict]:
        base = article.url
        rng = self.rng
        if kind == "updated":
            later = article.published + timedelta(minutes=rng.randint(20, 300))
            return base + "/", _page(site, article.title, _article_html(article, updated=later), rng), \
                "near_duplicate"
        if kind == "counter":
            body = _page(site, article.title, _article_html(article), rng, views=rng.randint(90_001, 500_000))
            return f"{base}?ref={rng.choice(['homepage', 'sidebar', 'newsletter', 'search'])}", body, \
                "exact_duplicate"
        if kind == "ads":
            body = _page(site, article.title, _article_html(article), rng, ad=rng.choice(site.ads))
            source = rng.choice(["twitter", "mastodon", "newsletter", "partner"])
            return f"{base}?utm_source={source}&utm_medium=social", body, "exact_duplicate"
        if kind == "print":
            return f"https://{NEWS}/print/articles/{article.slug}", _print_page(article.title,
                                                                                _article_html(article)), \
                "exact_duplicate"
        if kind == "edited":
            body = _page(site, article.title, _article_html(article, paragraphs=_edit(article, rng)), rng)
            return f"https://{NEWS}/Articles/{article.slug.title()}", body, "near_duplicate"
        if kind == "index":
            return f"{base}/index.html", _page(site, article.title, _article_html(article), rng), \
                "exact_duplicate"
        comments = [_Prose(rng, "elections").sentence() for _ in range(rng.randint(2, 3))]
        body = _page(site, article.title, _article_html(article, comments=comments), rng)
        return f"{base}?comments=all", body, "near_duplicate"

    def syndicate(self, source: str, target: str, count: int, path: str) -> None:
        site = SITES[target]
        importance = (site.importance or 0) - 0.05
        for article in self.rng.sample(self.articles[source], count):
            url = f"https://{target}/{path}/{article.slug}"
            credit = (f'<div class="credit">Originally published by {SITES[source].name}. '
                      f'<a href="{article.url}">Read the original</a>.</div>')
            body = _page(site, article.title, _article_html(article), self.rng, extra=credit)
            truth = Truth(url, article.key, "syndicated", None, "exact_duplicate", article.url)
            self.emit(self.at(10, 180, article.published), url, body, truth, importance)

    def paginated(self, pages: int) -> None:
        site = SITES[ARCHIVE]
        prose = _Prose(random.Random(self.rng.getrandbits(64)), "education")
        entries = [(prose.title(), " ".join(prose.sentence() for _ in range(2))) for _ in range(10 * pages)]
        first = f"https://{ARCHIVE}/list"
        for page in range(1, pages + 1):
            listed = enumerate(entries[(page - 1) * 10: page * 10], start=(page - 1) * 10)
            items = "".join(f'<li><h2><a href="/item/{j}">{escape(t)}</a></h2><p>{escape(s)}</p></li>'
                            for j, (t, s) in listed)
            main = f"<h1>Catalogue, page {page} of {pages}</h1><ol>{items}</ol>"
            body = _page(site, f"Catalogue page {page}", main, self.rng)
            url = f"{first}?page={page}"
            if page == 1:
                self.emit(CRAWL_START, first, body, Truth(first, "archive/1", "page", None, "unique", None),
                          site.importance)
                truth = Truth(url, "archive/1", "page", "first page", "exact_duplicate", first)
            else:
                truth = Truth(url, f"archive/{page}", "page", None, "unique", None)
            self.emit(self.at(1, 150), url, body, truth, site.importance)

    def trap(self, per_page: int) -> None:
        site = SITES[TRAP]
        prose = _Prose(random.Random(self.rng.getrandbits(64)), "music")
        texts = {name: prose.paragraphs(160) for name in ("events", "calendar", "forum", "members")}
        canon = {"events": "/events", "calendar": "/calendar/", "forum": "/forum/topic-12",
                 "members": "/members"}
        for name, path in canon.items():
            url = f"https://{TRAP}{path}"
            self.emit(self.at(0, 10), url, self._trap_page(site, name, texts[name], None, ""),
                      Truth(url, f"trap/{name}", "trap", None, "unique", None), site.importance)
            seen = {url}
            while len(seen) < per_page + 1:
                url, variant, date = self._trap_url(name, path)
                if url in seen:
                    continue
                seen.add(url)
                query = url[url.index("?"):] if "?" in url else ""
                body = self._trap_page(site, name, texts[name], date, query)
                verdict: Verdict = "near_duplicate" if date else "exact_duplicate"
                truth = Truth(url, f"trap/{name}", "trap", variant, verdict, f"https://{TRAP}{path}")
                self.emit(self.at(15, 300), url, body, truth, site.importance)

    def _trap_url(self, name: str, path: str) -> tuple[str, str, str | None]:
        rng = self.rng
        sid = f"sid={rng.getrandbits(128):032x}"
        sort = f"sort={rng.choice(['asc', 'desc', 'date'])}"
        base = f"https://{TRAP}"
        if name == "calendar":
            date = (CRAWL_START + timedelta(days=rng.randint(-400, 400))).strftime("%Y-%m-%d")
            query = rng.choice(["", f"?{sid}", f"?{sid}&{sort}"])
            return f"{base}/calendar/{date}/{query}", "calendar", date
        if name == "forum":
            token = f"{rng.getrandbits(96):024X}"
            query = rng.choice(["", f"?{sort}"])
            return f"{base}{path};jsessionid={token}{query}", "jsessionid", None
        query = rng.choice([f"?{sid}", f"?{sort}", f"?{sid}&{sort}", f"?{sort}&{sid}"])
        return f"{base}{path}{query}", "sid" if "sid" in query else "sort", None

    def _trap_page(self, site: _Site, name: str, text: list[str], date: str | None, query: str) -> str:
        heading = f"Calendar for {date}" if date else f"Townhall {name}"
        body = "".join(f"<p>{escape(p)}</p>" for p in text)
        main = f"<h1>{heading}</h1>{body}"
        return _page(site, heading, main, random.Random(name), link_query=query, views=0)

    def recrawls(self, count: int) -> None:
        pool = self.articles[NEWS] + self.articles[HERALD]
        for article in self.rng.sample(pool, count):
            site = SITES[article.host]
            at = self.at(300, 420)
            changed = self.rng.random() < 0.5
            html = _article_html(article, updated=at if changed else None)
            url = article.url
            truth = Truth(url, article.key, "recrawl", "updated" if changed else None, "unique", None)
            self.emit(at, url, _page(site, article.title, html, self.rng), truth, site.importance)


def _edit(article: _Article, rng: random.Random) -> list[str]:
    """The article with three words replaced."""
    paragraphs = list(article.paragraphs)
    for _ in range(3):
        i = rng.randrange(len(paragraphs))
        words = paragraphs[i].split()
        words[rng.randrange(len(words))] = rng.choice(["reportedly", "notably", "again", "quietly"])
        paragraphs[i] = " ".join(words)
    return paragraphs


def generate_crawl_with_truth(seed: int = 7, *, scale: int = 1) -> tuple[list[dict[str, Any]], list[Truth]]:
    """The synthetic crawl (`pages.fetched` events, by `fetched_at`) and the truth of each event."""
    if scale < 1:
        raise ValueError("scale must be at least 1")
    crawl = _Crawl(seed, scale)
    crawl.originals(NEWS, 40 * scale, "articles")
    crawl.originals(HERALD, 30 * scale, "story")
    crawl.originals(BLOG, 25 * scale, "posts")
    crawl.originals(AGGREGATOR, 15 * scale, "read")
    crawl.variants()
    crawl.syndicate(HERALD, AGGREGATOR, 8 * scale, "syndicated")
    crawl.syndicate(BLOG, AGGREGATOR, 6 * scale, "syndicated")
    crawl.syndicate(NEWS, BLOG, 4 * scale, "reposts")
    crawl.paginated(12 * scale)
    crawl.trap(40 * scale)
    crawl.recrawls(8 * scale)
    rows = sorted(crawl.rows, key=lambda row: (row[0], row[1]))
    return [row[2] for row in rows], [row[3] for row in rows]


def generate_crawl(seed: int = 7, *, scale: int = 1) -> list[dict[str, Any]]:
    """The synthetic crawl as `pages.fetched` events, sorted by `fetched_at`."""
    return generate_crawl_with_truth(seed, scale=scale)[0]


def truth_decisions(events: list[dict[str, Any]], truths: list[Truth]) -> list[Decision]:
    """The decisions a perfect detector publishes for the crawl, in event order. A recrawl is a new
    revision of its URL. Distances are 0 for exact and 3 for near duplicates (stand-ins)."""
    revisions: dict[str, int] = {}
    out = []
    for event, truth in zip(events, truths, strict=True):
        revision = revisions[truth.url] = revisions.get(truth.url, 0) + 1
        distance = None if truth.duplicate_of is None else 0 if truth.verdict == "exact_duplicate" else 3
        out.append(Decision(
            url=truth.url, host=host_of(truth.url), verdict=truth.verdict, duplicate_of=truth.duplicate_of,
            distance=distance, simhash=None, text_sha256=None, body_sha256=None,
            reason=f"synthetic truth: {truth.kind}" + (f" ({truth.variant})" if truth.variant else ""),
            revision=revision, complete=True, fetched_at=event["fetched_at"], decided_at=event["fetched_at"],
        ))
    return out


def write_jsonl(events: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Writes events one JSON object a line; returns how many."""
    count = 0
    with open(path, "wb") as out:
        for event in events:
            out.write(orjson.dumps(event) + b"\n")
            count += 1
    return count
