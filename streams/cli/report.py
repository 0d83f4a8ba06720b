"""`neardup scan --report`: one self-contained HTML page about a scan.

`ScanReport` gathers, while the scan runs, what the page shows from what the scan writes anyway: each
URL's final decision (`neardup_core.dedup.clusters`), each host's last signal, the rejections by
reason. `render_html` turns it and the scan's summary into one HTML file with no external script,
font, style sheet or image (the histograms are inline SVG), readable on a machine that reaches nothing.
Its Content-Security-Policy allows no script at all, and every value from the input (URLs, hosts,
reasons, file names) is HTML-escaped: URLs are untrusted, and only http(s) URLs become links.

The report covers the decisions of this run: with a `--state` of an earlier run, a cluster's canonical
may be a page decided then, shown by its URL only. It keeps one decision per URL in memory.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from neardup_core.dedup.clusters import Cluster, clusters, keep_final
from neardup_core.messages import VERDICTS, Decision, HostSignal, Rejection
from streams.settings import Settings, env_name

if TYPE_CHECKING:
    from streams.cli.scan import ScanSummary

MAX_CLUSTERS = 20
MAX_MEMBERS = 10
OPEN_CLUSTERS = 1
MAX_HOSTS = 25
MAX_REASONS = 25
REASON_CHARS = 160
JACCARD_BIN = 0.025

# the settings that decide a scan (those CoreSettings is built from), shown by their variables
SETTING_FIELDS = ("k", "tables", "expected_pages", "shingle_size", "min_features", "minhash", "bands", "rows",
                  "jaccard", "max_body_bytes", "max_url_bytes", "max_message_bytes", "decision_timeout_s",
                  "host_window_s")

COLORS = {"unique": "#2f855a", "exact_duplicate": "#c53030", "near_duplicate": "#dd6b20", "skipped": "#718096",
          "rejected": "#6b46c1"}


@dataclass
class ScanReport:
    """What the report shows, gathered as the scan runs: add every decision line, host signal and rejection."""

    files: list[str]
    settings: list[tuple[str, str]]
    final: dict[str, Decision] = field(default_factory=dict)
    hosts: dict[str, HostSignal] = field(default_factory=dict)
    rejects: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add_decision(self, decision: Decision) -> None:
        keep_final(self.final, decision)

    def add_signal(self, signal: HostSignal) -> None:
        """Keeps each host's last signal (the topic is compacted by host: the last one wins)."""
        self.hosts[signal.host] = signal

    def add_rejection(self, rejection: Rejection) -> None:
        self.rejects[(rejection.stage, rejection.error[:REASON_CHARS])] += 1

    def verdicts(self) -> Counter[str]:
        """URLs per verdict of their final decision."""
        return Counter(d.verdict for d in self.final.values())

    def clusters(self) -> list[Cluster]:
        return clusters(self.final)

    def hosts_by_penalty(self) -> list[HostSignal]:
        return sorted(self.hosts.values(), key=lambda s: (-s.penalty, -s.pages, s.host))

    def distance_histogram(self) -> dict[str, list[int]]:
        """Duplicates per SimHash distance to what they duplicate, by verdict (a band-only match has none)."""
        known = [d for d in self.final.values() if d.verdict in ("exact_duplicate", "near_duplicate")
                 and d.distance is not None]
        top = max((d.distance or 0 for d in known), default=0)
        out = {v: [0] * (top + 1) for v in ("exact_duplicate", "near_duplicate")}
        for d in known:
            out[d.verdict][d.distance or 0] += 1
        return out

    def jaccard_histogram(self) -> tuple[list[float], list[int]]:
        """Near duplicates per bin of their Jaccard estimate (bins of `JACCARD_BIN` up to 1, 1 in the last)."""
        values = [d.jaccard for d in self.final.values() if d.verdict == "near_duplicate" and d.jaccard is not None]
        if not values:
            return [], []
        bins = round(1 / JACCARD_BIN)
        low = min(math.floor(min(values) / JACCARD_BIN + 1e-9), bins - 1)
        counts = [0] * (bins - low)
        for value in values:
            counts[min(math.floor(value / JACCARD_BIN + 1e-9), bins - 1) - low] += 1
        return [round((low + i) * JACCARD_BIN, 3) for i in range(len(counts))], counts


