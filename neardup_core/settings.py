"""The core's settings: one object, built once (by `streams/settings.py` from the environment, or by
an embedding program) and handed to every stage, so scan and the stream decide with the same knobs."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from neardup_core.hosts.statistics import HostPolicy
from neardup_core.index.tables import TableDesign, choose_design, design_named
from neardup_core.ingest.event import DEFAULT_MAX_BODY_BYTES


@dataclass(frozen=True)
class CoreSettings:
    """What decides a page: the distance, the tables, the features, the caps and the timeouts."""

    k: int = 3
    """Hamming distance (bits of 64) within which two main texts are near-duplicates."""
    tables: str = "auto"
    """Table design: `auto` (the cheapest for k and `expected_pages`) or a name such as `k3-b6`."""
    expected_pages: int = 1_000_000
    """Expected number of stored pages, for `auto`."""
    shingle_size: int = 2
    """Words per feature."""
    min_features: int = 8
    """Pages with fewer distinct shingles are checked by their digests only (an unstable SimHash)."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """Larger bodies are rejected."""
    decision_timeout_ms: int = 30_000
    """After this, a page whose probes have not all answered is decided provisionally."""
    host_window_s: int = 3600
    """Window of the per-host statistics, by fetch time."""

    def __post_init__(self) -> None:
        if self.design.k != self.k:
            raise ValueError(f"table design {self.tables} is for k={self.design.k}, but k={self.k}")

    @cached_property
    def design(self) -> TableDesign:
        if self.tables == "auto":
            return choose_design(self.k, self.expected_pages)
        return design_named(self.tables)

    @cached_property
    def host_policy(self) -> HostPolicy:
        return HostPolicy(window_s=self.host_window_s)


DEFAULT_SETTINGS = CoreSettings()
