"""What `neardup demo` prints, piece by piece: the publish line explains why there are fewer decisions
than events, decisions in plain words, examples from several hosts and both kinds of duplicate, a host
table of 100 columns with every column filled, and "1 cluster" in the scan report."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from streams.cli.demo import WIDTH, examples, host_table, plain_reason, publish_line
from streams.cli.report import plural


def decision(url: str, verdict: str, **fields: Any) -> dict[str, Any]:
    host = url.split("/")[2]
    return {"url": url, "host": host, "verdict": verdict, "duplicate_of": None, "distance": None, "jaccard": None,
            "reason": "", **fields}


def test_the_publish_line_counts_recrawls() -> None:
    events = [{"url": "https://a.example/x"}, {"url": "https://A.example:443/x"}, {"url": "https://a.example/y"}]
    assert publish_line(events) == ("published 3 fetched pages of 2 URLs, 1 of them recrawls of a URL fetched "
                                    "before: one decision per URL, the latest wins")
    assert "recrawls" not in publish_line(events[:1])


def test_plain_reasons_name_the_better_page_in_words() -> None:
    better = "https://news.example/a"
    assert plain_reason(decision("https://m.example/a", "exact_duplicate", duplicate_of=better,
                                 reason="same main text as a better-ranked page"), 3) == \
        f"the same main text as {better}, a better-ranked copy"
    assert plain_reason(decision("https://m.example/a", "exact_duplicate", duplicate_of=better,
                                 reason="same body as a better-ranked page"), 3).startswith("the same bytes as")
    near = plain_reason(decision("https://m.example/a", "near_duplicate", duplicate_of=better, distance=2), 3)
    assert near == (f"nearly the same main text as {better}, a better-ranked page (2 of 64 fingerprint bits apart "
                    "(at most 3 allowed))")
    zero = plain_reason(decision("https://m.example/a", "near_duplicate", duplicate_of=better, distance=0), 3)
    assert "within 0" not in zero and "same SimHash fingerprint" in zero
    jaccard = plain_reason(decision("https://m.example/a", "near_duplicate", duplicate_of=better, jaccard=0.876), 3)
    assert jaccard.endswith("(88% of the same word pairs)")
    assert plain_reason(decision("https://m.example/b", "skipped", reason="status 404"), 3) == \
        "not deduplicated: status 404"


def test_examples_come_from_several_hosts_and_show_both_kinds() -> None:
    latest = {d["url"]: d for d in [
        *(decision(f"https://a.example/{i}", "exact_duplicate") for i in range(5)),
        decision("https://b.example/1", "exact_duplicate"), decision("https://c.example/1", "near_duplicate"),
        decision("https://d.example/1", "unique")]}
    chosen = examples(latest, count=3)
    assert {d["host"] for d in chosen} == {"a.example", "b.example", "c.example"}
    assert {d["verdict"] for d in chosen} == {"exact_duplicate", "near_duplicate"}
    assert len(examples(latest, count=10)) == 7  # every non-unique decision once, no unique


def test_the_host_table_fits_100_columns_with_every_column_filled() -> None:
    signals = [{"host": f"host{i}.example", "pages": 40 + i, "dup_ratio": 0.25, "penalty": 0.5 + i / 100,
                "budget_factor": 0.6, "window_start": None,
                "url_rules": [{"kind": "ignore_query_param", "param": "sid", "confidence": 0.97}] if i else []}
               for i in range(3)]
    console = Console(width=WIDTH, record=True, force_terminal=False)
    console.print(host_table(signals))
    text = console.export_text()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    assert "window_start" not in text
    assert "ignore sid (97%)" in text
    rows = [line for line in lines if "host" in line and ".example" in line]
    assert rows[0].split()[1] == "host2.example"  # the worst first
    assert all("│  │" not in line and "|  |" not in line for line in rows)


def test_plural() -> None:
    assert [plural(n, "cluster") for n in (0, 1, 2, 1024)] == ["0 clusters", "1 cluster", "2 clusters",
                                                              "1,024 clusters"]
