"""The fingerprint agent: `pages.fetched` in batches, each distinct body extracted and fingerprinted in the
extraction processes, one gather record per partition for a batch's pages."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Sequence
from concurrent.futures import Executor
from concurrent.futures.process import BrokenProcessPool
from typing import cast

from faust.streams import Stream
from faust.types import EventT, StreamT

from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import BodyJob, FingerprintBatch, RawRecord, Rejected, fingerprint_body
from neardup_core.hosts.urls import url_identity
from streams.agents.base import Shared, Stage
from streams.kafka import records
from streams.kafka.records import GatherMessage
from streams.processes.pool import apply_each, chunks_for, extraction_pool
from streams.state.commit import Take, guarded
from streams.web import metrics

log = logging.getLogger(__name__)


class FingerprintStage(Stage):
    """Stateless: validates each event and fingerprints its body in the extraction pool."""

    def __init__(self, shared: Shared, *, extract_processes: int, extract_nice: int = 0,
                 batch_wait_s: float = 0.2) -> None:
        super().__init__(shared)
        self.extract_processes = extract_processes
        self.extract_nice = extract_nice
        self.batch_wait_s = batch_wait_s
        self._pool: Executor | None = None
        """The extraction processes (`_shared_pool`): two batches of the fingerprint agent may be in them."""
        self.finishing: asyncio.Future[None] | None = None
        """The batch being committed in the background (`_fingerprint`, step 3)."""

    async def fingerprint(self, stream: StreamT[bytes]) -> None:
        """Stateless: validate here, and fingerprint each distinct body the memo lacks in the process pool
        (`FingerprintBatch`), a batch at a time (in chunks of a few bodies per task); one gather record per
        partition for the batch's pages."""
        await guarded("the fingerprint agent", self._fingerprint(stream), self.fail)

    async def _fingerprint(self, stream: StreamT[bytes]) -> None:
        """1. Take a batch and hold its records' acknowledgement (`Message.incref`): `take_events`
           acknowledges a batch when the agent asks for the next, and this one is not committed yet.
        2. Parse it and hand its bodies to the extraction processes.
        3. Wait until the batch before is committed (takes commit in order), then finish this one in
           the background (`_finish_batch`) and ask for the next: its bodies reach the processes while
           this one's outputs are committed, so the processes do not wait for the event loop."""
        batches = cast(Stream, stream).take_events(self.batch_max, within=self.batch_wait_s)  # StreamT lacks it
        self._shared_pool()  # forked now, not when the first batch waits for it
        self.finishing = None
        try:
            async for events in batches:
                for event in events:  # 1.
                    event.message.incref()
                take = Take.begin(self.app)
                batch = FingerprintBatch(map(self._raw_record, events), self.core)  # 2.
                metrics.BODIES.labels("extracted").inc(len(batch.jobs))
                metrics.BODIES.labels("remembered").inc(batch.remembered)
                extraction = asyncio.ensure_future(self._fingerprint_jobs(batch.jobs))
                if self.finishing is not None:  # 3.
                    await self.finishing
                self.finishing = asyncio.ensure_future(
                    guarded("the fingerprint agent", self._finish_batch(take, events, batch, extraction), self.fail))
        finally:
            if self.finishing is not None and not self.finishing.done():
                self.finishing.cancel()  # its records were not acknowledged: they are read again
            pool, self._pool = self._pool, None
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)

    async def _finish_batch(self, take: Take, events: Sequence[EventT], batch: FingerprintBatch,
                            extraction: Awaitable[list[Fetch | Rejected]]) -> None:
        """A batch's gather records and dead letters, committed; then its records acknowledged."""
        results = batch.finish(await extraction)
        fetches: dict[int, list[GatherMessage]] = defaultdict(list)
        for event, result in zip(events, results, strict=True):
            metrics.PAGES.inc()
            if isinstance(result, Fetch):
                fetches[self.partition_of(url_identity(result.url).encode())].append(result)
            else:
                await self._reject(take, event, result)
        await self._send_gather(take, fetches)
        await take.commit()
        for event in events:
            event.ack()  # the hold of step 1 released: Faust may now commit their offsets

    def _extraction_pool(self) -> Executor | None:
        if self.extract_processes <= 0:
            return None
        return extraction_pool(self.extract_processes, self.core, self.extract_nice)

    def _shared_pool(self) -> Executor | None:
        """The extraction pool, started when first needed (again after one broke)."""
        if self._pool is None:
            self._pool = self._extraction_pool()
        return self._pool

    async def _fingerprint_jobs(self, jobs: list[BodyJob]) -> list[Fetch | Rejected]:
        """Each job's outcome. When an extraction process dies (killed, out of memory), the pool is
        replaced (by the first batch to see it broken: two batches may be in it) and this batch's jobs
        are fingerprinted again one at a time, each in a new pool, and a job whose process dies again
        is rejected (stage `extract`), with every record of the batch that carries its body."""
        loop = asyncio.get_running_loop()
        pool = self._shared_pool()
        try:
            parts = await asyncio.gather(*(loop.run_in_executor(pool, apply_each, fingerprint_body, chunk)
                                           for chunk in chunks_for(jobs, self.extract_processes)))
            return [r for part in parts for r in part]
        except BrokenProcessPool:
            log.warning("an extraction process died; fingerprinting the batch's %d bodies again one at a time",
                        len(jobs))
        if pool is not None and self._pool is pool:
            self._pool = None
            pool.shutdown(wait=False)
        out: list[Fetch | Rejected] = []
        for job in jobs:
            alone = self._extraction_pool()
            try:
                out.append(await loop.run_in_executor(alone, fingerprint_body, job))
            except BrokenProcessPool:
                out.append(Rejected("the extraction process died while fingerprinting this event, twice "
                                    "(killed, or out of memory)", "extract"))
            finally:
                if alone is not None:
                    alone.shutdown(wait=False, cancel_futures=True)
        return out

    @staticmethod
    def _raw_record(event: EventT) -> RawRecord:
        msg = event.message
        return msg.value or b"", msg.key, int(msg.timestamp * 1000) if msg.timestamp else None

    async def _send_gather(self, take: Take, by_partition: dict[int, list[GatherMessage]]) -> None:
        await self._send_gather_packed(take, {partition: [records.pack_gather_message(m) for m in messages]
                                              for partition, messages in by_partition.items()})
