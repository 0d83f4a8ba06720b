"""Decisions read back from `dedup.decisions` by the dev cluster's callers: the latest per URL, a condition
that every URL has a complete one, and a record as read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

Decision = dict[str, Any]


def keep_latest(latest: dict[str, Decision], decision: Decision) -> bool:
    """Folds one decision into `latest` (URL -> its decision): it replaces the one kept when its
    revision is at least as high, so of equal revisions the later message wins. Returns whether it did."""
    old = latest.get(decision["url"])
    if old is None or decision["revision"] >= old["revision"]:
        latest[decision["url"]] = decision
        return True
    return False


def latest_by_url(decisions: Iterable[Decision]) -> dict[str, Decision]:
    """The decision with the highest revision per URL (ties: the later message)."""
    latest: dict[str, Decision] = {}
    for d in decisions:
        keep_latest(latest, d)
    return latest


@dataclass(frozen=True)
class all_complete:  # noqa: N801 (used as a function: a condition)
    """A `read_until` condition: every URL of `urls` has a latest decision, and it is complete.
    `why_not` says which do not, for the timeout's message."""

    urls: set[str]

    def __call__(self, decisions: list[Decision]) -> bool:
        latest = latest_by_url(decisions)
        return self.urls <= set(latest) and all(latest[u]["complete"] for u in self.urls)

    def why_not(self, decisions: list[Decision]) -> str:
        latest = latest_by_url(decisions)
        missing = sorted(self.urls - set(latest))
        incomplete = sorted(u for u in self.urls & set(latest) if not latest[u]["complete"])
        return (f"{len(missing)} URLs without a decision {missing[:5]}, {len(incomplete)} whose latest "
                f"decision is incomplete {[latest[u] for u in incomplete[:3]]}")


@dataclass(frozen=True, slots=True)
class Record:
    """One message read back from a topic."""

    key: bytes | None
    value: bytes
    timestamp_ms: int
    partition: int
    offset: int

    def json(self) -> Decision:
        value: Decision = orjson.loads(self.value)
        return value
