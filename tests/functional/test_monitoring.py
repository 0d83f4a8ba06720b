"""The monitoring files against the worker: `deploy/prometheus/alerts.yml` passes `promtool check rules`
and fires each alert in `promtool test rules`, and every metric name in it and in
`deploy/grafana/neardup.json` is one a worker exports (`streams.web.metrics.REGISTRY`, with the suffixes
prometheus_client adds); the metric table of docs/monitoring.md lists exactly those metrics.

promtool is Debian's `prometheus` package (`.ci/run` installs it): without it the promtool tests skip
here and fail under CI=true.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from streams.web import metrics

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
ALERT_TESTS = ROOT / "deploy" / "prometheus" / "alerts.test.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "neardup.json"
METRICS_DOC = ROOT / "docs" / "monitoring.md"

SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count", "_created"),
            "summary": ("", "_sum", "_count", "_created"), "info": ("_info",)}
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


def promtool() -> str:
    found = shutil.which("promtool")
    if found:
        return found
    message = "no promtool on PATH (Debian: apt-get install prometheus; .ci/run installs it)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


def exported_names() -> set[str]:
    """Every series name the worker's registry can export: each metric family with the suffixes of its
    type (a labelled metric exports nothing until a label is used, so the names come from the types)."""
    return {f"{family.name}{suffix}" for family in metrics.REGISTRY.collect() for suffix in SUFFIXES[family.type]}


def alert_rules() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = [r for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]
    return rules


def dashboard_expressions() -> list[str]:
    """The PromQL of every panel target, and the metric of each `label_values(metric, label)` variable."""
    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", []) if t.get("expr")]
    for var in board["templating"]["list"]:
        if var.get("type") == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            match = re.fullmatch(r"label_values\((\w+),\s*\w+\)", query)
            assert match, f"variable {var['name']}: {query}"
            exprs.append(match.group(1))
    return exprs


def metric_names(exprs: Iterable[str]) -> set[str]:
    """The metric names the expressions select (Grafana's `$__` variables replaced by durations)."""
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            assert node.name, f"a selector without a metric name: {node}"
            names.add(node.name)

    for expr in exprs:
        for var, value in GRAFANA_VARIABLES.items():
            expr = expr.replace(var, value)
        promql_parser.walk(promql_parser.parse(expr), visit)
    return names


def test_exported_names_cover_what_the_registry_exposes() -> None:
    """The names derived from the types include every sample the registry really exposes, once each
    labelled metric has a child."""
    exposed = {s.name for f in text_string_to_metric_families(generate_latest(metrics.REGISTRY).decode())
               for s in f.samples}
    assert exposed <= exported_names()
    assert {"neardup_pages_total", "neardup_decision_seconds_bucket", "neardup_consumer_lag",
            "neardup_assigned_partitions", "neardup_provisional_decisions_total"} <= exported_names()


def test_a_misspelt_metric_name_is_caught() -> None:
    used = metric_names(['sum by (instance) (rate(neardup_page_total{instance=~"$instance"}[$__rate_interval]))',
                         "histogram_quantile(0.99, sum by (le) (rate(neardup_decision_second_bucket[5m])))"])
    assert used - exported_names() == {"neardup_page_total", "neardup_decision_second_bucket"}


def test_alerts_and_dashboard_use_only_exported_metrics() -> None:
    exported = exported_names()
    in_alerts = metric_names(r["expr"] for r in alert_rules())
    in_dashboard = metric_names(dashboard_expressions())
    assert not in_alerts - exported, f"alerts.yml uses metrics no worker exports: {sorted(in_alerts - exported)}"
    assert not in_dashboard - exported, f"neardup.json uses unexported metrics: {sorted(in_dashboard - exported)}"
    families = {f.name for f in metrics.REGISTRY.collect()}
    unused = sorted(f for f in families if not any(n == f or n.startswith(f + "_") for n in in_dashboard))
    assert not unused, f"the dashboard shows no panel of {unused}"


def test_dashboard_layout() -> None:
    board = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for p in board["panels"]:
        grid = p["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and p["title"], p["title"]
        assert all(t["datasource"]["uid"] == "${datasource}" for t in p["targets"]), p["title"]


def test_alert_rules_pass_promtool_check() -> None:
    result = subprocess.run([promtool(), "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in result.stdout


def test_each_alert_fires_in_promtool_test_rules() -> None:
    tests = yaml.safe_load(ALERT_TESTS.read_text())["tests"]
    fired = {t["alertname"] for test in tests for t in test["alert_rule_test"] if t["exp_alerts"]}
    quiet = {t["alertname"] for test in tests for t in test["alert_rule_test"] if not t["exp_alerts"]}
    names = {r["alert"] for r in alert_rules()}
    assert fired == names and quiet == names, "each alert is shown firing and not firing"
    result = subprocess.run([promtool(), "test", "rules", ALERT_TESTS.name], cwd=ALERT_TESTS.parent,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_readme_lists_the_exported_metrics() -> None:
    """The metric table of docs/monitoring.md has one row per metric family, named as Prometheus shows it."""
    listed = set(re.findall(r"^\| `(neardup_\w+)`", METRICS_DOC.read_text(), flags=re.M))
    wanted = {f"{f.name}_total" if f.type == "counter" else f.name for f in metrics.REGISTRY.collect()}
    assert listed == wanted, \
        f"docs/monitoring.md lacks {sorted(wanted - listed)}, lists unknown {sorted(listed - wanted)}"
