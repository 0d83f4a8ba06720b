"""The worker's agents, one module each (`fingerprint`, `gather`, `index`, `hosts`; what they share in
`base`): `Agents` makes them with the worker's settings and gives `streams.app` one method per agent and
the ticks' timer to register."""

from __future__ import annotations

from faust.types import AppT, StreamT

from neardup_core.settings import CoreSettings
from streams.agents.base import Shared, Tables, Topics
from streams.agents.fingerprint import FingerprintStage
from streams.agents.gather import ALL_PENDING, GatherStage
from streams.agents.hosts import HostsStage
from streams.agents.index import IndexStage
from streams.state.commit import Fail, stop_worker

__all__ = ["ALL_PENDING", "Agents", "FingerprintStage", "GatherStage", "HostsStage", "IndexStage", "Tables", "Topics"]


class Agents:
    """The four stages of one worker, and the methods Faust runs (agent names `streams.agents.<method>`)."""

    def __init__(self, app: AppT, topics: Topics, tables: Tables, core: CoreSettings, *, partitions: int,
                 extract_processes: int, extract_nice: int = 0, batch_max: int = 256, batch_wait_s: float = 0.2,
                 hop_wait_s: float = 0.05, index_processes: int = 1, index_cache_bytes: int = 32 << 20,
                 tick_interval_s: float = 5.0, fail: Fail = stop_worker) -> None:
        self.shared = Shared(app, topics, tables, core, partitions, batch_max, hop_wait_s, fail)
        self.fingerprint_stage = FingerprintStage(self.shared, extract_processes=extract_processes,
                                                  extract_nice=extract_nice, batch_wait_s=batch_wait_s)
        self.gather_stage = GatherStage(self.shared, tick_interval_s=tick_interval_s)
        self.index_stage = IndexStage(self.shared, index_processes=index_processes,
                                      index_cache_bytes=index_cache_bytes)
        self.hosts_stage = HostsStage(self.shared)

    @property
    def tables(self) -> Tables:
        return self.shared.tables

    @property
    def fail(self) -> Fail:
        return self.shared.fail

    @fail.setter
    def fail(self, fail: Fail) -> None:
        """What a failure the worker cannot handle does, in every stage (tests raise instead of exiting)."""
        self.shared.fail = fail

    def partition_of(self, key: bytes) -> int:
        return self.gather_stage.partition_of(key)

    async def fingerprint(self, stream: StreamT[bytes]) -> None:
        await self.fingerprint_stage.fingerprint(stream)

    async def gather(self, stream: StreamT[bytes]) -> None:
        await self.gather_stage.gather(stream)

    async def index(self, stream: StreamT[bytes]) -> None:
        await self.index_stage.index(stream)

    async def hosts(self, stream: StreamT[bytes]) -> None:
        await self.hosts_stage.hosts(stream)

    async def send_ticks(self) -> None:
        await self.gather_stage.send_ticks()
