"""What asks the broker: is it reachable, which topics exist, create the missing ones, how many partitions."""

from __future__ import annotations

from streams.settings import Settings
from streams.topics import changelog_specs, topic_specs


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
