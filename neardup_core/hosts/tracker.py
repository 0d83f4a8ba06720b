"""Host statistics and learned URL rules kept in a `Store`: what `scan` and the hosts agent share.

Keys: `c|host` the cumulative `HostState`, `w|host|window start` a window's, `r|host` the host's
`RuleState`, `u|host|URL identity` the URL's latest decision counted, `l|host` the host's last signal
(and the input position that sent it), `d|host` for each host with changes no signal carried yet
(`settle` reads them). A caller that may see an input again
(the stream, after a crash) passes each input's position (its offset in its partition): then `o|`
holds the last position applied and `x|position|host` names the hosts whose last signal that input
sent. The agent runs one tracker per partition of its table; `scan` one in all.

Counts are those of each URL's latest decision, whatever came before: a decision moves its URL out
of the counts of the decision stored for it (`u|`), not of the one its message says it replaces. So a
decision delivered twice counts once, and one whose first delivery was lost (the gather agent sends a
replayed URL's last decision again, as a change from itself) still counts.

Lost sends. A worker applies an input's changes (one write) and then sends its signals; killed in
between, its state says the signals were sent while the broker never got them, and its input offset
was not committed (Faust flushes the producer before it commits), so the input comes again. Such an
input (position at or before `o|`) changes nothing, and its hosts' last signals are sent again,
unchanged (same revision): the frontier gets what was lost, and a duplicate of what was not.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from neardup_core.hosts.statistics import (
    DEFAULT_POLICY,
    HostPolicy,
    HostState,
    close_windows,
    emit,
    observe,
    settle,
    supersedes,
)
from neardup_core.hosts.url_rules import RuleState, learn, rules_for
from neardup_core.hosts.urls import url_identity
from neardup_core.messages import Decision, HostSignal
from neardup_core.store.base import Store
from neardup_core.store.memory import MemoryStore

APPLIED = b"o|"


def _url_key(host: str, url: str) -> bytes:
    return f"u|{host}|{url_identity(url)}".encode()


def _sent_key(position: int, host: str) -> bytes:
    return b"x|" + position.to_bytes(8, "big") + host.encode()


class HostTracker:
    def __init__(self, store: Store, policy: HostPolicy = DEFAULT_POLICY) -> None:
        self.store = store
        self.policy = policy

    @classmethod
    def open(cls, path: Path | None, policy: HostPolicy = DEFAULT_POLICY) -> HostTracker:
        """On RocksDB under `path`, or in memory when it is None."""
        if path is None:
            return cls(MemoryStore(), policy)
        from neardup_core.store.rocks import RocksStore

        return cls(RocksStore(path), policy)

    def _load(self, key: bytes) -> bytes | None:
        return self.store.get(key)

    def window(self, host: str, start: str) -> HostState | None:
        raw = self._load(f"w|{host}|{start}".encode())
        return HostState.from_bytes(raw) if raw is not None else None

    def host(self, host: str) -> HostState | None:
        raw = self._load(f"c|{host}".encode())
        return HostState.from_bytes(raw) if raw is not None else None

    def rules(self, host: str) -> RuleState | None:
        raw = self._load(f"r|{host}".encode())
        return RuleState.from_bytes(raw) if raw is not None else None

    def decision(self, url: str, host: str) -> Decision | None:
        """The URL's latest decision counted for its host."""
        raw = self._load(_url_key(host, url))
        return Decision.from_json(raw) if raw is not None else None

    def last_signal(self, host: str) -> HostSignal | None:
        """The last signal the host sent (what a frontier that got every send has as its last)."""
        raw = self._load(f"l|{host}".encode())
        return HostSignal(**orjson.loads(raw)["signal"]) if raw is not None else None

    def observe(self, decision: Decision, previous: Decision | None = None, position: int | None = None
                ) -> list[HostSignal]:
        """Count one published decision; the signals to send. `previous`, the decision it replaces as
        its sender knew it, is not needed: the URL's latest decision counted is (`decision`)."""
        host = decision.host
        previous = self.decision(decision.url, host)
        if previous is not None and not supersedes(previous, decision):
            return []
        self.store.put(_url_key(host, decision.url), decision.to_json())
        before = self.rules(host)
        rule_state = learn(before, previous, decision)
        self.store.put(f"r|{host}".encode(), rule_state.to_bytes())
        rules = rules_for(rule_state)
        state = self.host(host)
        update = observe(state, lambda start: self.window(host, start), previous, decision, rules=rules,
                         policy=self.policy)
        new = update.host
        if not update.signals and rules != rules_for(before):
            new = dataclasses.replace(new, unsignalled=True)  # the signals would carry other rules
        for start, window in update.windows.items():
            self.store.put(f"w|{host}|{start}".encode(), window.to_bytes())
        self._save(state, new, update.signals, position)
        return update.signals

    def apply(self, changes: Iterable[tuple[Decision, Decision | None]], position: int) -> list[HostSignal]:
        """One input of decisions (each with the URL's decision before it) at `position`; the signals
        to send. An input at or before the last position applied is one seen again: the last signals
        it sent go out again and nothing changes."""
        if self._seen(position):
            return self.resend(position)
        signals = [s for decision, previous in changes for s in self.observe(decision, previous, position)]
        self.store.put(APPLIED, position.to_bytes(8, "big"))
        return signals

    def settle(self, position: int | None = None) -> list[HostSignal]:
        """A cumulative signal for every host with changes since its last signal (a tick at `position`;
        one seen again sends its signals again)."""
        if position is not None and self._seen(position):
            return self.resend(position)
        out: list[HostSignal] = []
        for key, _ in list(self.store.scan(b"d|", b"d}")):
            host = key[2:].decode()
            state = self.host(host)
            if state is None:
                self.store.delete(key)
                continue
            settled, signal = settle(state, rules=rules_for(self.rules(host)), policy=self.policy)
            self._save(state, settled, [signal] if signal else [], position)
            out += [signal] if signal else []
        if position is not None and out:  # a tick that sent nothing has nothing to send again
            self.store.put(APPLIED, position.to_bytes(8, "big"))
        return out

    def resend(self, position: int) -> list[HostSignal]:
        """The last signals of the hosts whose last signal the input at `position` sent."""
        lo = _sent_key(position, "")
        hosts = [key[len(lo):].decode() for key, _ in self.store.scan(lo, _sent_key(position + 1, ""))]
        return [s for h in hosts if (s := self.last_signal(h)) is not None]

    def _seen(self, position: int) -> bool:
        raw = self._load(APPLIED)
        return raw is not None and position <= int.from_bytes(raw, "big")

    def _save(self, before: HostState | None, state: HostState, signals: list[HostSignal],
              position: int | None) -> None:
        """The host's state, its last signal (and which input sent it), and its `d|` key."""
        host = state.host
        self.store.put(f"c|{host}".encode(), state.to_bytes())
        if signals:
            raw = self._load(f"l|{host}".encode())
            if raw is not None and (old := orjson.loads(raw)["position"]) is not None:
                self.store.delete(_sent_key(old, host))
            self.store.put(f"l|{host}".encode(), orjson.dumps({"position": position, "signal": signals[-1]}))
            if position is not None:
                self.store.put(_sent_key(position, host), b"")
        was = before is not None and before.unsignalled
        if state.unsignalled and not was:
            self.store.put(f"d|{host}".encode(), b"")
        elif was and not state.unsignalled:
            self.store.delete(f"d|{host}".encode())

    def hosts(self) -> Iterator[str]:
        for key, _ in self.store.scan(b"c|", b"c}"):
            yield key[2:].decode()

    def flush(self) -> list[HostSignal]:
        """At the end of input: close every open window, and one cumulative signal per host."""
        out: list[HostSignal] = []
        for host in list(self.hosts()):
            state = self.host(host)
            assert state is not None
            rules = rules_for(self.rules(host))
            closing = close_windows(state, functools.partial(self.window, host), flush=True, rules=rules,
                                    policy=self.policy)
            for start, window in closing.windows.items():
                self.store.put(f"w|{host}|{start}".encode(), window.to_bytes())
            final, signal = emit(closing.host, rules=rules, reason="end of input", policy=self.policy)
            self._save(state, final, [*closing.signals, signal], None)
            out += [*closing.signals, signal]
        return out

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if close:
            close()
