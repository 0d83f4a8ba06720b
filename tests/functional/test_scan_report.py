"""`neardup scan --report`: the HTML report of a generated crawl against the files the same scan wrote.

The numbers, clusters, hosts and histograms in the page are checked against the decisions, host
signals and rejects files (each URL's final decision worked out here, independently of the report's
code), a URL carrying `<script>` must come out as text, and the page is opened in headless Chromium:
the rendered DOM shows the counts, and its screenshot is what `docs/report.png` is made from
(`NEARDUP_DOCS_SCREENSHOTS=1`).
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import lxml.html
import orjson
import pytest
from PIL import Image

from neardup_core.hosts.urls import url_identity
from neardup_core.testing.synthetic import TRAP, generate_crawl
from streams.cli.report import MAX_CLUSTERS, MAX_MEMBERS
from tests.browser import docs_screenshot, render

ROOT = Path(__file__).resolve().parents[2]
EVIL = 'https://evil.example/<script>alert("x")</script>?a=1&b=<img src=x onerror=alert(1)>'
BAD_LINES = [b"{broken json", b'{"url": "https://x.example/a"}']
DUPLICATES = ("exact_duplicate", "near_duplicate")


def run_scan(tmp: Path, name: str, crawl: Path, *outputs: str) -> Path:
    """Scans `crawl` into `tmp/name.*` with the given outputs (`out`, `rejects`, `hosts`) and a report."""
    paths = {o: tmp / f"{name}.{o}.jsonl" for o in ("out", *outputs)}
    report = tmp / f"{name}.html"
    cmd = [sys.executable, "-m", "streams.cli", "scan", str(crawl), "--state", str(tmp / f"{name}.state"),
           *(a for o, p in paths.items() for a in (f"--{o}", str(p))), "--report", str(report),
           "--no-progress", "--processes", "1"]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return report


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    events = generate_crawl(seed=21)
    # an untrusted URL, a copy of the first page: it lands in that page's cluster
    events.append(dict(events[0], url=EVIL, fetched_at="2026-11-03T23:00:00Z"))
    crawl = tmp / "crawl.jsonl"
    crawl.write_bytes(b"\n".join([*(orjson.dumps(e) for e in events), *BAD_LINES]) + b"\n")
    run_scan(tmp, "scan", crawl, "rejects", "hosts")
    return tmp


def final(tmp: Path) -> dict[str, dict]:
    """Each URL's final decision from the decisions file: by URL identity, the highest revision."""
    out: dict[str, dict] = {}
    for line in (tmp / "scan.out.jsonl").read_bytes().splitlines():
        d = orjson.loads(line)
        key = url_identity(d["url"])
        if key not in out or d["revision"] >= out[key]["revision"]:
            out[key] = d
    return out


def expected_clusters(decisions: dict[str, dict]) -> dict[str, set[str]]:
    """Canonical URL -> its duplicates' URLs, following duplicate_of (the generated crawl has no cycles)."""
    members: dict[str, set[str]] = {}
    for key, d in decisions.items():
        if d["verdict"] not in DUPLICATES:
            continue
        seen = {key}
        at = url_identity(d["duplicate_of"])
        while at in decisions and decisions[at]["verdict"] in DUPLICATES:
            assert at not in seen, f"a cycle through {at}"
            seen.add(at)
            at = url_identity(decisions[at]["duplicate_of"])
        canonical = decisions[at]["url"] if at in decisions else at
        members.setdefault(canonical, set()).add(d["url"])
    return members


def page(tmp: Path) -> lxml.html.HtmlElement:
    return lxml.html.fromstring((tmp / "scan.html").read_text(encoding="utf-8"))


def tiles(doc: lxml.html.HtmlElement) -> dict[str, int]:
    """The verdict tiles: their attribute and the number they show must agree."""
    out = {}
    for tile in doc.cssselect("#verdicts .tile"):
        shown = int(tile.cssselect(".n")[0].text_content().replace(",", ""))
        assert shown == int(tile.get("data-count")), tile.get("data-verdict")
        out[tile.get("data-verdict")] = shown
    return out


def test_counts_are_the_decisions_files(scanned: Path) -> None:
    decisions = final(scanned)
    want = Counter(d["verdict"] for d in decisions.values())
    rejects = len((scanned / "scan.rejects.jsonl").read_bytes().splitlines())
    got = tiles(page(scanned))
    assert got == {"unique": want["unique"], "exact_duplicate": want["exact_duplicate"],
                   "near_duplicate": want["near_duplicate"], "skipped": want["skipped"], "rejected": rejects}
    assert want["exact_duplicate"] > 100 and want["near_duplicate"] > 20 and rejects == len(BAD_LINES)


def test_clusters_are_the_decisions_chains(scanned: Path) -> None:
    want = expected_clusters(final(scanned))
    shown = page(scanned).cssselect("details.cluster")
    sizes = sorted((len(m) + 1 for m in want.values()), reverse=True)
    assert [int(c.get("data-size")) for c in shown] == sizes[:MAX_CLUSTERS]
    assert len(want) > MAX_CLUSTERS  # so the cut is exercised
    for cluster in shown:
        canonical = cluster.get("data-canonical")
        assert int(cluster.get("data-size")) == len(want[canonical]) + 1, canonical
        urls = [row.get("data-url") for row in cluster.cssselect("tr.member")]
        assert len(urls) == min(len(want[canonical]), MAX_MEMBERS)
        assert set(urls) <= want[canonical], canonical
    # the trap's four pages are the four largest clusters
    assert all(TRAP in c.get("data-canonical") for c in shown[:4])


