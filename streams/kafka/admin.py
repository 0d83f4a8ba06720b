"""What asks the broker: is it reachable, which topics exist, create the missing ones, how many partitions,
and which settings the app id's state is built with."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterable, Sequence
from typing import Any

from neardup_core.settings import Difference, design_inputs, state_differences, state_settings
from streams.kafka.topics import changelog_specs, settings_spec, topic_specs
from streams.settings import Settings, env_name


def check_broker(settings: Settings, timeout_s: float = 15.0) -> list[str]:
    """The broker's topic names; a clear exit (code 1) when it cannot be reached, or when it answered and
    refused the login: then the client library's own error, at once, not a transport failure after the
    timeout."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[KafkaError] = []
    config: dict[str, Any] = {**settings.confluent_config(), "log_level": 0, "error_cb": errors.append}
    admin = AdminClient(config)
    try:
        return broker_topics(admin, errors, settings, timeout_s)
    except LoginRefused as exc:
        raise SystemExit(str(exc)) from None
    except KafkaException as exc:
        raise SystemExit(f"cannot reach Kafka at {settings.broker} (NEARDUP_BROKER): {exc.args[0]}") from None


class LoginRefused(Exception):
    """The broker answered and refused the client's login (SASL): said as such, in the client library's
    words, so an operator looks at the credentials and not at the network."""

    def __init__(self, settings: Settings, reason: str) -> None:
        super().__init__(f"Kafka at {settings.broker} refused the login of "
                         f"{env_name('sasl_username')}={settings.sasl_username!r} "
                         f"({settings.security_protocol}, {settings.sasl_mechanism or 'PLAIN'}): {reason}")


def broker_topics(client: Any, errors: Sequence[Any], settings: Settings, timeout_s: float) -> list[str]:
    """The broker's topic names, asked by a confluent-kafka `client` (an AdminClient or a Producer) whose
    `error_cb` appends to `errors`. Asked in short steps: the login's error comes to error_cb, served by
    `poll` between them, so a refused login raises `LoginRefused` at once; a broker that has not answered
    by `timeout_s` raises the client's `KafkaException`."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return list(client.list_topics(timeout=max(0.1, min(1.0, deadline - time.monotonic()))).topics)
        except KafkaException:
            client.poll(0)
            if (refused := login_refused(errors)) is not None:
                raise LoginRefused(settings, refused) from None
            if time.monotonic() >= deadline:
                raise


def login_refused(errors: Iterable[Any]) -> str | None:
    """The message of the first authentication error among confluent-kafka `KafkaError`s, or None."""
    from confluent_kafka import KafkaError

    for error in errors:
        if error.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
            return str(error.str())
    return None


def create_topics(settings: Settings, partitions: int, *, timeout_s: float = 30.0) -> dict[str, str]:
    """Create the topics that do not exist yet: name -> 'created' or 'exists (N partitions)'."""
    from confluent_kafka.admin import AdminClient, NewTopic

    check_broker(settings)
    admin = AdminClient(settings.confluent_config())
    existing = admin.list_topics(timeout=timeout_s).topics
    specs = [*topic_specs(settings), *changelog_specs(settings), settings_spec(settings)]
    count = {s.name: s.partitions or partitions for s in specs}
    wanted = [NewTopic(s.name, num_partitions=count[s.name], replication_factor=-1, config=s.config)
              for s in specs if s.name not in existing]
    out = {s.name: f"exists ({len(existing[s.name].partitions)} partitions)" for s in specs
           if s.name in existing}
    if wanted:
        for name, future in admin.create_topics(wanted, request_timeout=timeout_s).items():
            future.result()
            out[name] = f"created ({count[name]} partitions)"
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
    return next(iter(counts.values()))


def create_changelogs(settings: Settings, partitions: int, *, timeout_s: float = 20.0) -> None:
    """Create the worker's changelog topics that do not exist yet (with any other topic missing), each
    with `partitions` partitions: once the state's settings are checked, so a refused worker makes none."""
    from confluent_kafka.admin import AdminClient

    topics = AdminClient(settings.confluent_config()).list_topics(timeout=timeout_s).topics
    if any(spec.name not in topics for spec in changelog_specs(settings)):
        create_topics(settings, partitions, timeout_s=timeout_s)


