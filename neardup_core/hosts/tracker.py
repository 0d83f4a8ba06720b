"""Host statistics and learned URL rules kept in a `Store`: what `scan` and the hosts agent share.

Keys: `c|host` the cumulative `HostState`, `w|host|window start` a window's, `r|host` the
host's `RuleState`. The agent runs one tracker per partition of its table; `scan` one in all.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

from neardup_core.hosts.statistics import DEFAULT_POLICY, HostPolicy, HostState, close_windows, observe, signal_for
from neardup_core.hosts.url_rules import RuleState, learn, rules_for
from neardup_core.messages import Decision, HostSignal
from neardup_core.store.base import Store
from neardup_core.store.memory import MemoryStore


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

    def observe(self, decision: Decision, previous: Decision | None) -> list[HostSignal]:
        """Count one published decision; the signals to send."""
        host = decision.host
        rule_state = learn(self.rules(host), previous, decision)
        self.store.put(f"r|{host}".encode(), rule_state.to_bytes())
        update = observe(self.host(host), lambda start: self.window(host, start), previous, decision,
                         rules=rules_for(rule_state), policy=self.policy)
        self.store.put(f"c|{host}".encode(), update.host.to_bytes())
        for start, window in update.windows.items():
            self.store.put(f"w|{host}|{start}".encode(), window.to_bytes())
        return update.signals

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
            self.store.put(f"c|{host}".encode(), closing.host.to_bytes())
            for start, window in closing.windows.items():
                self.store.put(f"w|{host}|{start}".encode(), window.to_bytes())
            out.extend(closing.signals)
            out.append(signal_for(closing.host, rules=rules, reason="end of input", policy=self.policy))
        return out

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if close:
            close()