def test_hosts_by_penalty_with_their_rules(scanned: Path) -> None:
    last: dict[str, dict] = {}
    for line in (scanned / "scan.hosts.jsonl").read_bytes().splitlines():
        signal = orjson.loads(line)
        last[signal["host"]] = signal
    rows = page(scanned).cssselect("tr.host")
    assert [r.get("data-host") for r in rows] == sorted(last, key=lambda h: (-last[h]["penalty"],
                                                                             -last[h]["pages"], h))
    assert rows[0].get("data-host") == TRAP and float(rows[0].get("data-penalty")) == last[TRAP]["penalty"] > 0.5
    shown = [" ".join(li.text_content().split()) for li in rows[0].cssselect("li.rule")]
    assert len(shown) == len(last[TRAP]["url_rules"]) >= 3
    for text, rule in zip(shown, last[TRAP]["url_rules"], strict=True):
        assert text.startswith(f"{rule['kind']} {rule['param'] or ''}".strip()), text
        assert f"support {rule['support']}," in text
    kinds = {(r["kind"], r["param"]) for r in last[TRAP]["url_rules"]}
    assert {("ignore_query_param", "sid"), ("strip_path_param", "jsessionid")} <= kinds


def test_histograms_count_the_duplicates(scanned: Path) -> None:
    decisions = final(scanned).values()
    doc = page(scanned)

    def bars(chart: str) -> Counter[tuple[str, str]]:
        return Counter({(r.get("data-series"), r.get("data-label")): int(r.get("data-count"))
                        for r in doc.cssselect(f"svg#{chart} rect")})

    distance = Counter((d["verdict"], str(d["distance"])) for d in decisions
                       if d["verdict"] in DUPLICATES and d["distance"] is not None)
    assert bars("distance") == distance
    jaccard = [d["jaccard"] for d in decisions if d["verdict"] == "near_duplicate" and d["jaccard"] is not None]
    got = bars("jaccard")
    assert sum(got.values()) == len(jaccard) > 0
    for (_, label), n in got.items():  # each bin [start, start + 0.025), 1.0 in the last one
        low = float(label)
        assert n == sum(1 for j in jaccard if low <= j < low + 0.025 or (j == 1.0 and low == 0.975)), label


def test_rejects_settings_and_files(scanned: Path) -> None:
    doc = page(scanned)
    shown = [tuple(td.text_content() for td in r.cssselect("td")) for r in doc.cssselect("table.rejects tbody tr")]
    rejects = Counter((r["stage"], r["error"]) for r in map(orjson.loads, (scanned / "scan.rejects.jsonl").read_bytes()
                                                            .splitlines()))
    assert sorted(shown) == sorted((stage, error, str(n)) for (stage, error), n in rejects.items())
    assert any(error.startswith("event is not JSON") for _, error in rejects)
    settings = {r[0].text_content(): r[1].text_content() for r in doc.cssselect("table.settings tbody tr")}
    assert settings["NEARDUP_K"] == "3" and settings["NEARDUP_MINHASH"] == "True"
    assert settings["index design"].startswith("k3-")
    assert [li.text_content() for li in doc.cssselect("ul.files li")] == [str(scanned / "crawl.jsonl")]


def test_untrusted_urls_are_escaped_and_the_page_is_self_contained(scanned: Path) -> None:
    raw = (scanned / "scan.html").read_text(encoding="utf-8")
    assert "<script" not in raw.lower() and "<img" not in raw.lower()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in raw
    doc = page(scanned)
    assert not doc.cssselect("script, img, link, iframe, object, [src]")
    (row,) = [r for r in doc.cssselect("tr.member") if r.get("data-url") == EVIL]
    assert row.cssselect("a.url")[0].text_content() == EVIL
    # the only references out of the page are links to the pages decided
    hrefs = {a.get("href") for a in doc.cssselect("a[href]")}
    assert hrefs and all(h.startswith(("http://", "https://")) for h in hrefs)


def test_a_report_without_a_hosts_file_shows_the_same_hosts(scanned: Path) -> None:
    report = run_scan(scanned, "bare", scanned / "crawl.jsonl")
    bare = lxml.html.fromstring(report.read_text(encoding="utf-8"))

    def hosts(doc: lxml.html.HtmlElement) -> list[tuple[str | None, str | None, str]]:
        return [(r.get("data-host"), r.get("data-penalty"), " ".join(r.text_content().split()))
                for r in doc.cssselect("tr.host")]

    assert hosts(bare) == hosts(page(scanned))
    assert tiles(bare) == tiles(page(scanned))


def test_chromium_renders_the_counts(scanned: Path) -> None:
    report = scanned / "scan.html"
    rendered = lxml.html.fromstring(render(report))
    assert tiles(rendered) == tiles(page(scanned))
    assert not rendered.cssselect("script")
    assert [c.get("data-size") for c in rendered.cssselect("details.cluster")][:1] == \
        [c.get("data-size") for c in page(scanned).cssselect("details.cluster")][:1]
    assert any(a.text_content() == EVIL for a in rendered.cssselect("a.url"))

    png = docs_screenshot(report, "report.png", scanned, 1200, 1600)
    with Image.open(png) as image:
        assert image.size == (1200, 1600)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 50  # a drawn page, not a blank one