# --- the state's settings ---------------------------------------------------------------------------------


class StateSettingsDiffer(Exception):
    """This worker's state settings differ from those its app id's state is built with; the message is
    the one line the worker prints before it refuses to start."""


def own_record(settings: Settings) -> dict[str, Any]:
    """What a starting worker appends to the settings topic: its state settings (`state_settings`, what
    `scan` keeps in its state directory), what picked its table design, and who wrote it when."""
    return {"app_id": settings.app_id, "settings": state_settings(settings.core),
            "design_from": design_inputs(settings.core), "host": socket.gethostname(), "pid": os.getpid(),
            "recorded_at_ms": int(time.time() * 1000)}


def first_record(records: Iterable[tuple[bytes | None, bytes | None]], app_id: str) -> dict[str, Any] | None:
    """The first record (in offset order) of `app_id` among the settings topic's (key, value)s: the settings
    the app id's state is built with. A value that is not a record of settings is passed over."""
    for key, value in records:
        if key != app_id.encode() or value is None:
            continue
        try:
            record = json.loads(value)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("settings"), dict):
            return record
    return None


def refusal(app_id: str, state: dict[str, Any], own: dict[str, Any]) -> str | None:
    """The refusal line when `own` (a record of `own_record`) differs from the state's record, else None:
    each differing setting with the state's value and this worker's, and how to go on."""
    differences = state_differences(state["settings"], own["settings"])
    if not differences:
        return None
    shown = "; ".join(_difference(d, state.get("design_from"), own["design_from"]) for d in differences)
    return (f"refusing to start: app id {app_id!r} holds a state built with other settings: {shown}. "
            f"Start this worker with the state's settings, or build a new state under a new NEARDUP_APP_ID "
            f"(docs/settings.md, \"Changing the design\")")


def _difference(d: Difference, state_from: object, own_from: dict[str, Any]) -> str:
    if d.setting != "design":
        return f"{env_name(d.setting)} is {d.state} in the state, {d.own} here"
    inputs = state_from if isinstance(state_from, dict) else {}
    why = [f"{env_name(name)} {inputs[name]} there, {value} here" for name, value in own_from.items()
           if name in inputs and inputs[name] != value]
    return f"the table design is {d.state} in the state, {d.own} here" + (f" ({', '.join(why)})" if why else "")


