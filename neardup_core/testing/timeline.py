"""A generated crawl whose `fetched_at` advances through several retention windows, for the retention
test and benchmark: each window is a fresh generated crawl (`synthetic.generate_crawl` with its own
seed, so its articles are new and some URLs come back with other bodies), its fetches spread evenly
over the window in their original order."""

from __future__ import annotations

from typing import Any

from neardup_core.testing.synthetic import generate_crawl
from neardup_core.timefmt import ms_to_rfc3339

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def crawl_over_windows(windows: int, window_ms: int, *, seed: int = 100, scale: int = 1,
                       start_ms: int = START_MS) -> list[list[dict[str, Any]]]:
    """The events of each window, window w's within [start + w * window, start + (w + 1) * window)."""
    out = []
    for w in range(windows):
        events = sorted(generate_crawl(seed + w, scale=scale), key=lambda e: str(e["fetched_at"]))
        step = window_ms / len(events)
        out.append([{**e, "fetched_at": ms_to_rfc3339(start_ms + w * window_ms + int((i + 0.5) * step))}
                    for i, e in enumerate(events)])
    return out
