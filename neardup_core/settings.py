"""The core's settings: one object, built once (by `streams/settings.py` from the environment, or by
an embedding program) and handed to every stage, so scan and the stream decide with the same knobs.

Every setting is checked when the object is built (`SettingError`, a `ValueError` naming the setting,
its value and what is allowed): a `shingle_size` of 0 would otherwise change every fingerprint
silently. The rules live here once; `streams.settings` reports them under the environment variable's
name."""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from neardup_core.dedup.retention import Retention
from neardup_core.fingerprint.containment import CONTAINMENT_BANDS, DEFAULT_BUCKET_TEXTS, DEFAULT_CONTAINMENT
from neardup_core.hosts.statistics import HostPolicy
from neardup_core.index.tables import (
    MAX_BUCKET_TEXTS,
    BandDesign,
    ContainmentDesign,
    TableDesign,
    choose_design,
    design_named,
)
from neardup_core.ingest.event import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_URL_BYTES
from neardup_core.messages import DEFAULT_MAX_MESSAGE_BYTES, MIN_MESSAGE_BYTES


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
MIN_URL_BYTES = 256
MESSAGE_BYTES_PER_URL_BYTE = 8
"""The URL cap is at most this fraction of the message limit: a decision holds its URL four times
(key, `url`, `duplicate_of`, `host`), and JSON writes some characters (`"`, `\\`) in two bytes."""
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
    max_url_bytes: int = DEFAULT_MAX_URL_BYTES
    """Longer URLs (UTF-8 bytes), and record keys, are rejected: 256 bytes to an eighth of
    `max_message_bytes` (122,952 with its default)."""
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    """A dead letter (key and value) is cut to fit this: 65,536 up to the default, the producer's
    request limit of 1,000,000 bytes less 16 KiB for the record's overhead (`messages.py`)."""
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
    partial_copies: bool = False
    """Partial copies (`partial_of`): the containment index beside the LSH bands, with MinHash on. Off by
    default: 48 more tables per page, several times the index step's work (bench/RESULTS.md, issue 25)."""
    containment: float = DEFAULT_CONTAINMENT
    """The containment estimate at or above which a page that holds another page's main text names it in
    `partial_of` (a partial copy), with MinHash on: 0.01 to 1, in hundredths. 0.5 was chosen on labelled
    corpus pairs (`fingerprint/containment.py`, bench/results/containment.md)."""
    containment_bucket_texts: int = DEFAULT_BUCKET_TEXTS
    """The most distinct main texts a containment bucket holds before it is saturated (read no more, its
    pairs withdrawn unless another bucket finds them): 0 (no cap: unbounded work per page) to 254
    (`fingerprint/containment.py`, `DEFAULT_BUCKET_TEXTS`)."""
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
        check_int("max_message_bytes", self.max_message_bytes, MIN_MESSAGE_BYTES, DEFAULT_MAX_MESSAGE_BYTES)
        url_high = self.max_message_bytes // MESSAGE_BYTES_PER_URL_BYTE
        if not isinstance(self.max_url_bytes, int) or isinstance(self.max_url_bytes, bool) \
                or not MIN_URL_BYTES <= self.max_url_bytes <= url_high:
            raise SettingError("max_url_bytes", self.max_url_bytes,
                               f"must be an integer from {MIN_URL_BYTES} to {url_high}, an eighth of the message "
                               "limit (NEARDUP_MAX_MESSAGE_BYTES): a decision holds its URL four times")
        check_int("decision_timeout_ms", self.decision_timeout_ms, 1, DAY_MS)
        check_int("host_window_s", self.host_window_s, 1, YEAR_S)
        if not isinstance(self.minhash, bool):
            raise SettingError("minhash", self.minhash, "must be true or false")
        check_int("bands", self.bands, 1, MAX_BANDS)
        check_int("rows", self.rows, 1, MAX_ROWS)
        check_float("jaccard", self.jaccard, 0.0, 1.0, low_open=True)
        if not isinstance(self.partial_copies, bool):
            raise SettingError("partial_copies", self.partial_copies, "must be true or false")
        check_float("containment", self.containment, 0.0, 1.0, low_open=True)
        if abs(self.containment * 100 - round(self.containment * 100)) > 1e-9:
            raise SettingError("containment", self.containment, "must be a multiple of 0.01 (it names the index)")
        check_int("containment_bucket_texts", self.containment_bucket_texts, 0, MAX_BUCKET_TEXTS)
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
        if near.partial is not None and near.partial != self.containment_design:
            raise ValueError(f"the design names a containment index {near.partial.name}, but the settings say "
                             f"{self.containment_design.name if self.containment_design else 'MinHash off'}")
        if near.lsh is not None and near.lsh != lsh:
            raise ValueError(f"the design names bands {near.lsh.name}, but the settings say "
                             f"{lsh.name if lsh else 'MinHash off'}")
        return near.with_bands(lsh, self.containment_design)

    @cached_property
    def band_design(self) -> BandDesign | None:
        """The LSH bands when MinHash is on, else None."""
        return BandDesign(self.bands, self.rows, self.jaccard) if self.minhash else None

    @cached_property
    def containment_design(self) -> ContainmentDesign | None:
        """The containment index when partial copies and MinHash are on, else None."""
        if not (self.minhash and self.partial_copies):
            return None
        return ContainmentDesign(CONTAINMENT_BANDS, self.containment, self.containment_bucket_texts)

    @cached_property
    def retention(self) -> Retention | None:
        """The retention window, or None when everything is kept (the default)."""
        return Retention(self.retention_ms) if self.retention_ms is not None else None

    @cached_property
    def host_policy(self) -> HostPolicy:
        """How hosts are scored: windows of `host_window_s`, the other knobs at their defaults (`HostPolicy`)."""
        return HostPolicy(window_s=self.host_window_s)