def check_state_settings(settings: Settings, *, timeout_s: float = 30.0) -> dict[str, Any]:
    """The record of the settings the app id's state is built with, once this worker's agree with it;
    `StateSettingsDiffer` when they do not. Runs before Faust starts, so a refused worker has touched no
    changelog and joined no group.

    1. The settings topic (`topics.settings_spec`) is created if missing.
    2. It is read from its start to its end: the first record of the app id is the state's.
    3. When there is none, this worker's record is appended, and the topic read again up to it: the first
       record of the app id is the state's. Two workers starting together both append; the broker orders
       their records, and both read the same one first.
    4. The state's record and this worker's are compared (`state_differences`).

    An app id whose index was built before its settings were recorded has none: its first worker records
    its own, unless the broker holds an index changelog of another design with records in it (then the
    state's design is known, and that one is refused)."""
    from confluent_kafka import KafkaError, Producer

    check_broker(settings)
    topic = _ensure_settings_topic(settings, timeout_s)
    own = own_record(settings)
    state = first_record(_read_settings(settings, topic, None, timeout_s), settings.app_id)
    if state is None:
        _refuse_unrecorded_index(settings, own, timeout_s)
        producer = Producer({**settings.confluent_config(), "enable.idempotence": True, "acks": "all"})
        delivered: list[tuple[KafkaError | None, int | None]] = []
        producer.produce(topic, key=settings.app_id.encode(), value=json.dumps(own).encode(),
                         on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
        producer.flush(timeout_s)
        if not delivered or delivered[0][0] is not None or delivered[0][1] is None:
            problem = delivered[0][0] if delivered else f"not delivered in {timeout_s:.0f} s"
            raise SystemExit(f"cannot record this worker's settings in {topic} on {settings.broker}: {problem}")
        state = first_record(_read_settings(settings, topic, delivered[0][1], timeout_s), settings.app_id)
        if state is None:  # ours is there, at the offset the broker gave it, unless it was deleted since
            raise SystemExit(f"{topic} on {settings.broker} lost the record of {settings.app_id!r} just written")
    line = refusal(settings.app_id, state, own)
    if line is not None:
        raise StateSettingsDiffer(line)
    return state


def _ensure_settings_topic(settings: Settings, timeout_s: float) -> str:
    """The settings topic's name, once it exists (made here, with its configs, when missing)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    spec = settings_spec(settings)
    admin = AdminClient(settings.confluent_config())
    if spec.name not in admin.list_topics(timeout=timeout_s).topics:
        new = NewTopic(spec.name, num_partitions=spec.partitions or 1, replication_factor=-1, config=spec.config)
        try:
            admin.create_topics([new], request_timeout=timeout_s)[spec.name].result()
        except KafkaException as exc:  # another worker made it first: as good
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    return spec.name


def _read_settings(settings: Settings, topic: str, through: int | None,
                   timeout_s: float) -> list[tuple[bytes | None, bytes | None]]:
    """The (key, value)s of the settings topic from its start through offset `through` (None: to its end
    now), in offset order."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    consumer = Consumer({**settings.confluent_config(), "group.id": f"{settings.app_id}-settings-reader",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    deadline = time.monotonic() + timeout_s
    try:
        while True:  # a topic just made may have no leader for a moment
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=timeout_s)
                break
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise SystemExit(f"cannot read {topic} on {settings.broker}: {exc.args[0]}") from None
                time.sleep(0.5)
        end = high if through is None else through + 1
        out: list[tuple[bytes | None, bytes | None]] = []
        if low >= end:
            return out
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        position = -1
        while position + 1 < end:
            if time.monotonic() > deadline:
                raise SystemExit(f"cannot read {topic} on {settings.broker} to offset {end} in {timeout_s:.0f} s")
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                raise SystemExit(f"cannot read {topic} on {settings.broker}: {msg.error()}")
            position = msg.offset() or 0
            if position < end:
                out.append((msg.key(), msg.value()))
        return out
    finally:
        consumer.close()


def _refuse_unrecorded_index(settings: Settings, own: dict[str, Any], timeout_s: float) -> None:
    """`StateSettingsDiffer` when the app id has no recorded settings but an index changelog of another
    design holds records: an index built before settings were recorded, whose design is in its name."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    prefix, suffix = f"{settings.app_id}-index-", "-changelog"
    mine = {spec.name for spec in changelog_specs(settings)}
    topics = AdminClient(settings.confluent_config()).list_topics(timeout=timeout_s).topics
    others = [name for name in topics if name.startswith(prefix) and name.endswith(suffix) and name not in mine]
    if not others:
        return
    consumer = Consumer({**settings.confluent_config(), "group.id": f"{settings.app_id}-settings-reader",
                         "enable.auto.commit": False})
    try:
        for name in sorted(others):
            records = 0
            for partition in topics[name].partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(name, partition), timeout=timeout_s)
                records += high - low
            if records:
                design = name[len(prefix):-len(suffix)]
                raise StateSettingsDiffer(
                    f"refusing to start: app id {settings.app_id!r} holds an index of table design {design} "
                    f"({name}, {records} records) and no recorded settings; this worker's design is "
                    f"{own['settings']['design']}. Start it with the settings that built that index (its first "
                    f"worker records them), or build a new state under a new NEARDUP_APP_ID (docs/settings.md, "
                    f"\"Changing the design\")")
    finally:
        consumer.close()