def settings_rows(settings: Settings, *, processes: int, state: Path) -> list[tuple[str, str]]:
    """The settings a scan decided with, by variable, then the index design and the run's options."""
    rows = [(env_name(name), str(getattr(settings, name))) for name in SETTING_FIELDS]
    return [*rows, ("index design", settings.core.design.name), ("--processes", str(processes)),
            ("--state", str(state))]


def e(value: object) -> str:
    """HTML-escaped text of a value (quotes too, so it is safe in attributes)."""
    return html.escape(str(value), quote=True)


def url_html(url: str | None) -> str:
    """A URL as escaped text, a link when it is http(s) (never a `javascript:` one)."""
    if url is None:
        return '<span class="none">none</span>'
    if url.lower().startswith(("http://", "https://")):
        return f'<a class="url" href="{e(url)}" rel="noreferrer noopener">{e(url)}</a>'
    return f'<span class="url">{e(url)}</span>'


def bar_chart(labels: Sequence[str], series: dict[str, list[int]], *, x_label: str, y_label: str,
              width: int = 520, height: int = 240, chart_id: str = "") -> str:
    """Stacked bars as inline SVG: one bar per label, one colour per series (`COLORS`), counts on top."""
    left, right, top, bottom = 44, 10, 18, 42
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [sum(s[i] for s in series.values()) for i in range(len(labels))]
    peak = max(totals, default=0) or 1
    step = plot_w / max(len(labels), 1)
    bar_w = max(step * 0.72, 2)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{e(chart_id)}" viewBox="0 0 {width} '
             f'{height}" width="{width}" height="{height}" role="img" aria-label="{e(y_label)} by {e(x_label)}">']
    for tick in _ticks(peak):
        y = top + plot_h - tick / peak * plot_h
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{tick}</text>')
    for i, label in enumerate(labels):
        x = left + i * step + (step - bar_w) / 2
        base = float(top + plot_h)
        for name, counts in series.items():
            if not counts[i]:
                continue
            h = counts[i] / peak * plot_h
            base -= h
            parts.append(f'<rect x="{x:.1f}" y="{base:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                         f'fill="{COLORS.get(name, "#4a5568")}" data-series="{e(name)}" data-label="{e(label)}" '
                         f'data-count="{counts[i]}"><title>{e(name)} at {e(label)}: {counts[i]}</title></rect>')
        if totals[i]:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{base - 4:.1f}" class="count" '
                         f'text-anchor="middle">{totals[i]}</text>')
        parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h + 15}" class="tick" '
                     f'text-anchor="middle">{e(label)}</text>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" class="axis"/>'
                 f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" class="axis-label" '
                 f'text-anchor="middle">{e(x_label)}</text>'
                 f'<text x="12" y="{top + plot_h / 2:.1f}" class="axis-label" text-anchor="middle" '
                 f'transform="rotate(-90 12 {top + plot_h / 2:.1f})">{e(y_label)}</text></svg>')
    return "".join(parts)


