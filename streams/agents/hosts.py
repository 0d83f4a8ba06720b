"""The hosts agent: per host, pages moved between counts and signals emitted for the frontier
(`neardup_core.hosts.tracker`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from faust.types import EventT, StreamT

from neardup_core.hosts.tracker import HostTracker
from neardup_core.messages import HostSignal
from neardup_core.store.base import Store
from streams.agents.base import Stage, by_partition
from streams.kafka import records
from streams.state.commit import Take, guarded
from streams.web import status

log = logging.getLogger(__name__)


class HostsStage(Stage):
    """One `HostTracker` per partition of a take, over the take's transaction of the hosts table."""

    async def hosts(self, stream: StreamT[bytes]) -> None:
        """Per host: move pages between counts, emit a signal when a penalty crosses a threshold or a
        window closes, and on a tick for hosts with unsignalled changes; each partition's changes of
        the records taken together are written at once. A record's offset is its position for the
        tracker: a record seen again (after a crash) changes nothing and sends its hosts' last signals
        again (`HostTracker.apply`)."""
        await guarded("the hosts agent", self._hosts(stream), self.fail)

    async def _hosts(self, stream: StreamT[bytes]) -> None:
        async for events in self._takes(stream):
            take = Take.begin(self.app)
            signals: list[HostSignal] = []
            for partition, group in by_partition(events).items():
                for sent in await self._isolated(take, self.tables.hosts, partition, group, self._hosts_partition,
                                                 "hosts"):
                    signals += sent
            for signal in signals:
                take.send(self.topics.signals, key=signal.host.encode(), value=signal.to_json())
            await take.commit()

    def _hosts_partition(self, view: Store, partition: int, events: Sequence[EventT]) -> list[HostSignal]:
        tracker = HostTracker(view, self.core.host_policy)
        signals: list[HostSignal] = []
        changed: set[str] = set()
        for event in events:
            msg = event.message
            changes = [item for item in records.decode_hosts(msg.value or b"") if not isinstance(item, int)]
            signals += tracker.apply(changes, msg.offset) if changes else tracker.settle(msg.offset)
            changed.update(d.host for d, _ in changes)
        status.RECORDER.hosts_updated(tracker, changed, signals)  # reads the view: once per take, not per record
        return signals
