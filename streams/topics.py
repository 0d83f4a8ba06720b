"""Topic names, their partitions and configs, and creating them."""

from __future__ import annotations

from dataclasses import dataclass

from streams.settings import Settings

DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class TopicSpec:
    name: str
    config: dict[str, str]
    internal: bool = False
    doc: str = ""


def topic_specs(settings: Settings) -> list[TopicSpec]:
    """Every topic neardup reads or writes (Faust's own changelog topics aside)."""
    compact = {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000"}
    week = {"cleanup.policy": "delete", "retention.ms": str(7 * DAY_MS)}
    t = settings.topic
    return [
        TopicSpec(t("pages.fetched"), week, doc="input: fetched pages, keyed by URL"),
        TopicSpec(t("dedup.decisions"), compact, doc="one decision per URL (last revision wins)"),
        TopicSpec(t("frontier.host-signals"), compact, doc="per-host trap signals (last one wins)"),
        TopicSpec(t("pages.rejected"), {"cleanup.policy": "delete", "retention.ms": str(30 * DAY_MS)},
                  doc="dead letters: bad events with the reason and the original bytes"),
        TopicSpec(t("neardup.gather"), {"cleanup.policy": "delete", "retention.ms": str(3 * DAY_MS)}, True,
                  "internal: fetches, answers, revisions and ticks, keyed by URL"),
        TopicSpec(t("neardup.probes"), {"cleanup.policy": "delete", "retention.ms": str(3 * DAY_MS)}, True,
                  "internal: one probe per table bucket, keyed by bucket"),
        TopicSpec(t("neardup.hosts"), {"cleanup.policy": "delete", "retention.ms": str(3 * DAY_MS)}, True,
                  "internal: decision changes, keyed by host"),
    ]


TABLES = ("urls", "pending", "hosts")


def table_names(settings: Settings) -> list[str]:
    """The worker's Faust tables; the index table is named after its design, so that another
    design starts an index of its own instead of mixing keys of two designs."""
    return [*TABLES, f"index-{settings.design().name}"]


def changelog_specs(settings: Settings) -> list[TopicSpec]:
    """Faust's changelog topics of the worker's tables (`{app_id}-{table}-changelog`), created
    up front: a worker that starts before they exist can read empty metadata and fail."""
    return [TopicSpec(f"{settings.app_id}-{table}-changelog", {"cleanup.policy": "compact"}, True,
                      f"internal: changelog of the {table} table") for table in table_names(settings)]


def check_broker(settings: Settings, timeout_s: float = 15.0) -> list[str]:
    """The broker's topic names; a clear exit when it cannot be reached."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**settings.confluent_config(), "log_level": 0})
    try:
        return list(admin.list_topics(timeout=timeout_s).topics)
    except KafkaException as exc:
        raise SystemExit(f"cannot reach Kafka at {settings.broker} (NEARDUP_BROKER): {exc.args[0]}") from None


def create_topics(settings: Settings, partitions: int, *, timeout_s: float = 30.0) -> dict[str, str]:
    """Create the topics that do not exist yet: name -> 'created' or 'exists (N partitions)'."""
    from confluent_kafka.admin import AdminClient, NewTopic

    check_broker(settings)
    admin = AdminClient(settings.confluent_config())
    existing = admin.list_topics(timeout=timeout_s).topics
    specs = topic_specs(settings) + changelog_specs(settings)
    wanted = [NewTopic(s.name, num_partitions=partitions, replication_factor=-1, config=s.config)
              for s in specs if s.name not in existing]
    out = {s.name: f"exists ({len(existing[s.name].partitions)} partitions)" for s in specs
           if s.name in existing}
    if wanted:
        for name, future in admin.create_topics(wanted, request_timeout=timeout_s).items():
            future.result()
            out[name] = f"created ({partitions} partitions)"
    return out


def internal_partitions(settings: Settings, *, timeout_s: float = 20.0) -> int:
    """Partitions of the internal topics on the broker (they must all have the same count)."""
    from confluent_kafka.admin import AdminClient

    check_broker(settings)
    admin = AdminClient(settings.confluent_config())
    topics = admin.list_topics(timeout=timeout_s).topics
    counts = {}
    for spec in topic_specs(settings):
        if spec.internal:
            if spec.name not in topics:
                raise SystemExit(f"topic {spec.name} does not exist on {settings.broker}: "
                                 "run `neardup topics create --partitions N` first")
            counts[spec.name] = len(topics[spec.name].partitions)
    if settings.partitions and set(counts.values()) != {settings.partitions}:
        raise SystemExit(f"NEARDUP_PARTITIONS={settings.partitions}, but the topics have {counts}")
    if len(set(counts.values())) != 1:
        raise SystemExit(f"internal topics have different partition counts: {counts}")
    partitions = next(iter(counts.values()))
    missing = [spec.name for spec in changelog_specs(settings) if spec.name not in topics]
    if missing:
        create_topics(settings, partitions, timeout_s=timeout_s)
    return partitions
