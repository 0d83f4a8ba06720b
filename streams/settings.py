"""All settings, from environment variables with documented defaults (`docs/settings.md` lists them).

Each `NEARDUP_*` variable is read here and nowhere else (but NEARDUP_CACHE_DIR, which the core's
stoplists module reads and this one checks), and checked when `Settings` is built: a value of the
wrong type or outside its range raises `SettingError` naming the variable, its value and what is
allowed (the CLI prints it on one line and exits with 2). The core's knobs are checked by
`CoreSettings` (their one rule), reported here under their variable's name."""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from neardup_core.extract.stoplists import CACHE_DIR_ENV, cache_dir
from neardup_core.fingerprint.containment import DEFAULT_BUCKET_TEXTS, DEFAULT_CONTAINMENT
from neardup_core.ingest.event import DEFAULT_MAX_URL_BYTES
from neardup_core.messages import DEFAULT_MAX_MESSAGE_BYTES
from neardup_core.settings import DAY_MS, MAX_RETENTION_DAYS, CoreSettings, SettingError, check_float, check_int

__all__ = ["SECURITY_PROTOCOLS", "SASL_MECHANISMS", "SettingError", "Settings", "UnknownVariable", "env_name",
           "is_set", "known_variables", "load", "unknown_variables"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""What `streams.app.broker_credentials` passes to aiokafka (empty: PLAIN)."""
_TOPIC_CHARS = re.compile(r"[A-Za-z0-9._-]*")
_BROKER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s:/,\[\]]+):(\d{1,5})")


def _raw(name: str) -> str | None:
    raw = os.environ.get(name)
    return None if raw is None or raw.strip() == "" else raw.strip()


_DROP_SPEC = re.compile(r"[A-Za-z0-9._-]+:\d+:\d+")


def _str(name: str, default: str) -> str:
    raw = os.environ.get(name)
    return default if raw is None or raw == "" else raw


def _int(name: str, default: int) -> int:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SettingError(name, raw, "must be an integer") from None


def _float(name: str, default: float) -> float:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(name, raw, "must be a number") from None
    if not math.isfinite(value):
        raise SettingError(name, raw, "must be a finite number")
    return value


def _bool(name: str, default: bool) -> bool:
    raw = _raw(name)
    if raw is None:
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise SettingError(name, raw, "must be true or false (1/0, yes/no, on/off)")


def _days_or_off(name: str, default: float | None) -> float | None:
    """A number of days; unset, empty, `0` or `off`: None (off)."""
    raw = _raw(name)
    if raw is None or raw.lower() == "off":
        return default
    value = _float(name, 0.0)
    return None if value == 0 else value


def _env(name: str, default: Any, parse: Any = _str) -> Any:
    """A field read from environment variable `name` (its `metadata["env"]`), `default` when unset or empty."""
    return field(default_factory=lambda: parse(name, default), metadata={"env": name})


@dataclass(frozen=True)
class Settings:
    broker: str = _env("NEARDUP_BROKER", "127.0.0.1:9092")
    """Kafka bootstrap servers, comma-separated (host:port)."""
    topic_prefix: str = _env("NEARDUP_TOPIC_PREFIX", "")
    """Prepended to every topic name, e.g. `crawl1.` gives `crawl1.pages.fetched`."""
    app_id: str = _env("NEARDUP_APP_ID", "neardup")
    """Faust app id: the consumer group and the prefix of its changelog topics."""
    data_dir: Path = field(default_factory=lambda: Path(_str("NEARDUP_DATA_DIR", "neardup-data")),
                           metadata={"env": "NEARDUP_DATA_DIR"})
    """Where a worker keeps its RocksDB tables; one per worker on a machine."""
    web_port: int = _env("NEARDUP_WEB_PORT", 6066, _int)
    """The worker's web port: /health and /metrics (Prometheus)."""
    partitions: int = _env("NEARDUP_PARTITIONS", 0, _int)
    """Partitions of the internal topics; 0 = `topics create`: 8, worker: read from the broker."""
    k: int = _env("NEARDUP_K", 3, _int)
    """Hamming distance (bits of 64) within which two main texts are near-duplicates."""
    tables: str = _env("NEARDUP_TABLES", "auto")
    """Table design: `auto` (from k and NEARDUP_EXPECTED_PAGES) or a name such as `k3-b6`."""
    expected_pages: int = _env("NEARDUP_EXPECTED_PAGES", 1_000_000, _int)
    """Expected number of stored pages, for `auto` table designs."""
    index_cache_mb: int = _env("NEARDUP_INDEX_CACHE_MB", 32, _int)
    """RocksDB block cache of the index table, per partition store (MiB), and of its replica in the
    index process, which does the reads; deploy/DEPLOY.md sizes memory with 32."""
    max_body_bytes: int = _env("NEARDUP_MAX_BODY_BYTES", 5 * 1024 * 1024, _int)
    """Bodies larger than this are rejected."""
    max_url_bytes: int = _env("NEARDUP_MAX_URL_BYTES", DEFAULT_MAX_URL_BYTES, _int)
    """URLs (and record keys) longer than this many UTF-8 bytes are rejected."""
    max_message_bytes: int = _env("NEARDUP_MAX_MESSAGE_BYTES", DEFAULT_MAX_MESSAGE_BYTES, _int)
    """A dead letter's key and value are cut to fit this (the producer's 1,000,000 less 16 KiB)."""
    shingle_size: int = _env("NEARDUP_SHINGLE_SIZE", 2, _int)
    min_features: int = _env("NEARDUP_MIN_FEATURES", 8, _int)
    """Pages with fewer distinct shingles are checked by digest only."""
    minhash: bool = _env("NEARDUP_MINHASH", True, _bool)
    """MinHash signatures and LSH band tables beside the SimHash."""
    bands: int = _env("NEARDUP_BANDS", 20, _int)
    """LSH bands (one more table each) when MinHash is on."""
    rows: int = _env("NEARDUP_ROWS", 4, _int)
    """Rows per LSH band."""
    jaccard: float = _env("NEARDUP_JACCARD", 0.75, _float)
    """The Jaccard estimate at or above which a page sharing a band is near (in hundredths)."""
    partial_copies: bool = _env("NEARDUP_PARTIAL_COPIES", False, _bool)
    """Partial copies (`partial_of`, the containment index) with MinHash on; off by default (48 more tables)."""
    containment: float = _env("NEARDUP_CONTAINMENT", DEFAULT_CONTAINMENT, _float)
    """The containment estimate at or above which a page names a page it holds in `partial_of` (in hundredths)."""
    containment_bucket_texts: int = _env("NEARDUP_CONTAINMENT_BUCKET_TEXTS", DEFAULT_BUCKET_TEXTS, _int)
    """The distinct main texts a containment bucket holds before it is saturated (0: no cap)."""
    decision_timeout_s: float = _env("NEARDUP_DECISION_TIMEOUT_S", 30.0, _float)
    """After this, a page whose probes have not all answered is decided provisionally."""
    tick_interval_s: float = _env("NEARDUP_TICK_INTERVAL_S", 5.0, _float)
    batch_max: int = _env("NEARDUP_BATCH_MAX", 256, _int)
    """Fetched pages the worker takes at a time: their probes, answers and state changes travel in
    one record per partition, so larger batches cost fewer Kafka records per page."""
    batch_wait_s: float = _env("NEARDUP_BATCH_WAIT_S", 0.2, _float)
    """How long a batch of fetched pages waits to fill before it goes (latency against records per page)."""
    hop_wait_s: float = _env("NEARDUP_HOP_WAIT_S", 0.05, _float)
    """How long the later steps (gather, index, hosts) collect the records that arrive together: a
    step sends one record per partition at once, and the next step takes them as one batch."""
    fetch_min_bytes: int = _env("NEARDUP_FETCH_MIN_BYTES", 64 * 1024, _int)
    """The least a fetch of the worker's consumer asks the broker to gather before it answers (Kafka's
    `fetch.min.bytes`). With 1 (Kafka's default) every record produced to any partition the worker reads
    ends a fetch, and a busy pipeline fetches and decodes many small answers (bench/RESULTS.md, session 18:
    less broker CPU per page at 32 partitions in most runs, the worker's within the noise, p99 latency lower)."""
    fetch_max_wait_ms: int = _env("NEARDUP_FETCH_MAX_WAIT_MS", 100, _int)
    """How long the broker holds a fetch that has less than `fetch_min_bytes` (Kafka's `fetch.max.wait.ms`):
    at a low rate each of a page's steps can wait this long for its input, and an idle worker fetches this
    often (at 32 partitions, 0.07 of a core for the worker at 100 ms, 0.11 at 50, 0.05 at 1500)."""
    extract_processes: int = _env("NEARDUP_EXTRACT_PROCESSES", os.cpu_count() or 1, _int)
    """Processes for decoding and extraction (the CPU-heavy part); 0 = in the event loop."""
    extract_nice: int = _env("NEARDUP_EXTRACT_NICE", 10, _int)
    """How much lower the extraction processes' CPU priority is than the worker's (`nice`): when the
    cores are busy, the steps that finish pages (the index process, the event loop) run first, and
    new pages wait in Kafka instead of piling up half done; 0 = the same priority. The worker's only:
    `neardup scan` has `scan_nice`."""
    scan_nice: int = _env("NEARDUP_SCAN_NICE", 0, _int)
    """How much lower `neardup scan`'s extraction processes' CPU priority is than its own (`nice`): 0, a
    batch command keeps the priority it was started with rather than yielding to unrelated work (on a
    loaded machine a scan at nice 10 ran at about half its quiet speed); raise it to make a scan yield."""
    index_processes: int = _env("NEARDUP_INDEX_PROCESSES", min(2, os.cpu_count() or 1), _int)
    """Processes for the index step, each with its share of the index partitions, reading a replica
    of the index table (`streams/processes/index.py`); 0 = in the event loop. Two by default (one on a
    one-core machine): at full rate one process ran the last take of a burst (about 1,700 pages) alone
    while a core was idle; two ran the stream bench at 8 partitions 1.09x faster at the same CPU per
    page (bench/RESULTS.md, session 19), for about 90 MiB more per worker."""
    session_timeout_s: float = _env("NEARDUP_SESSION_TIMEOUT_S", 60.0, _float)
    """How long the group waits for a silent worker before giving its partitions to others."""
    stall_check_s: float = _env("NEARDUP_STALL_CHECK_S", 10.0, _float)
    """How often the worker looks for stream partitions it holds records of that nothing processes (fetched
    and dropped by its Kafka client library, `streams.kafka.redelivery`): one unchanged over two looks is read
    again from its committed offset; 0 = never."""
    fault_drop_fetched: str = _env("NEARDUP_FAULT_DROP_FETCHED", "")
    """For tests only: `topic:partition:offset[,...]` (the topic without the prefix), records the worker's
    consumer fetches and then drops once without a word, as its Kafka client library can; never set it in
    production."""
    group_instance_id: str = _env("NEARDUP_GROUP_INSTANCE_ID", "")
    """Static group membership (e.g. the pod name): a restart within the session timeout keeps
    the worker's partitions without a rebalance."""
    host_window_s: int = _env("NEARDUP_HOST_WINDOW_S", 3600, _int)
    """Window of the per-host statistics, by fetch time."""
    max_versions: int = _env("NEARDUP_MAX_VERSIONS", 4, _int)
    """Versions (distinct main texts) a URL keeps, its latest by fetch; older ones leave the index."""
    retention_days: float | None = _env("NEARDUP_RETENTION_DAYS", None, _days_or_off)
    """Forget versions and URL states older than this, by event time (None: keep everything)."""
    security_protocol: str = _env("NEARDUP_SECURITY_PROTOCOL", "PLAINTEXT")
    sasl_mechanism: str = _env("NEARDUP_SASL_MECHANISM", "")
    sasl_username: str = _env("NEARDUP_SASL_USERNAME", "")
    sasl_password: str = _env("NEARDUP_SASL_PASSWORD", "")
    ssl_cafile: str = _env("NEARDUP_SSL_CAFILE", "")
    ssl_certfile: str = _env("NEARDUP_SSL_CERTFILE", "")
    ssl_keyfile: str = _env("NEARDUP_SSL_KEYFILE", "")
    strict_env: bool = _env("NEARDUP_STRICT_ENV", False, _bool)
    """An unknown `NEARDUP_*` variable (a misspelled setting) stops the command (exit code 2) instead of a
    warning on stderr; `neardup --strict-env` does the same."""

    def __post_init__(self) -> None:
        """Every rule of the streams' own settings, then the core's (by building `core`)."""
        e = env_name
        brokers = [_BROKER.fullmatch(b.strip()) for b in self.broker.split(",")] if isinstance(self.broker, str) \
            else [None]
        if not all(m and 1 <= int(m[2]) <= 65535 for m in brokers):
            raise SettingError(e("broker"), self.broker, "must be host:port[,host:port...] with ports 1 to 65535")
        if not isinstance(self.topic_prefix, str) or not _TOPIC_CHARS.fullmatch(self.topic_prefix) \
                or len(self.topic_prefix) > 200:
            raise SettingError(e("topic_prefix"), self.topic_prefix,
                               "must be at most 200 of the characters a Kafka topic name allows: A-Z a-z 0-9 . _ -")
        if not isinstance(self.app_id, str) or not self.app_id or not _TOPIC_CHARS.fullmatch(self.app_id) \
                or len(self.app_id) > 200:
            raise SettingError(e("app_id"), self.app_id,
                               "must be 1 to 200 of the characters a Kafka topic name allows: A-Z a-z 0-9 . _ -")
        if not isinstance(self.data_dir, Path):
            raise SettingError(e("data_dir"), self.data_dir, "must be a path")
        check_int(e("web_port"), self.web_port, 1, 65535)
        check_int(e("partitions"), self.partitions, 0, 10_000)
        check_int(e("index_cache_mb"), self.index_cache_mb, 1, 1 << 20)
        check_float(e("tick_interval_s"), self.tick_interval_s, 0.0, 3600.0, low_open=True)
        check_int(e("batch_max"), self.batch_max, 1, 100_000)
        check_float(e("batch_wait_s"), self.batch_wait_s, 0.0, 60.0, low_open=True)
        check_float(e("hop_wait_s"), self.hop_wait_s, 0.0, 60.0, low_open=True)
        check_int(e("fetch_min_bytes"), self.fetch_min_bytes, 1, 64 << 20)
        check_int(e("fetch_max_wait_ms"), self.fetch_max_wait_ms, 0, 60_000)
        check_int(e("extract_processes"), self.extract_processes, 0, 256)
        check_int(e("extract_nice"), self.extract_nice, 0, 19)
        check_int(e("scan_nice"), self.scan_nice, 0, 19)
        check_int(e("index_processes"), self.index_processes, 0, 64)
        # Kafka brokers' defaults: group.min.session.timeout.ms 6 s, group.max.session.timeout.ms 30 min
        check_float(e("session_timeout_s"), self.session_timeout_s, 6.0, 1800.0)
        if self.stall_check_s != 0:
            try:
                check_float(e("stall_check_s"), self.stall_check_s, 1.0, 3600.0)
            except SettingError:
                raise SettingError(e("stall_check_s"), self.stall_check_s,
                                   "must be 0 (off) or a number of seconds from 1 to 3600") from None
        if not isinstance(self.fault_drop_fetched, str) or not all(
                _DROP_SPEC.fullmatch(x) for x in self.fault_drop_fetched.split(",") if x):
            raise SettingError(e("fault_drop_fetched"), self.fault_drop_fetched,
                               "must be empty or topic:partition:offset[,topic:partition:offset...]")
        if not isinstance(self.group_instance_id, str) or not _TOPIC_CHARS.fullmatch(self.group_instance_id) \
                or len(self.group_instance_id) > 249:
            raise SettingError(e("group_instance_id"), self.group_instance_id,
                               "must be empty or up to 249 of A-Z a-z 0-9 . _ -")
        if not isinstance(self.security_protocol, str) or self.security_protocol.upper() not in SECURITY_PROTOCOLS:
            raise SettingError(e("security_protocol"), self.security_protocol,
                               f"must be one of {', '.join(SECURITY_PROTOCOLS)}")
        if not isinstance(self.sasl_mechanism, str) or (self.sasl_mechanism
                                                        and self.sasl_mechanism.upper() not in SASL_MECHANISMS):
            raise SettingError(e("sasl_mechanism"), self.sasl_mechanism,
                               f"must be empty (PLAIN) or one of {', '.join(SASL_MECHANISMS)}")
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            path = getattr(self, name)
            if path and not os.path.isfile(path):
                raise SettingError(e(name), path, "must name a readable file")
        _check_cache_dir()
        self.core  # noqa: B018  (the core's rules)

    @cached_property
    def core(self) -> CoreSettings:
        """The core's settings, built once: what every stage of scan and the stream decides with."""
        timeout_s = self.decision_timeout_s
        timeout_rule = f"must be a number of seconds from 0.001 to {DAY_MS // 1000}"
        if not isinstance(timeout_s, int | float) or isinstance(timeout_s, bool) or not math.isfinite(timeout_s):
            raise SettingError(env_name("decision_timeout_s"), timeout_s, timeout_rule)
        retention = self.retention_days
        retention_rule = f"must be off (empty, 0 or off) or a number of days > 0 and <= {MAX_RETENTION_DAYS}"
        if retention is not None:
            if not isinstance(retention, int | float) or isinstance(retention, bool) or not math.isfinite(retention) \
                    or not 0 < retention <= MAX_RETENTION_DAYS:
                raise SettingError(env_name("retention_days"), retention, retention_rule)
        try:
            return CoreSettings(k=self.k, tables=self.tables, expected_pages=self.expected_pages,
                                shingle_size=self.shingle_size, min_features=self.min_features,
                                minhash=self.minhash, bands=self.bands, rows=self.rows, jaccard=self.jaccard,
                                partial_copies=self.partial_copies, containment=self.containment,
                                containment_bucket_texts=self.containment_bucket_texts,
                                max_body_bytes=self.max_body_bytes, max_url_bytes=self.max_url_bytes,
                                max_message_bytes=self.max_message_bytes,
                                decision_timeout_ms=round(timeout_s * 1000),
                                host_window_s=self.host_window_s, max_versions=self.max_versions,
                                retention_ms=None if retention is None else max(1, round(retention * DAY_MS)))
        except SettingError as exc:
            if exc.name == "decision_timeout_ms":  # the core's rule, in the variable's unit
                raise SettingError(env_name("decision_timeout_s"), timeout_s, timeout_rule) from None
            raise SettingError(env_name(exc.name), getattr(self, exc.name), exc.rule) from None

    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}{name}"

    def confluent_config(self) -> dict[str, str | int | float | bool]:
        """Client settings for confluent-kafka (librdkafka names)."""
        conf: dict[str, str | int | float | bool] = {"bootstrap.servers": self.broker,
                                                     "security.protocol": self.security_protocol}
        optional = {"sasl.mechanism": self.sasl_mechanism, "sasl.username": self.sasl_username,
                    "sasl.password": self.sasl_password, "ssl.ca.location": self.ssl_cafile,
                    "ssl.certificate.location": self.ssl_certfile, "ssl.key.location": self.ssl_keyfile}
        conf.update({k: v for k, v in optional.items() if v})
        return conf


