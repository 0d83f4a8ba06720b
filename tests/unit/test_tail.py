"""`neardup tail --format table`: every column of the host-signal table is filled, for cumulative and
window signals alike."""

from __future__ import annotations

from typing import Any

import orjson
from rich.console import Console

from neardup_core.messages import HostSignal
from streams.cli.tail import COLUMNS, print_table


def signal(host: str, window: tuple[str, str] | None) -> dict[str, Any]:
    """A host signal as `tail` reads it from the topic (its JSON)."""
    start, end = window if window is not None else (None, None)
    message = HostSignal(host=host, window_start=start, window_end=end, pages=40, exact_duplicates=12,
                         near_duplicates=3, same_host_duplicates=14, dup_ratio=0.375, penalty=0.2333,
                         budget_factor=0.7667, reason="settled" if window is None else "window closed", revision=3)
    return orjson.loads(message.to_json())


def rows_of(rows: list[dict[str, Any]]) -> list[list[str]]:
    console = Console(record=True, width=400)
    print_table("hosts", rows, console)
    lines = console.export_text().splitlines()
    return [[cell.strip() for cell in line.strip("│┃").split("│")] for line in lines if line.startswith("│")]


def test_the_host_table_says_what_each_signals_counts_are_of() -> None:
    cumulative = signal("trap.example", None)
    window = signal("news.example", ("2024-05-01T10:00:00Z", "2024-05-01T11:00:00Z"))
    table = rows_of([cumulative, window])
    assert [row[0] for row in table] == ["trap.example", "news.example"]
    counts_of = COLUMNS["hosts"].index("counts of")
    assert table[0][counts_of] == "all pages so far"
    assert table[1][counts_of] == "window 2024-05-01T10:00:00Z to 2024-05-01T11:00:00Z"
    assert all(cell for row in table for cell in row[:-1])  # every column filled but url_rules (none learned)
