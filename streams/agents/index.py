"""The index agent: per bucket, a take's probes looked up and inserted (in the index processes,
`streams.processes.index`), the pages answered and the worse pages revised."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, cast

from faust.types import EventT, StreamT

from neardup_core.store.base import Store
from neardup_core.store.overlay import Overlay
from streams.agents.base import Shared, Stage, by_partition, now_ms
from streams.processes.index import IndexOutcome, IndexProcess, index_step
from streams.state.commit import Take, guarded
from streams.state.stores import PrefixRocksStore
from streams.web import metrics

log = logging.getLogger(__name__)


class IndexStage(Stage):
    """The index table's writes, from the index processes' outcomes (or the event loop when they are off)."""

    def __init__(self, shared: Shared, *, index_processes: int = 1, index_cache_bytes: int = 32 << 20) -> None:
        super().__init__(shared)
        self.index_process = IndexProcess(shared.core, shared.partitions, index_cache_bytes, index_processes) \
            if index_processes > 0 else None
        self._opening: asyncio.Task[None] | None = None
        """The last opening of replicas after a rebalance, held so that the task is not collected while it runs."""
        self._running = False
        """Whether the index agent runs (it starts and closes the index processes): none is opened otherwise."""
        if self.index_process is not None:
            self.app.on_rebalance_complete.connect(self._on_rebalance_complete, weak=False)

    def _on_rebalance_complete(self, sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        """Faust recovered the tables after a rebalance: the index processes open the replicas of the
        index partitions this worker now owns, beside the streams (not awaited: Faust awaits this signal
        before it resumes them)."""
        if self._running:
            self._opening = asyncio.ensure_future(self._open_replicas())

    async def _open_replicas(self) -> None:
        """`IndexProcess.open_replicas` of this worker's active index partitions. A failure is logged
        only: each replica is then opened on its partition's first probes, where a failure counts."""
        assert self.index_process is not None
        try:
            topic = self.topics.probes.get_topic_name()
            partitions = sorted(tp.partition for tp in self.app.assignor.assigned_actives() if tp.topic == topic)
            store = cast(PrefixRocksStore, self.tables.index.data)
            paths = {partition: store.partition_db_path(partition) for partition in partitions}
            opened, closed = await self.index_process.open_replicas(paths)
        except Exception:
            log.exception("opening the index replicas after the rebalance failed; each opens on its first probes")
        else:
            log.info("index replicas after the rebalance: %d partitions, %d opened, %d closed",
                     len(paths), opened, closed)

    async def index(self, stream: StreamT[bytes]) -> None:
        """Per bucket: look up and insert the probes of the records taken together, with one write
        per partition; answer the pages and revise the worse pages found, one gather record per
        destination partition. The step runs in the index process (`streams.processes.index`) unless
        it is off; every partition of the take is handed over at once, and each one's writes are
        put in the take as its outcome comes back."""
        await guarded("the index agent", self._index(stream), self.fail)

    async def _index(self, stream: StreamT[bytes]) -> None:
        self._running = True
        try:
            if self.index_process is not None:
                await self.index_process.start()
            async for events in self._takes(stream):
                take = Take.begin(self.app)
                stepped = await self._index_take(take, events)
                await take.commit()
                self._applied(stepped)
        finally:
            self._running = False
            if self.index_process is not None:
                self.index_process.close()

    async def _index_take(self, take: Take, events: Sequence[EventT]) -> list[int]:
        """The take's index steps, their writes in `take` and their messages sent; the partitions whose
        outcome came from the index process."""
        groups = by_partition(events)
        steps = await self._index_steps(take, groups)
        out: dict[int, list[bytes]] = defaultdict(list)
        stepped: list[int] = []
        for partition, group in groups.items():
            step = steps[partition]
            if isinstance(step, IndexOutcome):
                outcomes = [step]
                stepped.append(partition)
                take.writes(self.tables.index, partition).write_many(step.writes)
            else:
                log.warning("the index step failed on %d records of partition %d (%s: %s); processing them "
                            "one at a time in the event loop", len(group), partition, type(step).__name__, step)
                outcomes = await self._isolated(take, self.tables.index, partition, group, self._index_step_here,
                                                "index")
            for outcome in outcomes:
                self._count_index(outcome)
                for destination, packed in outcome.gather.items():
                    out[destination] += packed
        await self._send_gather_packed(take, out)
        return stepped if self.index_process is not None else []

    def _applied(self, partitions: list[int]) -> None:
        """After a take's commit: the index process's outcomes of `partitions` are in their primaries,
        at these sequence numbers (`IndexProcess.applied`)."""
        if self.index_process is None:
            return
        store = cast(PrefixRocksStore, self.tables.index.data)
        for partition in partitions:
            self.index_process.applied(partition, store.partition_sequence(partition))

    async def _index_steps(self, take: Take, groups: dict[int, list[EventT]]
                           ) -> dict[int, IndexOutcome | Exception]:
        """Each partition's index step: its outcome, or what it raised. In the index process, every
        partition of the take goes in one call (`IndexProcess.index_steps`)."""
        if self.index_process is None:
            steps: dict[int, IndexOutcome | Exception] = {}
            for partition, group in groups.items():
                try:
                    steps[partition] = self._index_step_here(Overlay(take.writes(self.tables.index, partition)),
                                                        partition, group)
                except Exception as exc:
                    steps[partition] = exc
            return steps
        store = cast(PrefixRocksStore, self.tables.index.data)
        parts = {partition: (store.partition_db_path(partition), [event.message.value or b"" for event in group])
                 for partition, group in groups.items()}
        sequences = {partition: store.partition_sequence(partition) for partition in groups}
        try:
            return dict(await self.index_process.index_steps(parts, now_ms(), sequences))
        except Exception as exc:  # the index process died twice: every partition's step failed
            return {partition: exc for partition in groups}

    def _index_step_here(self, view: Store, partition: int, group: Sequence[EventT]) -> IndexOutcome:
        """`index_step` in the event loop on `view` (the take's transaction, or an attempt over it); the
        outcome's `writes` are those `view` holds."""
        overlay = view if isinstance(view, Overlay) else Overlay(view)
        return index_step(overlay, [event.message.value or b"" for event in group], self.core, self.partitions,
                          now_ms())

    def _count_index(self, outcome: IndexOutcome) -> None:
        if outcome.probes:  # once per step: observing each of its ~30 probes per page cost 2% of the loop
            metrics.PROBE_SECONDS.observe(outcome.seconds / outcome.probes)
        metrics.PROBES.inc(outcome.probes)
        if self.core.retention is not None:
            metrics.EXPIRED.labels("version").inc(outcome.expired_versions)
            metrics.EXPIRED.labels("entry").inc(outcome.expired_entries)