def _ticks(peak: int) -> list[int]:
    """About four round grid values from 0 to `peak`."""
    raw = peak / 4
    magnitude = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return list(range(0, peak + 1, max(int(step), 1)))


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], *, cls: str = "", numeric: Sequence[int] = ()) -> str:
    """A table of cells already in HTML; `numeric` columns right-aligned."""
    ths = "".join(f'<th{" class=num" if i in numeric else ""}>{e(h)}</th>' for i, h in enumerate(head))
    trs = "".join("<tr>" + "".join(f'<td{" class=num" if i in numeric else ""}>{c}</td>' for i, c in enumerate(row))
                  + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table>'


def _verdict(verdict: str) -> str:
    return f'<span class="verdict" style="--c:{COLORS.get(verdict, "#4a5568")}">{e(verdict.replace("_", " "))}</span>'


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _overview(report: ScanReport, summary: ScanSummary) -> str:
    verdicts = report.verdicts()
    urls = sum(verdicts.values())
    tiles = []
    for verdict in VERDICTS:
        n = verdicts.get(verdict, 0)
        share = f"{n / urls:.1%}" if urls else "–"
        tiles.append(f'<div class="tile" style="--c:{COLORS[verdict]}" data-verdict="{verdict}" data-count="{n}">'
                     f'<div class="n">{n:,}</div><div class="what">{e(verdict.replace("_", " "))}</div>'
                     f'<div class="share">{share} of URLs</div></div>')
    tiles.append(f'<div class="tile" style="--c:{COLORS["rejected"]}" data-verdict="rejected" '
                 f'data-count="{summary.rejected}"><div class="n">{summary.rejected:,}</div>'
                 f'<div class="what">rejected</div><div class="share">events, see below</div></div>')
    bar = "".join(f'<span style="flex:{verdicts[v]};background:{COLORS[v]}" title="{e(v)}: {verdicts[v]}"></span>'
                  for v in VERDICTS if verdicts.get(v))
    facts = [("files read to their end", f"{summary.files - len(summary.file_errors)} of {summary.files}"),
             ("events read", f"{summary.events:,}"), ("events decided", f"{summary.fetches:,}"),
             ("events rejected", f"{summary.rejected:,}"), ("URLs decided", f"{urls:,}"),
             ("decision lines (revisions included)", f"{summary.decisions:,}"),
             ("of which revisions", f"{summary.revisions:,}"), ("host signals", f"{summary.host_signals:,}"),
             ("pages per second", f"{summary.events / summary.seconds:.1f}" if summary.seconds else "–")]
    facts_html = "".join(f"<div><dt>{e(k)}</dt><dd>{e(v)}</dd></div>" for k, v in facts)
    return (f'<section id="verdicts"><h2>Verdicts <small>final decision per URL</small></h2>'
            f'<div class="tiles">{"".join(tiles)}</div><div class="share-bar">{bar}</div>'
            f'<dl class="facts">{facts_html}</dl></section>')


def _clusters(report: ScanReport) -> str:
    found = report.clusters()
    if not found:
        return '<section id="clusters"><h2>Largest clusters</h2><p class="none">No duplicates.</p></section>'
    blocks = []
    for n, cluster in enumerate(found[:MAX_CLUSTERS]):
        rows = []
        for member in cluster.members[:MAX_MEMBERS]:
            direct = cluster.decision is not None and member.duplicate_of == cluster.decision.url
            via = ("" if direct or member.duplicate_of is None
                   else f'<div class="via">via {url_html(member.duplicate_of)}</div>')
            rows.append(f'<tr class="member" data-url="{e(member.url)}" data-verdict="{e(member.verdict)}">'
                        f'<td>{url_html(member.url)}{via}</td><td>{_verdict(member.verdict)}</td>'
                        f'<td class="num">{"–" if member.distance is None else member.distance}</td>'
                        f'<td class="num">{_fmt(member.jaccard)}</td></tr>')
        more = len(cluster.members) - MAX_MEMBERS
        if more > 0:
            rows.append(f'<tr><td colspan="4" class="more">and {more:,} more</td></tr>')
        canonical_verdict = (_verdict(cluster.decision.verdict) if cluster.decision
                             else '<span class="none">decided in an earlier run</span>')
        cycle = ' <span class="warn">a cycle of recrawls</span>' if cluster.cyclic else ""
        kinds = Counter(m.verdict for m in cluster.members)
        mix = ", ".join(f"{n:,} {v.split('_')[0]}" for v, n in sorted(kinds.items()))
        blocks.append(
            f'<details class="cluster" data-canonical="{e(cluster.canonical)}" data-size="{cluster.size}"'
            f'{" open" if n < OPEN_CLUSTERS else ""}><summary><span class="size">{cluster.size:,} pages</span>'
            f'<span class="mix">{mix}</span> {url_html(cluster.canonical)} {canonical_verdict}{cycle}</summary>'
            f'<table class="members"><thead><tr><th>duplicate</th><th>verdict</th><th class="num">distance</th>'
            f'<th class="num">Jaccard</th></tr></thead><tbody>{"".join(rows)}</tbody></table></details>')
    more = len(found) - MAX_CLUSTERS
    tail = f'<p class="more">and {plural(more, "smaller cluster")}</p>' if more > 0 else ""
    return (f'<section id="clusters"><h2>Largest clusters <small>{plural(len(found), "cluster")}; the canonical, '
            f'then the pages whose <code>duplicate_of</code> leads to it</small></h2>{"".join(blocks)}{tail}</section>')


def plural(n: int, noun: str) -> str:
    """`1 cluster`, `2 clusters`, `1,024 clusters`."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _rule(rule: dict[str, object]) -> str:
    param = rule.get("param")
    example = rule.get("example")
    conf = rule.get("confidence")
    return (f'<li class="rule"><code>{e(rule.get("kind"))}</code>{f" <code><b>{e(param)}</b></code>" if param else ""} '
            f'<span class="dim">support {e(rule.get("support"))}, confidence '
            f'{_fmt(conf if isinstance(conf, float | int) else None, 2)}</span>'
            f'{f"<div class=via>e.g. {url_html(str(example))}</div>" if example else ""}</li>')


HOST_COLUMNS = ('<colgroup><col style="width:22%">' + '<col style="width:6%">' * 7
                + '<col style="width:36%"></colgroup>')


def _hosts(report: ScanReport) -> str:
    hosts = report.hosts_by_penalty()
    if not hosts:
        return '<section id="hosts"><h2>Hosts by penalty</h2><p class="none">No host signals.</p></section>'
    rows = []
    for s in hosts[:MAX_HOSTS]:
        rules = "".join(_rule(r) for r in s.url_rules)
        level = "high" if s.penalty >= 0.5 else "mid" if s.penalty >= 0.3 else "low"
        rows.append(f'<tr class="host" data-host="{e(s.host)}" data-penalty="{s.penalty}">'
                    f'<td><b>{e(s.host)}</b></td><td class="num">{s.pages:,}</td>'
                    f'<td class="num">{s.exact_duplicates:,}</td><td class="num">{s.near_duplicates:,}</td>'
                    f'<td class="num">{s.same_host_duplicates:,}</td><td class="num">{s.dup_ratio:.2f}</td>'
                    f'<td class="num"><span class="penalty {level}">{s.penalty:.3f}</span></td>'
                    f'<td class="num">{s.budget_factor:.2f}</td>'
                    f'<td>{f"<ul class=rules>{rules}</ul>" if rules else "<span class=none>none</span>"}</td></tr>')
    more = len(hosts) - MAX_HOSTS
    tail = f'<p class="more">and {more:,} more hosts</p>' if more > 0 else ""
    head = ("host", "pages", "exact", "near", "same site", "dup ratio", "penalty", "budget", "learned URL rules")
    ths = "".join(f'<th{"" if i in (0, 8) else " class=num"}>{h}</th>' for i, h in enumerate(head))
    return (f'<section id="hosts"><h2>Hosts by penalty <small>each host\'s last signal; penalty = same-site '
            f'duplicates / (pages + 20)</small></h2><table class="hosts">{HOST_COLUMNS}<thead><tr>{ths}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>{tail}</section>')


def _plots(report: ScanReport, k: int, jaccard: float | None) -> str:
    dist = report.distance_histogram()
    labels = [str(i) for i in range(len(dist["exact_duplicate"]))]
    has_dist = any(sum(v) for v in dist.values())
    dist_svg = (bar_chart(labels, dist, x_label="SimHash distance (bits)", y_label="URLs", chart_id="distance")
                if has_dist else '<p class="none">No duplicates with a SimHash distance.</p>')
    edges, counts = report.jaccard_histogram()
    band_only = sum(1 for d in report.final.values() if d.verdict == "near_duplicate" and d.distance is None)
    no_band = sum(1 for d in report.final.values() if d.verdict == "near_duplicate" and d.jaccard is None)
    jac_svg = (bar_chart([f"{x:.3f}".rstrip("0") for x in edges], {"near_duplicate": counts},
                         x_label="Jaccard estimate (bin start)", y_label="URLs", chart_id="jaccard")
               if counts else '<p class="none">No near duplicates by a shared LSH band.</p>')
    legend = "".join(f'<span class="key" style="--c:{COLORS[v]}">{e(v.replace("_", " "))}</span>'
                     for v in ("exact_duplicate", "near_duplicate"))
    j_note = f"J = {jaccard:.2f}" if jaccard is not None else "MinHash off"
    return (f'<section id="plots"><h2>Distances</h2><div class="plots">'
            f'<figure><figcaption>SimHash distance of each duplicate to what it duplicates (k = {k}) '
            f'{legend}</figcaption>{dist_svg}<p class="dim">{band_only:,} near duplicates matched by a band only '
            f'(no distance).</p></figure>'
            f'<figure><figcaption>Jaccard estimate of near duplicates that share an LSH band ({e(j_note)})'
            f'</figcaption>{jac_svg}<p class="dim">{no_band:,} near duplicates matched within k bits only '
            f'(no estimate).</p></figure></div></section>')


def _rejects(report: ScanReport, summary: ScanSummary) -> str:
    rows = [(e(stage), f"<code>{e(reason)}</code>", f"{n:,}")
            for (stage, reason), n in report.rejects.most_common(MAX_REASONS)]
    table = (_table(("stage", "reason", "events"), rows, cls="rejects", numeric=(2,)) if rows
             else '<p class="none">No event was rejected.</p>')
    more = len(report.rejects) - MAX_REASONS
    tail = f'<p class="more">and {more:,} more reasons</p>' if more > 0 else ""
    errors = "".join(f"<li><code>{e(f.source)}</code>: {e(f.reason)} (after {f.events_read:,} events)</li>"
                     for f in summary.file_errors)
    errors_html = f'<h3>Files not read to their end</h3><ul class="file-errors">{errors}</ul>' if errors else ""
    return (f'<section id="rejects"><h2>Rejects by reason <small>{summary.rejected:,} events; the rejects file '
            f'keeps each with its bytes</small></h2>{table}{tail}{errors_html}</section>')


def _settings(report: ScanReport, summary: ScanSummary) -> str:
    kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(summary.kinds.items())) or "none"
    files = "".join(f"<li><code>{e(f)}</code></li>" for f in report.files)
    settings = _table(("setting", "value"), ((f"<code>{e(k)}</code>", e(v)) for k, v in report.settings),
                      cls="settings")
    return (f'<section id="settings"><h2>Settings and input</h2><div class="two">'
            f'<div>{settings}</div><div><h3>Input files</h3><ul class="files">{files}</ul>'
            f'<p class="dim">Events: {e(kinds)}.</p></div></div></section>')


CSS = """
:root{--fg:#1a202c;--dim:#5a6474;--line:#e2e8f0;--bg:#f5f7fa;--card:#fff}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",
"DejaVu Sans","Liberation Sans",Arial,sans-serif}
main{max-width:1160px;margin:0 auto;padding:20px 24px 40px}
header h1{margin:0;font-size:24px}header p{margin:4px 0 0;color:var(--dim)}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 18px;margin:16px 0}
h2{font-size:17px;margin:0 0 10px}h2 small,.dim{color:var(--dim);font-weight:normal;font-size:12.5px}
h3{font-size:14px;margin:10px 0 6px}
.tiles{display:grid;grid-template-columns:repeat(5,1fr);gap:10px}
.tile{border:1px solid var(--line);border-left:5px solid var(--c);border-radius:6px;padding:8px 12px}
.tile .n{font-size:26px;font-weight:650;font-variant-numeric:tabular-nums}
.tile .what{font-weight:600;color:var(--c)}.tile .share{color:var(--dim);font-size:12px}
.share-bar{display:flex;height:10px;border-radius:5px;overflow:hidden;margin:12px 0 8px;background:var(--line)}
.facts{display:grid;grid-template-columns:repeat(3,1fr);gap:2px 24px;margin:8px 0 0}
.facts div{display:flex;justify-content:space-between;border-bottom:1px dotted var(--line)}
.facts dt{color:var(--dim)}.facts dd{margin:0;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:12px;color:var(--dim);font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tbody tr:nth-child(even){background:#fafbfc}
.url{font:12.5px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;word-break:break-all;color:#2b4c7e;text-decoration:none}
code{font:12.5px ui-monospace,"DejaVu Sans Mono",monospace;word-break:break-word}
.verdict{color:var(--c);font-weight:600;font-size:12px;white-space:nowrap}
.cluster{border:1px solid var(--line);border-radius:6px;margin:8px 0;padding:6px 10px}
.cluster{padding:3px 10px}.cluster summary{cursor:pointer}
.cluster .size{display:inline-block;min-width:76px;font-weight:650}
.cluster .mix{display:inline-block;min-width:150px;color:var(--dim);font-size:12.5px}
.cluster table{margin:6px 0 2px}.via{font-size:12px;color:var(--dim)}
.more,.none{color:var(--dim);font-style:italic}.warn{color:#c53030;font-size:12px}
.penalty{padding:1px 6px;border-radius:4px;font-weight:600}.penalty.high{background:#fed7d7;color:#9b2c2c}
.penalty.mid{background:#feebc8;color:#9c4221}.penalty.low{background:#edf2f7}
.hosts{table-layout:fixed}.hosts td:first-child{overflow-wrap:anywhere}.hosts th.num{white-space:normal}
.rules{margin:0;padding-left:16px}.rule{margin:0 0 3px}
.rule .via{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}.rule .via .url{font-size:11.5px}
.plots{display:grid;grid-template-columns:1fr 1fr;gap:16px}figure{margin:0}
figcaption{font-size:13px;margin-bottom:4px}
.key{display:inline-block;margin-left:8px;font-size:12px;color:var(--dim)}
.key::before{content:"";display:inline-block;width:10px;height:10px;background:var(--c);margin-right:4px;
vertical-align:-1px;border-radius:2px}
.chart{max-width:100%;height:auto}.chart .grid{stroke:#edf2f7}.chart .axis{stroke:#a0aec0}
.chart text{font:11px system-ui,"DejaVu Sans",sans-serif;fill:#4a5568}.chart .count{fill:#1a202c;font-weight:600}
.chart .axis-label{fill:#5a6474;font-size:11.5px}
.two{display:grid;grid-template-columns:1fr 1fr;gap:20px}.files{padding-left:18px;margin:0}
"""


def render_html(report: ScanReport, summary: ScanSummary, *, k: int, jaccard: float | None,
                generated_at: datetime | None = None) -> str:
    """The whole report page; every value from the input is escaped."""
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    names = ", ".join(Path(f).name for f in report.files)
    body = "".join((_overview(report, summary), _plots(report, k, jaccard), _hosts(report), _clusters(report),
                    _rejects(report, summary), _settings(report, summary)))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "img-src data:\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>neardup scan report: {e(names)}</title><style>{CSS}</style></head><body><main>"
            f"<header><h1>neardup scan report</h1><p>{e(when)} · {e(names)}</p></header>"
            f"{body}</main></body></html>\n")


def write_report(path: Path, report: ScanReport, summary: ScanSummary, *, k: int, jaccard: float | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report, summary, k=k, jaccard=jaccard), encoding="utf-8")