def _check_cache_dir() -> None:
    """NEARDUP_CACHE_DIR, when set, must be a directory or a path where one can be made: a file, or a
    path under one, can never hold the cache. The stoplists module reads the variable itself (every
    extraction process and a program embedding the core need it without these settings) and keeps its
    rule: a directory it cannot write to only means the index is built in memory."""
    if not os.environ.get(CACHE_DIR_ENV):
        return  # the default location; the stoplists cache falls back to memory if it is unusable
    path = cache_dir()
    for existing in (path, *path.parents):
        if existing.exists():
            if not existing.is_dir():
                raise SettingError(CACHE_DIR_ENV, str(path), "must be a directory or a path where one can be "
                                   f"created; {existing} is not a directory")
            return


_ENV_NAMES: dict[str, str] = {f.name: f.metadata["env"] for f in fields(Settings)}


def env_name(field_name: str) -> str:
    """The environment variable a field of `Settings` is read from (`NEARDUP_...`)."""
    return _ENV_NAMES[field_name]


def is_set(field_name: str) -> bool:
    """Whether the variable of `field_name` is set to a non-blank value rather than left to its default
    (`neardup demo` starts a local broker only when NEARDUP_BROKER is not set)."""
    return _raw(env_name(field_name)) is not None


OTHER_VARIABLES = {
    "NEARDUP_CACHE_DIR": "where the stoplists' index is cached (read by the core)",
    "NEARDUP_CORPUS": "the optional evaluation corpus (tests, benchmarks, faults)",
    "NEARDUP_IMPORTANCE": "the Scrapy publisher", "NEARDUP_FLUSH_TIMEOUT_S": "the Scrapy publisher",
    "NEARDUP_PRODUCER_CONFIG": "the Scrapy publisher", "NEARDUP_CRAWL_ID": "the Scrapy publisher",
    "NEARDUP_TEST_BROKER": "tests", "NEARDUP_TEST_DUMP_DIR": "tests", "NEARDUP_DOCS_SCREENSHOTS": "tests",
    "NEARDUP_SCREENSHOT_DIR": "tests", "NEARDUP_CHROMIUM": "tests", "NEARDUP_IMAGE_SERVICES": "tests",
    "NEARDUP_KAFKA_VERSION": "deploy/local-kafka", "NEARDUP_KAFKA_DIRS_FILE": "deploy/local-kafka",
    "NEARDUP_KAFKA_PORT": "deploy/local-kafka", "NEARDUP_KAFKA_DIR": "deploy/local-kafka",
    "NEARDUP_KAFKA_JAVA": "deploy/local-kafka", "NEARDUP_KAFKA_CACHE": "deploy/local-kafka",
    "NEARDUP_KAFKA_HEAP": "deploy/local-kafka", "NEARDUP_KAFKA_JAVA_OPTS": "deploy/local-kafka",
    "NEARDUP_VALIDATE_TOOLS": "deploy/validate-manifests", "NEARDUP_VALIDATE_REEXEC": "deploy/validate-manifests",
    "NEARDUP_INPUT_DIR": "deploy/docker-compose.yml", "NEARDUP_IMAGE": "deploy/docker-compose.yml",
    "NEARDUP_TOPICS": "bench", "NEARDUP_CI_TIMEOUT": ".ci/run", "NEARDUP_CI_KAFKA4": ".ci/run",
    "NEARDUP_CI_KAFKA4_TIMEOUT": ".ci/run", "NEARDUP_CI_LOG_DIR": ".ci/run", "NEARDUP_CI_LINT_TIMEOUT": ".ci/run",
    "NEARDUP_CI_DOCS_TIMEOUT": ".ci/run",
    **{f"NEARDUP_{name}": "the Scrapy loop (streams/scrapy/)" for name in (
        "MODE", "STATE_DIR", "APPLY_RULES", "APPLY_BUDGET", "TRAP_PENALTY", "PRIORITY_STEP", "DUPLICATE_ITEMS",
        "FOLLOW_DUPLICATES", "ITEM_HOLD_S", "DECISION_WAIT_S")},
}
"""`NEARDUP_*` variables read outside `Settings` (by the core, the Scrapy publisher, the tools and tests) and
what reads each: known, so not reported as unknown."""


