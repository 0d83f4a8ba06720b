"""The core's settings: one object, built once (by `streams/settings.py` from the environment, or by
an embedding program) and handed to every stage, so scan and the stream decide with the same knobs.

Every setting is checked when the object is built (`SettingError`, a `ValueError` naming the setting,
its value and what is allowed): a `shingle_size` of 0 would otherwise change every fingerprint
silently. The rules live here once; `streams.settings` reports them under the environment variable's
name."""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from functools import cached_property

from neardup_core.dedup.retention import Retention
from neardup_core.hosts.statistics import HostPolicy
from neardup_core.index.tables import BandDesign, TableDesign, choose_design, design_named
from neardup_core.ingest.event import DEFAULT_MAX_BODY_BYTES


class SettingError(ValueError):
    """A setting outside its range or of the wrong type: `name` (a field, or an environment variable
    when it came from one), the `value` given and the `rule` it breaks."""

    def __init__(self, name: str, value: object, rule: str) -> None:
        self.name, self.value, self.rule = name, value, rule
        shown = shlex.quote(value) if isinstance(value, str) else repr(value)  # as a shell would take it back
        super().__init__(f"{name}={shown}: {rule}")


def check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    """`value` if it is an int (not a bool) with low <= value <= high (no upper bound when None)."""
    rule = f"must be an integer from {low} to {high}" if high is not None else f"must be an integer >= {low}"
    if not isinstance(value, int) or isinstance(value, bool):
        raise SettingError(name, value, rule)
    if value < low or (high is not None and value > high):
        raise SettingError(name, value, rule)
    return value


def check_float(name: str, value: object, low: float, high: float, *, low_open: bool = False) -> float:
    """`value` if it is a finite number within [low, high] ((low, high] with `low_open`)."""
    rule = f"must be a number {'>' if low_open else '>='} {low:g} and <= {high:g}"
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise SettingError(name, value, rule)
    if value < low or (low_open and value == low) or value > high:
        raise SettingError(name, value, rule)
    return float(value)


MAX_K = 32
"""Two random 64-bit fingerprints differ in about 32 bits: a larger k matches unrelated pages."""
MAX_SHINGLE_SIZE = 16
MAX_BANDS = 64
MAX_ROWS = 32
DAY_MS = 86_400_000
YEAR_S = 366 * 86_400
MAX_RETENTION_DAYS = 36_600
MAX_VERSIONS = 64


@dataclass(frozen=True)
class CoreSettings:
    """What decides a page: the distance, the tables, the features, the caps and the timeouts."""

    k: int = 3
    """Hamming distance (bits of 64) within which two main texts are near-duplicates: 0 to 32."""
    tables: str = "auto"
    """Table design: `auto` (the cheapest for k and `expected_pages`) or a name such as `k3-b6`."""
    expected_pages: int = 1_000_000
    """Expected number of stored pages, for `auto`: at least 1."""
    shingle_size: int = 2
    """Words per feature: 1 to 16."""
    min_features: int = 8
    """Pages with fewer distinct shingles are checked by their digests only (an unstable SimHash): at least 1."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """Larger bodies are rejected: 1 byte to 1 GiB."""
    decision_timeout_ms: int = 30_000
    """After this, a page whose probes have not all answered is decided provisionally: 1 ms to a day."""
    host_window_s: int = 3600
    """Window of the per-host statistics, by fetch time: 1 s to a year."""
    minhash: bool = True
    """MinHash signatures and LSH band tables beside the SimHash: near also means sharing a band
    with a Jaccard estimate >= `jaccard`."""
    bands: int = 20
    """LSH bands (one more table each) when `minhash` is on: 1 to 64."""
    rows: int = 4
    """Rows (8-bit minima) per band: 1 to 32; the signature has bands * rows rows."""
    jaccard: float = 0.75
    """The Jaccard estimate at or above which a page sharing a band is near: 0.01 to 1, in hundredths."""
    max_versions: int = 4
    """Versions (distinct main texts) a URL keeps, its latest by fetch: 1 to 64. Beyond it the oldest
    version leaves the URL's state and the index (`neardup_core/dedup/gather.py`), so a page whose
    text changes on every crawl costs bounded state; pages that arrive after that match it no more."""
    retention_ms: int | None = None
    """Versions first fetched, and URL states last fetched, longer ago than this (in event time) are
    removed (`neardup_core/dedup/retention.py`): None (keep everything) or 1 ms to 36,600 days."""

    def __post_init__(self) -> None:
        check_int("k", self.k, 0, MAX_K)
        check_int("expected_pages", self.expected_pages, 1)
        check_int("shingle_size", self.shingle_size, 1, MAX_SHINGLE_SIZE)
        check_int("min_features", self.min_features, 1)
        check_int("max_body_bytes", self.max_body_bytes, 1, 1 << 30)
        check_int("decision_timeout_ms", self.decision_timeout_ms, 1, DAY_MS)
        check_int("host_window_s", self.host_window_s, 1, YEAR_S)
        if not isinstance(self.minhash, bool):
            raise SettingError("minhash", self.minhash, "must be true or false")
        check_int("bands", self.bands, 1, MAX_BANDS)
        check_int("rows", self.rows, 1, MAX_ROWS)
        check_float("jaccard", self.jaccard, 0.0, 1.0, low_open=True)
        check_int("max_versions", self.max_versions, 1, MAX_VERSIONS)
        if self.retention_ms is not None:
            check_int("retention_ms", self.retention_ms, 1, MAX_RETENTION_DAYS * DAY_MS)
        if abs(self.jaccard * 100 - round(self.jaccard * 100)) > 1e-9:
            raise SettingError("jaccard", self.jaccard, "must be a multiple of 0.01 (it names the index)")
        if not isinstance(self.tables, str):
            raise SettingError("tables", self.tables, "must be `auto` or a design name such as `k3-b6`")
        try:
            design = self.design
        except ValueError as exc:
            raise SettingError("tables", self.tables, str(exc)) from None
        if design.k != self.k:
            raise SettingError("tables", self.tables, f"the design is for k={design.k}, but k={self.k}")

    @cached_property
    def design(self) -> TableDesign:
        """The near tables (`tables`), with the LSH bands when `minhash` is on."""
        near = choose_design(self.k, self.expected_pages) if self.tables == "auto" else design_named(self.tables)
        lsh = self.band_design
        if near.lsh is not None and near.lsh != lsh:
            raise ValueError(f"the design names bands {near.lsh.name}, but the settings say "
                             f"{lsh.name if lsh else 'MinHash off'}")
        return near.with_bands(lsh)

    @cached_property
    def band_design(self) -> BandDesign | None:
        """The LSH bands when MinHash is on, else None."""
        return BandDesign(self.bands, self.rows, self.jaccard) if self.minhash else None

    @cached_property
    def retention(self) -> Retention | None:
        """The retention window, or None when everything is kept (the default)."""
        return Retention(self.retention_ms) if self.retention_ms is not None else None

    @cached_property
    def host_policy(self) -> HostPolicy:
        return HostPolicy(window_s=self.host_window_s)


DEFAULT_SETTINGS = CoreSettings()
