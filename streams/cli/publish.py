"""`neardup publish`: files of fetched pages to `pages.fetched`, keyed by URL.

A file that cannot be read to its end is reported (on standard error at the end, and in
`PublishResult.file_errors`) after the events read from it before were sent, and the next file is
read. What reaches the topic is what `neardup scan` reads: bad events go as they are, for the
workers to reject into `pages.rejected`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from neardup_core.ingest.files import FileError, RawEvent, count_events, read_inputs
from streams.settings import Settings

_err = Console(stderr=True)


@dataclass
class PublishResult:
    sent: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    file_errors: list[FileError] = field(default_factory=list)


def key_of(event: RawEvent) -> bytes | None:
    """The record key: the event's URL when it has one (bad events go as they are, to be rejected)."""
    if event.key is not None:
        return event.key
    try:
        url = orjson.loads(event.raw).get("url")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return url.encode() if isinstance(url, str) else None


def producer_config(settings: Settings) -> dict[str, str | int | float | bool]:
    """The confluent-kafka producer of `pages.fetched` (this command's, the Scrapy extension's): the
    broker and its security settings, idempotent, lz4, batched for 20 ms, room for the largest body."""
    return {**settings.confluent_config(), "linger.ms": 20, "log_level": 3, "enable.idempotence": True,
            "compression.type": "lz4", "message.max.bytes": max(1_000_000, settings.max_body_bytes * 2)}


def publish_events(settings: Settings, events: list[RawEvent] | None = None, files: list[Path] | None = None, *,
                   progress: bool = True) -> PublishResult:
    from confluent_kafka import KafkaError, Message, Producer

    from streams.kafka.admin import check_broker

    if settings.topic("pages.fetched") not in check_broker(settings):
        raise SystemExit(f"topic {settings.topic('pages.fetched')} does not exist on {settings.broker}: "
                         "run `neardup topics create` first")
    result = PublishResult()
    producer = Producer(producer_config(settings))
    topic = settings.topic("pages.fetched")

    def delivered(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            result.failed += 1
            if len(result.errors) < 100:
                result.errors.append(f"{msg.key()!r}: {err}")
        else:
            result.sent += 1

    def source() -> Iterator[RawEvent | FileError]:
        if events is not None:
            yield from events
        yield from read_inputs(files or [])

    total = len(events) if events is not None else None
    if files and total is None:
        counts = [count_events(p) for p in files]
        total = sum(c for c in counts if c is not None) if all(c is not None for c in counts) else None
    with Progress(TextColumn("[bold]publish"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not progress) as bar:
        task = bar.add_task("publish", total=total)
        n = 0
        for event in source():
            if isinstance(event, FileError):
                result.file_errors.append(event)
                continue
            n += 1
            while True:
                try:
                    producer.produce(topic, value=event.raw, key=key_of(event), on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.5)
            producer.poll(0)
            if n % 50 == 0:
                bar.update(task, completed=n)
        remaining = producer.flush(60)
        bar.update(task, completed=result.sent + result.failed)
    if remaining:
        result.failed += remaining
        result.errors.append(f"{remaining} events still undelivered after 60 s")
    for error in result.file_errors:
        _err.print(f"{error.source}: {error.reason} (after {error.events_read} events of it, which were sent)",
                   markup=False, highlight=False)
    return result


def publish_files(settings: Settings, files: list[Path], *, progress: bool = True) -> PublishResult:
    return publish_events(settings, files=files, progress=progress)
