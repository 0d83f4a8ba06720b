"""All settings, from environment variables with documented defaults (the README lists them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from neardup_core.settings import CoreSettings


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not an integer") from None


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not a number") from None


@dataclass(frozen=True)
class Settings:
    broker: str = field(default_factory=lambda: _env("NEARDUP_BROKER", "127.0.0.1:9092"))
    """Kafka bootstrap servers, comma-separated (host:port)."""
    topic_prefix: str = field(default_factory=lambda: _env("NEARDUP_TOPIC_PREFIX", ""))
    """Prepended to every topic name, e.g. `crawl1.` gives `crawl1.pages.fetched`."""
    app_id: str = field(default_factory=lambda: _env("NEARDUP_APP_ID", "neardup"))
    """Faust app id: the consumer group and the prefix of its changelog topics."""
    data_dir: Path = field(default_factory=lambda: Path(_env("NEARDUP_DATA_DIR", "neardup-data")))
    """Where a worker keeps its RocksDB tables; one per worker on a machine."""
    web_port: int = field(default_factory=lambda: _int("NEARDUP_WEB_PORT", 6066))
    """The worker's web port: /health and /metrics (Prometheus)."""
    partitions: int = field(default_factory=lambda: _int("NEARDUP_PARTITIONS", 0))
    """Partitions of the internal topics; 0 = `topics create`: 8, worker: read from the broker."""
    k: int = field(default_factory=lambda: _int("NEARDUP_K", 3))
    """Hamming distance (bits of 64) within which two main texts are near-duplicates."""
    tables: str = field(default_factory=lambda: _env("NEARDUP_TABLES", "auto"))
    """Table design: `auto` (from k and NEARDUP_EXPECTED_PAGES) or a name such as `k3-b6`."""
    expected_pages: int = field(default_factory=lambda: _int("NEARDUP_EXPECTED_PAGES", 1_000_000))
    """Expected number of stored pages, for `auto` table designs."""
    index_cache_mb: int = field(default_factory=lambda: _int("NEARDUP_INDEX_CACHE_MB", 32))
    """RocksDB block cache of the index table, per partition store (MiB); deploy/DEPLOY.md sizes memory with 32."""
    max_body_bytes: int = field(default_factory=lambda: _int("NEARDUP_MAX_BODY_BYTES", 5 * 1024 * 1024))
    """Bodies larger than this are rejected."""
    shingle_size: int = field(default_factory=lambda: _int("NEARDUP_SHINGLE_SIZE", 2))
    min_features: int = field(default_factory=lambda: _int("NEARDUP_MIN_FEATURES", 8))
    """Pages with fewer distinct shingles are checked by digest only."""
    decision_timeout_s: float = field(default_factory=lambda: _float("NEARDUP_DECISION_TIMEOUT_S", 30.0))
    """After this, a page whose probes have not all answered is decided provisionally."""
    tick_interval_s: float = field(default_factory=lambda: _float("NEARDUP_TICK_INTERVAL_S", 5.0))
    batch_max: int = field(default_factory=lambda: _int("NEARDUP_BATCH_MAX", 256))
    """Fetched pages the worker takes at a time: their probes, answers and state changes travel in
    one record per partition, so larger batches cost fewer Kafka records per page."""
    batch_wait_s: float = field(default_factory=lambda: _float("NEARDUP_BATCH_WAIT_S", 0.2))
    """How long a batch of fetched pages waits to fill before it goes (latency against records per page)."""
    extract_processes: int = field(default_factory=lambda: _int("NEARDUP_EXTRACT_PROCESSES", os.cpu_count() or 1))
    """Processes for decoding and extraction (the CPU-heavy part); 0 = in the event loop."""
    session_timeout_s: float = field(default_factory=lambda: _float("NEARDUP_SESSION_TIMEOUT_S", 60.0))
    """How long the group waits for a silent worker before giving its partitions to others."""
    group_instance_id: str = field(default_factory=lambda: _env("NEARDUP_GROUP_INSTANCE_ID", ""))
    """Static group membership (e.g. the pod name): a restart within the session timeout keeps
    the worker's partitions without a rebalance."""
    host_window_s: int = field(default_factory=lambda: _int("NEARDUP_HOST_WINDOW_S", 3600))
    """Window of the per-host statistics, by fetch time."""
    security_protocol: str = field(default_factory=lambda: _env("NEARDUP_SECURITY_PROTOCOL", "PLAINTEXT"))
    sasl_mechanism: str = field(default_factory=lambda: _env("NEARDUP_SASL_MECHANISM", ""))
    sasl_username: str = field(default_factory=lambda: _env("NEARDUP_SASL_USERNAME", ""))
    sasl_password: str = field(default_factory=lambda: _env("NEARDUP_SASL_PASSWORD", ""))
    ssl_cafile: str = field(default_factory=lambda: _env("NEARDUP_SSL_CAFILE", ""))
    ssl_certfile: str = field(default_factory=lambda: _env("NEARDUP_SSL_CERTFILE", ""))
    ssl_keyfile: str = field(default_factory=lambda: _env("NEARDUP_SSL_KEYFILE", ""))

    @cached_property
    def core(self) -> CoreSettings:
        """The core's settings, built once: what every stage of scan and the stream decides with."""
        try:
            return CoreSettings(k=self.k, tables=self.tables, expected_pages=self.expected_pages,
                                shingle_size=self.shingle_size, min_features=self.min_features,
                                max_body_bytes=self.max_body_bytes,
                                decision_timeout_ms=int(self.decision_timeout_s * 1000),
                                host_window_s=self.host_window_s)
        except ValueError as exc:
            raise SystemExit(f"NEARDUP_TABLES={self.tables}, NEARDUP_K={self.k}: {exc}") from None

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


def load() -> Settings:
    return Settings()
