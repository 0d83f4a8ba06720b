"""The worker's status page (`/`): `streams.web.status`' dictionary as one self-contained HTML page.

No script and nothing fetched from elsewhere (crawl clusters often reach nothing outside): inline CSS,
a `<meta http-equiv="refresh">` to reload it. Every value from the worker's input (hosts, URLs,
reasons, rules) is HTML-escaped. Each figure carries `data-k` with its path in `/status.json`
(`totals.pages`, `verdicts.unique`, ...), so a test reads the page as a person sees it and compares.
"""

from __future__ import annotations

from html import escape
from typing import Any

REFRESH_S = 5
VERDICT_COLOURS = {"unique": "#3b82f6", "exact_duplicate": "#ef4444", "near_duplicate": "#f59e0b",
                   "skipped": "#9ca3af"}

CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
  color:#1f2937;background:#f3f4f6}
header{background:#111827;color:#f9fafb;padding:14px 24px;display:flex;align-items:baseline;gap:16px;
  flex-wrap:wrap}
header h1{font-size:18px;margin:0;font-weight:600}
header .meta{color:#9ca3af;font-size:12px}
header a{color:#93c5fd}
.pill{display:inline-block;padding:1px 10px;border-radius:999px;font-size:12px;font-weight:600}
.ok{background:#065f46;color:#d1fae5}.warn{background:#92400e;color:#fef3c7}
main{padding:18px 24px;max-width:1280px}
.cards{display:grid;grid-template-columns:repeat(4,minmax(0,1fr));gap:12px;margin-bottom:16px}
@media (max-width:800px){.cards{grid-template-columns:repeat(2,minmax(0,1fr))}.grid2{display:block}}
.card{background:#fff;border-radius:8px;padding:12px 14px;box-shadow:0 1px 2px rgba(0,0,0,.06)}
.card .label{font-size:12px;color:#6b7280;text-transform:uppercase;letter-spacing:.04em}
.card .value{font-size:24px;font-weight:600;font-variant-numeric:tabular-nums}
.card .sub{font-size:12px;color:#6b7280;font-variant-numeric:tabular-nums}
section{background:#fff;border-radius:8px;padding:14px 16px;margin-bottom:16px;
  box-shadow:0 1px 2px rgba(0,0,0,.06)}
section h2{font-size:15px;margin:0 0 10px;font-weight:600}
.grid2{display:grid;grid-template-columns:minmax(0,5fr) minmax(0,3fr);gap:16px;align-items:start}
.grid2>section{margin-bottom:0}
.bar{display:flex;height:18px;border-radius:4px;overflow:hidden;background:#e5e7eb}
.bar span{display:block;height:100%}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin-top:8px;font-size:13px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
table{border-collapse:collapse;width:100%;font-size:13px}
th{text-align:left;color:#6b7280;font-weight:500;border-bottom:1px solid #e5e7eb;padding:4px 8px;white-space:nowrap}
td{border-bottom:1px solid #f3f4f6;padding:4px 8px;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.host{white-space:nowrap;max-width:240px;overflow:hidden;text-overflow:ellipsis}
td.time{white-space:nowrap}
.wide{overflow-x:auto}table.tp td.n{min-width:44px}td.topic{white-space:nowrap}td.hot{color:#b45309;font-weight:600}
.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px;word-break:break-all}
.rule{display:inline-block;white-space:nowrap;background:#eef2ff;color:#3730a3;border-radius:4px;padding:0 6px;
  margin:1px 4px 1px 0;font-size:12px}
.pen{display:inline-block;height:8px;background:#ef4444;border-radius:2px;vertical-align:middle;margin-right:6px}
.muted{color:#9ca3af}
details summary{cursor:pointer;color:#4b5563;margin-top:8px}
"""


def _v(value: Any, path: str, fmt: str = "{:,}") -> str:
    """A figure with its `/status.json` path."""
    shown = "–" if value is None else fmt.format(value)
    return f'<span data-k="{escape(path)}">{escape(shown)}</span>'


def _seconds(value: float | None) -> str:
    if value is None:
        return "–"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def _card(label: str, value: str, sub: str = "") -> str:
    return (f'<div class="card"><div class="label">{escape(label)}</div><div class="value">{value}</div>'
            f'<div class="sub">{sub}</div></div>')


def _cards(s: dict[str, Any]) -> str:
    t, tp, lat = s["totals"], s["throughput"], s["latency"]
    since, recent = lat["since_start"], lat["recent"]
    rate = (f'{_v(tp["pages_per_s"], "throughput.pages_per_s", "{:,.2f}")} pages/s over the last '
            f'{_v(tp["window_s"], "throughput.window_s", "{:.0f}")} s')
    decided = f'{_v(tp["decisions_per_s"], "throughput.decisions_per_s", "{:,.2f}")} decisions/s'
    latency = (f'<span data-k="latency.since_start.p50_s">{escape(_seconds(since["p50_s"]))}</span> / '
               f'<span data-k="latency.since_start.p99_s">{escape(_seconds(since["p99_s"]))}</span>')
    latency_sub = (f'p50 / p99 of {_v(since["count"], "latency.since_start.count")} since start; last minute '
                   f'{escape(_seconds(recent["p50_s"]))} / {escape(_seconds(recent["p99_s"]))}')
    return '<div class="cards">' + "".join([
        _card("Pages read", _v(t["pages"], "totals.pages"), rate),
        _card("URLs decided", _v(t["urls_decided"], "totals.urls_decided"),
              f'{decided}; {_v(t["revisions"], "totals.revisions")} revisions'),
        _card("Decision latency", latency, latency_sub),
        _card("Pending pages", _v(s["pending_pages"], "pending_pages"), "waiting for probe answers"),
        _card("Consumer lag", _v(s["lag"], "lag"),
              f'messages unread in {_v(s["assigned_partitions"], "assigned_partitions")} assigned partitions'),
        _card("Rejected", _v(t["rejected"], "totals.rejected"), "sent to pages.rejected"),
        _card("Provisional", _v(t["provisional"], "totals.provisional"), "decided at the timeout"),
        _card("Re-fetches", _v(t["reseeks"], "totals.reseeks"), "partitions sought back"),
        _card("Partial copies", _v(t.get("partial_copies", 0), "totals.partial_copies"),
              "URLs that hold another page's text (partial_of)"),
    ]) + "</div>"


def _verdicts(s: dict[str, Any]) -> str:
    verdicts: dict[str, int] = s["verdicts"]
    total = sum(verdicts.values())
    order = [v for v in VERDICT_COLOURS if v in verdicts] + sorted(set(verdicts) - set(VERDICT_COLOURS))
    bar = "".join(f'<span title="{escape(v)}" style="width:{100 * verdicts[v] / total:.3f}%;'
                  f'background:{VERDICT_COLOURS.get(v, "#6b7280")}"></span>' for v in order if total)
    legend = "".join(f'<span><i style="background:{VERDICT_COLOURS.get(v, "#6b7280")}"></i>{escape(v)} '
                     f'<b>{_v(verdicts[v], f"verdicts.{v}")}</b> <span class="muted">'
                     f'({100 * verdicts[v] / total:.1f}%)</span></span>' for v in order)
    return (f'<section><h2>Verdict mix <span class="muted">decisions published, revisions included</span></h2>'
            f'<div class="bar">{bar}</div><div class="legend">{legend or "no decisions yet"}</div></section>')


def _rules(rules: list[dict[str, Any]]) -> str:
    if not rules:
        return '<span class="muted">none learned</span>'
    return "".join(f'<span class="rule" title="support {r["support"]}, confidence {r["confidence"]}">'
                   f'{escape(r["kind"])}{": " + escape(str(r["param"])) if r.get("param") else ""}</span>'
                   for r in rules)


def _hosts(s: dict[str, Any]) -> str:
    rows = "".join(
        f'<tr data-host="{escape(h["host"])}" title="last signal: {escape(h["last_signal"] or "none yet")}">'
        f'<td class="mono host" title="{escape(h["host"])}">{escape(h["host"])}</td>'
        f'<td class="n">{h["pages"]:,}</td><td class="n">{h["same_host_duplicates"]:,}</td>'
        f'<td class="n"><span class="pen" style="width:{60 * h["penalty"]:.0f}px"></span>'
        f'<span data-k="penalty">{h["penalty"]:.2f}</span></td><td class="n">{h["budget_factor"]:.2f}</td>'
        f'<td>{_rules(h["url_rules"])}</td></tr>' for h in s["hosts"])
    head = ('<tr><th>host</th><th class="n">pages</th><th class="n" title="duplicates of pages of the same site">'
            'dups</th><th class="n">penalty</th>'
            '<th class="n">budget</th><th>learned URL rules</th></tr>')
    body = rows or '<tr><td colspan="6" class="muted">no host counted yet</td></tr>'
    return f'<section><h2>Hosts by penalty</h2><table>{head}{body}</table></section>'


def _rejections(s: dict[str, Any]) -> str:
    r = s["rejections"]
    stages = " · ".join(f'{escape(stage)} {_v(n, f"rejections.by_stage.{stage}")}'
                        for stage, n in r["by_stage"].items()) or "none"
    reasons = "".join(f'<tr data-reason><td>{escape(x["stage"])}</td><td>{escape(x["reason"])}</td>'
                      f'<td class="n">{x["count"]:,}</td></tr>' for x in r["by_reason"])
    recent = "".join(f'<tr><td class="mono time">{escape(x["at"][11:19])}</td><td>{escape(x["reason"])}'
                     f'<div class="mono muted">{escape(x["key"] or "(no key)")} · {escape(str(x["topic"]))}:'
                     f'{x["partition"]}@{x["offset"]}</div></td></tr>' for x in r["recent"])
    return (f'<section><h2>Rejections by reason</h2><div class="sub">by stage: {stages}</div>'
            f'<table><tr><th>stage</th><th>reason</th><th class="n">count</th></tr>'
            f'{reasons or "<tr><td colspan=3 class=muted>none</td></tr>"}</table>'
            f'<details open><summary>latest {len(r["recent"])} rejections</summary><table>{recent}</table>'
            f'</details></section>')


def _partitions(s: dict[str, Any]) -> str:
    """A row per topic, a column per partition number: the lag, with the offsets in its tooltip."""
    parts = [p for p in s["partitions"] if p["role"] != "faust"]
    numbers = sorted({p["partition"] for p in parts})
    topics = sorted({p["topic"] for p in parts}, key=lambda t: (t.endswith("-changelog"), t))
    at = {(p["topic"], p["partition"]): p for p in parts}

    def cell(topic: str, n: int) -> str:
        p = at.get((topic, n))
        if p is None:
            return '<td class="n muted">·</td>'
        tip = f'{p["role"]}: highwater {p["highwater"]}, position {p["position"]}, committed {p["committed"]}'
        if p["role"] == "changelog":
            shown, css = "w", "n muted"
        else:
            shown, css = ("–" if p["lag"] is None else f'{p["lag"]:,}'), ("n hot" if p["lag"] else "n")
        return f'<td class="{css}" data-tp="{escape(topic)}:{n}" title="{escape(tip)}">{escape(shown)}</td>'

    head = "<tr><th>topic</th>" + "".join(f'<th class="n">{n}</th>' for n in numbers) + "</tr>"
    rows = "".join(f'<tr><td class="mono topic">{escape(t)}</td>{"".join(cell(t, n) for n in numbers)}</tr>'
                   for t in topics)
    body = rows or '<tr><td class="muted">no partition assigned</td></tr>'
    return (f'<section class="wide"><h2>Consumer lag per assigned partition <span class="muted">messages not yet '
            f'read, by partition number; hover for the offsets</span></h2><table class="tp">{head}{body}</table>'
            f'<div class="sub muted">w: the changelog of a table partition this worker runs, which it writes '
            f'(and reads only to recover); a standby\'s changelog shows its lag.</div></section>')


def render(s: dict[str, Any]) -> str:
    """The page for one status dictionary (`streams.web.status.gather`)."""
    w = s["worker"]
    ready = w.get("ready")
    pill = '<span class="pill ok">ready</span>' if ready else '<span class="pill warn">recovering</span>'
    meta = (f'{escape(str(w.get("design", "")))} · k = {escape(str(w.get("k", "")))} · up '
            f'{w["uptime_s"] / 60:.0f} min · {escape(w["generated_at"])} · refreshes every {REFRESH_S} s · '
            f'<a href="status.json">status.json</a> · <a href="metrics">metrics</a>')
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="refresh" content="{REFRESH_S}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>neardup · {escape(str(w.get("app_id", "")))}</title><style>{CSS}</style></head><body>'
            f'<header><h1>neardup worker · {escape(str(w.get("app_id", "")))}</h1>{pill}'
            f'<span class="meta">{meta}</span></header><main>'
            f'{_cards(s)}{_verdicts(s)}{_partitions(s)}<div class="grid2">{_hosts(s)}{_rejections(s)}</div>'
            f'</main></body></html>')
