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
    partitions: int | None = None
    """Its own partition count; None: the app's (`topics create --partitions`, NEARDUP_PARTITIONS)."""


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
                  "internal: batches of fetches, answers, revisions and ticks, partitioned by URL"),
        TopicSpec(t("neardup.probes"), {"cleanup.policy": "delete", "retention.ms": str(3 * DAY_MS)}, True,
                  "internal: batches of probes, partitioned by bucket"),
        TopicSpec(t("neardup.hosts"), {"cleanup.policy": "delete", "retention.ms": str(3 * DAY_MS)}, True,
                  "internal: batches of decision changes, partitioned by host"),
    ]


TABLES = ("urls", "hosts")


def table_names(settings: Settings) -> list[str]:
    """The worker's Faust tables; the index table is named after its design, so that another
    design starts an index of its own instead of mixing keys of two designs."""
    return [*TABLES, f"index-{settings.core.design.name}"]


CHANGELOG_SEGMENT_BYTES = 64 << 20
"""Compaction cleans closed segments only: a changelog rolls a segment at this size (Kafka's 1 GiB default
would leave up to 1 GiB per partition of superseded records for a recovery to read)."""


def changelog_specs(settings: Settings) -> list[TopicSpec]:
    """Faust's changelog topics of the worker's tables (`{app_id}-{table}-changelog`), created
    up front: a worker that starts before they exist can read empty metadata and fail. Their records
    are keyed by state key (`streams.state.commit`), so compaction keeps the live state; a delete is a
    tombstone, kept for Kafka's `delete.retention.ms` (a day) so a standby behind sees it."""
    config = {"cleanup.policy": "compact", "segment.bytes": str(CHANGELOG_SEGMENT_BYTES)}
    return [TopicSpec(f"{settings.app_id}-{table}-changelog", config, True,
                      f"internal: changelog of the {table} table") for table in table_names(settings)]


def settings_spec(settings: Settings) -> TopicSpec:
    """The app id's state settings (`streams/kafka/admin.py`, `check_state_settings`): one partition, so that
    offsets order the workers' records, and nothing deleted (neither compacted, which would keep only the
    last record of the key, nor timed out), so the first record stays. Named after the app id like the
    changelogs: it belongs to the same state."""
    return TopicSpec(f"{settings.app_id}-settings", {"cleanup.policy": "delete", "retention.ms": "-1",
                                                     "retention.bytes": "-1"}, True,
                     "internal: the settings the app id's state is built with (the first record wins)", 1)
