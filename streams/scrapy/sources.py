"""Where the Scrapy loop's decisions and host signals come from: a `Deduplicator` in the crawl's process
(embedded), or the topics read back by a consumer on its own thread (kafka)."""

from __future__ import annotations

import logging
import threading
import uuid
from typing import TYPE_CHECKING, Any, Protocol

from neardup_core import Decision, Deduplicator, HostSignal, InvalidPage
from neardup_core.hosts.urls import url_identity
from streams.settings import Settings

if TYPE_CHECKING:  # scrapy is an optional extra: imported where it is used
    from scrapy.http import Response

log = logging.getLogger(__name__)

class Source(Protocol):
    """Where the loop reads decisions and host signals: a `Deduplicator` in the process, or the topics."""

    def decision(self, url: str) -> Decision | None: ...

    def canonical(self, url: str) -> str | None: ...

    def host_signal(self, host: str) -> HostSignal | None: ...

    def close(self) -> None: ...


class EmbeddedSource:
    """A `Deduplicator` in the crawl's process; `decide` runs when a response arrives."""

    def __init__(self, state_dir: str | None, on_decision: Any) -> None:
        self.dedup = Deduplicator(state_dir, on_decision=on_decision)

    def decide(self, response: Response) -> Decision | None:
        headers = {k.decode("latin-1"): ", ".join(v.decode("latin-1") for v in values)
                   for k, values in response.headers.items()}
        try:
            return self.dedup.add(response.url, response.body, headers=headers, status=response.status)
        except InvalidPage as exc:
            log.debug("neardup: %s not decided: %s", response.url, exc.reason)
            return None

    def decision(self, url: str) -> Decision | None:
        return self.dedup.decision(url)

    def canonical(self, url: str) -> str | None:
        return self.dedup.canonical(url)

    def host_signal(self, host: str) -> HostSignal | None:
        return self.dedup.host_signal(host)

    def close(self) -> None:
        self.dedup.close()


class KafkaSource:
    """The latest decision per URL and signal per host, read from the compacted topics from their start by
    a consumer on its own thread (never the reactor's); the reactor reads the dicts under a lock."""

    def __init__(self, settings: Settings, on_decision: Any) -> None:
        from confluent_kafka import Consumer

        self.decisions: dict[str, Decision] = {}
        self.signals: dict[str, HostSignal] = {}
        self.settings = settings
        self.topics = (settings.topic("dedup.decisions"), settings.topic("frontier.host-signals"))
        self.on_decision = on_decision
        self.refused: str | None = None
        """Set (and logged, once) when the broker refused the login: then no decision comes."""
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.consumer = Consumer({**settings.confluent_config(), "group.id": f"neardup-scrapy-{uuid.uuid4()}",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "error_cb": self._client_error},
                                 logger=logging.getLogger(f"{__name__}.librdkafka"))
        self.consumer.subscribe(list(self.topics))
        self.thread = threading.Thread(target=self._run, name="neardup-kafka-source", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            for msg in self.consumer.consume(500, 0.2):
                topic, value = msg.topic(), msg.value()
                if msg.error() is not None or topic is None or value is None:
                    continue
                try:
                    self._take(topic, value)
                except Exception:  # a value this version cannot read must not stop the loop
                    log.exception("neardup: unreadable record in %s", msg.topic())
        self.consumer.close()

    def _client_error(self, error: Any) -> None:
        """The consumer's `error_cb` (served by `consume`, on its thread): a refused login is said once, as
        `neardup tail` says it; other errors (a broker not up yet) pass, the consumer keeps trying."""
        from streams.kafka.admin import LoginRefused, login_refused

        reason = login_refused([error])
        if reason is not None and self.refused is None:
            self.refused = str(LoginRefused(self.settings, reason))
            log.error("neardup: %s; no decision is read", self.refused)

    def _take(self, topic: str, value: bytes) -> None:
        if topic == self.topics[0]:
            decision = Decision.from_json(value)
            key = url_identity(decision.url)
            with self.lock:
                kept = self.decisions.get(key)
                if kept is not None and decision.revision < kept.revision:
                    return
                self.decisions[key] = decision
            self.on_decision(decision)
        else:
            signal = HostSignal.from_json(value)
            with self.lock:
                kept_signal = self.signals.get(signal.host)
                if kept_signal is None or signal.revision >= kept_signal.revision:
                    self.signals[signal.host] = signal

    def decision(self, url: str) -> Decision | None:
        with self.lock:
            return self.decisions.get(url_identity(url))

    def canonical(self, url: str) -> str | None:
        with self.lock:
            decision = self.decisions.get(url_identity(url))
            seen: set[str] = set()
            while decision is not None and decision.is_duplicate and decision.duplicate_of is not None:
                if decision.url in seen:
                    return min(seen, key=url_identity)
                seen.add(decision.url)
                target = decision.duplicate_of
                decision = self.decisions.get(url_identity(target))
                if decision is None:
                    return target
            return decision.url if decision is not None else None

    def host_signal(self, host: str) -> HostSignal | None:
        with self.lock:
            return self.signals.get(host)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(10)
