"""`neardup tail`: a topic as JSON lines or a table."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

from streams.settings import Settings

TOPICS = {"decisions": "dedup.decisions", "hosts": "frontier.host-signals", "rejected": "pages.rejected"}
COLUMNS = {
    "decisions": ["url", "verdict", "duplicate_of", "distance", "revision", "complete"],
    "hosts": ["host", "counts of", "pages", "same_host_duplicates", "dup_ratio", "penalty", "budget_factor",
              "url_rules"],
    "rejected": ["stage", "error", "topic", "partition", "offset", "raw_bytes"],
}
"""The table's columns: message fields, and `counts of` for a host signal, which says what its counts
are of. The table shows the last signal per host, often a cumulative one (a settled signal follows a
host's last change), whose `window_start` is null: a `window_start` column was empty on every row of
`make demo`'s hosts."""


def read_topic(settings: Settings, what: str, *, idle_s: float | None = None, from_beginning: bool = True,
               ) -> Iterator[tuple[bytes | None, dict[str, Any]]]:
    """(key, value) of each message until `idle_s` pass without one (forever when None)."""
    from confluent_kafka import Consumer, KafkaError

    from streams.kafka.admin import check_broker

    if what not in TOPICS:
        raise SystemExit(f"unknown topic {what!r}: choose one of {', '.join(TOPICS)}")
    check_broker(settings)
    consumer = Consumer({**settings.confluent_config(), "group.id": f"neardup-tail-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest" if from_beginning else "latest",
                         "enable.auto.commit": False})
    consumer.subscribe([settings.topic(TOPICS[what])])
    last = time.monotonic()
    try:
        while True:
            msg = consumer.poll(0.5)
            if msg is None:
                if idle_s is not None and time.monotonic() - last > idle_s:
                    return
                continue
            error = msg.error()
            if error:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise SystemExit(f"kafka error: {error}")
            last = time.monotonic()
            value = msg.value()
            if value is None:
                continue
            yield msg.key(), orjson.loads(value)
    finally:
        consumer.close()


def tail_topic(settings: Settings, what: str, *, fmt: str = "json", idle_s: float | None = None,
               from_beginning: bool = True, latest: bool = False) -> None:
    if fmt not in ("json", "table"):
        raise SystemExit("--format is json or table")
    messages = read_topic(settings, what, idle_s=idle_s, from_beginning=from_beginning)
    if latest or fmt == "table":
        last: dict[Any, dict[str, Any]] = {}
        try:
            for key, value in messages:
                last[key] = value
        except KeyboardInterrupt:
            pass
        rows: list[dict[str, Any]] = list(last.values())
        if fmt == "json":
            for row in rows:
                sys.stdout.write(orjson.dumps(row).decode() + "\n")
        else:
            print_table(what, rows)
        return
    for _, value in messages:
        sys.stdout.write(orjson.dumps(value).decode() + "\n")
        sys.stdout.flush()


def print_table(what: str, rows: list[dict[str, Any]], console: Console | None = None) -> None:
    table = Table(title=TOPICS[what])
    for col in COLUMNS[what]:
        table.add_column(col)
    for row in rows:
        table.add_row(*[_counts_of(row) if col == "counts of" else _cell(row.get(col)) for col in COLUMNS[what]])
    (console or Console()).print(table)


def _counts_of(signal: dict[str, Any]) -> str:
    """What a host signal's counts are of: its window (`window_start` to `window_end`), or the host's
    whole crawl so far when it is a cumulative signal."""
    start, end = signal.get("window_start"), signal.get("window_end")
    return f"window {start} to {end}" if start else "all pages so far"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "; ".join(f"{r.get('kind')} {r.get('param') or ''} ({r.get('confidence', 0):.2f})".replace("  ", " ")
                         if isinstance(r, dict) else str(r) for r in value)
    return str(value)