DEFAULT_SETTINGS = CoreSettings()


STATE_SETTINGS = ("k", "design", "shingle_size", "min_features")
"""The settings a state (an index and its URL states) is built with: what its table keys and stored
fingerprints mean. The table design's name covers the near tables and the LSH bands (blocks, tables,
bands, rows, J, MinHash on or off, the containment index and its threshold); `expected_pages` and
`tables` count only through the design they pick. The shingle size and the feature floor change every
fingerprint stored. A state read under other values misses its own duplicates, or reads keys of one
design as another's. The other settings (the body cap, the decision timeout, the retention, the host
window) act on each page as it comes and may change from one run to the next."""

DESIGN_INPUTS = ("tables", "expected_pages", "minhash", "bands", "rows", "jaccard", "partial_copies", "containment",
                 "containment_bucket_texts")
"""What picks the table design besides k: recorded beside it, to say which of them made it differ."""


def state_settings(settings: CoreSettings) -> dict[str, object]:
    """The `STATE_SETTINGS` of `settings`, as a state records them (JSON values)."""
    return {"k": settings.k, "design": settings.design.name, "shingle_size": settings.shingle_size,
            "min_features": settings.min_features}


def design_inputs(settings: CoreSettings) -> dict[str, object]:
    """The `DESIGN_INPUTS` of `settings` (JSON values): only to explain a design that differs."""
    return {name: getattr(settings, name) for name in DESIGN_INPUTS}


@dataclass(frozen=True)
class Difference:
    """One setting of a state that another run would change: the state's value and the run's."""

    setting: str
    state: object
    own: object


def state_differences(recorded: Mapping[str, object], own: Mapping[str, object]) -> list[Difference]:
    """The settings (`STATE_SETTINGS`, in that order) whose recorded value differs from `own`. A setting
    the record lacks (a state written before it was recorded) is not compared: nothing says what it was."""
    return [Difference(name, recorded[name], own[name]) for name in STATE_SETTINGS
            if name in recorded and name in own and recorded[name] != own[name]]