@dataclass(frozen=True)
class UnknownVariable:
    """A `NEARDUP_*` variable that no part of neardup reads, and the known one closest to it, if any."""

    name: str
    closest: str | None

    def __str__(self) -> str:
        hint = f"; did you mean {self.closest}?" if self.closest else ""
        return f"unknown setting {self.name} (no part of neardup reads it){hint}"


def known_variables() -> set[str]:
    """Every `NEARDUP_*` variable some part of neardup reads."""
    return {*_ENV_NAMES.values(), *OTHER_VARIABLES, *RETIRED}


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[UnknownVariable]:
    """The `NEARDUP_*` variables of `environ` (default: this process's) that nothing reads, sorted, each
    with the closest known name (difflib's ratio >= 0.75): a misspelled setting would else be ignored."""
    env = os.environ if environ is None else environ
    known = sorted(known_variables())
    return [UnknownVariable(name, next(iter(difflib.get_close_matches(name, known, n=1, cutoff=0.75)), None))
            for name in sorted(env) if name.startswith("NEARDUP_") and name not in known]


RETIRED = {"NEARDUP_INDEX_PROCESS": "replaced by NEARDUP_INDEX_PROCESSES, a count (0 = in the event loop)"}
"""Variables that no longer mean anything, and what took their place: set, they are refused, not ignored."""


def load() -> Settings:
    """The settings from the environment; `SettingError` when one is invalid, with the value as it was
    written in the environment, or when a retired variable is set."""
    for name, instead in RETIRED.items():
        if (raw := os.environ.get(name)) is not None:
            raise SettingError(name, raw, instead)
    try:
        return Settings()
    except SettingError as exc:
        raw = os.environ.get(exc.name)
        if raw is None or raw == exc.value:
            raise
        raise SettingError(exc.name, raw, exc.rule) from None
