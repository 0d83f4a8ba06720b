"""The index step, beside the event loop: in a process of its own that reads a replica of the index.

Looking up and inserting a take's probes (`neardup_core.index.bucket.probe_batch`) is most of a
worker's event-loop time, and the loop also runs the Kafka client, the gather and the hosts steps:
one worker used one core of two. So the index agent hands each partition's probes to the index
process and keeps the loop for the rest, and a worker runs on two cores.

Faust's store keeps the only writable copy of each partition's RocksDB; the process reads it as a
RocksDB *secondary* instance (read-only, following the primary's MANIFEST and write-ahead log):

1. The loop sends one partition's probes records (their raw bytes) and the path of its RocksDB.
2. The process opens the partition as a secondary (again when the DB was made anew: Faust deletes
   a partition's data when it resets it), catches up with everything written to it so far, and runs
   the step on it with its writes held, not applied (`index_step`). A catch-up costs about 0.6 ms of
   CPU however little was written, once per partition per take: at 32 partitions and small takes that
   was more than the step itself. So the process also keeps the writes it returned since its last
   catch-up (`_Replica.held`) and reads the replica through them; it catches up only when the loop
   cannot vouch that the primary is the replica plus exactly those writes (below), or when they
   reach `HELD_MAX` keys.
3. It returns the writes (key, value or None), and the answers and notices packed for the gather
   partitions they go to.
4. The loop puts the writes in the take's transaction of the partition and sends the answers; the
   take's commit (`streams.state.commit`) produces their changelog records and, once the broker has them,
   writes the primary.

The index agent handles one take at a time and applies a take's writes before it takes again, so
the catch-up of 2 sees every earlier write of the partition: still one writer per bucket, which the
index needs (`neardup_core.index.bucket`). Recovery and standbys are Faust's.

Skipping the catch-up: after a take's commit applied a partition's outcome, the loop notes the
primary's RocksDB sequence number (`IndexProcess.applied`). On the next call it reads the number again:
equal, nothing but that outcome's writes (and the commit's offset and generation keys, which no index
read covers) reached the primary since the process last looked, and the process may read its replica
through the writes it holds. Any other write (recovery, a standby, a step the loop ran itself after the
process failed, a take abandoned before its commit) moves the number or leaves none noted, and the
process catches up and drops what it held. A process started anew holds nothing and opens its
replicas caught up.

Opening: after each rebalance (once Faust has recovered the tables) the loop hands each process the paths
of its share of the worker's index partitions (`IndexProcess.open_replicas`): it opens those it lacks and
closes those of partitions the worker no longer owns, while the streams resume. A partition whose probes
come first opens its replica then.

With `NEARDUP_INDEX_PROCESSES` above 1, partition p goes to process p mod n, which keeps its replica;
`NEARDUP_INDEX_PROCESSES=0` runs the same `index_step` in the event loop, on the table itself.

Names: the index step is `neardup_core.index.bucket.probe_batch` on a batch of probes (what `scan` runs);
here it is `index_step` on one partition's probes records, `_index_step_on_replica` in an index process,
`_index_steps_on_replicas` for a call's partitions, and `IndexProcess.index_steps` from the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import defaultdict
from concurrent.futures import Executor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocksdict import AccessType, Rdict

from neardup_core.dedup.sweep import sweep
from neardup_core.dedup.version import PageVersion
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import Answer, Notice, Pairs, Probe, merged_answers, probe_batch
from neardup_core.index.keys import INDEX_CLOCK
from neardup_core.settings import CoreSettings
from neardup_core.store.overlay import Overlay
from neardup_core.store.rocks import RocksStore, rocks_options
from streams.kafka import records
from streams.processes.pool import new_pool

log = logging.getLogger(__name__)

@dataclass
class IndexOutcome:
    """What one partition's probes did: the writes to apply, the messages to send, what it cost."""

    writes: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    """The writes (None: a delete), in key order."""
    gather: dict[int, list[bytes]] = field(default_factory=dict)
    """Answers and notices, packed (`records.pack_gather_message`), by gather partition."""
    probes: int = 0
    seconds: float = 0.0
    expired_versions: int = 0
    expired_entries: int = 0


def index_step(view: Overlay, raw_records: list[bytes], core: CoreSettings, partitions: int,
               now_ms: int) -> IndexOutcome:
    """One partition's probes records, looked up and inserted in `view`, which holds the writes (the
    caller applies them: the outcome's `writes` are `view`'s). With a retention, the partition's clock
    moves by the probes' pages and the versions first fetched before the horizon are swept first (a
    bounded step), in the same writes."""
    outcome, answers, notices = _index_step_unpacked(view, raw_records, core, now_ms)
    outcome.gather = _packed_by_partition([*answers, *notices], partitions)
    return outcome


@dataclass
class SharedStep:
    """What the index steps of one call share across partitions: a page's probes go to the partitions
    of its tables, so one call meets a page (and its copies) in several partitions; its `PageVersion`
    is decoded once and the rule asked once per pair (`Pairs`), as in scan's one index step."""

    pairs: Pairs
    pages: dict[tuple[Any, ...], PageVersion] = field(default_factory=dict)

    @classmethod
    def of(cls, core: CoreSettings) -> SharedStep:
        return cls(Pairs(core.design, core.k))


def _index_step_unpacked(view: Overlay, raw_records: list[bytes], core: CoreSettings, now_ms: int,
                         shared: SharedStep | None = None) -> tuple[IndexOutcome, list[Answer], list[Notice]]:
    """`index_step` without packing its answers and notices."""
    started = time.perf_counter()
    shared = SharedStep.of(core) if shared is None else shared
    probes: list[Probe] = [p for raw in raw_records for p in records.decode_probes(raw, shared.pages)]
    outcome = IndexOutcome(probes=len(probes))
    retention = core.retention
    newest = max((p.page.fetched_at_ms for p in probes), default=None) if retention is not None else None
    swept = sweep(retention, view, INDEX_CLOCK, newest, now_ms, index=view, design=core.design)
    outcome.expired_versions, outcome.expired_entries = swept.versions, swept.entries
    window = retention.window_ms if retention is not None else None
    answers, notices = probe_batch(view, probes, core.design, core.k, swept.horizon_ms, window, buffered=True,
                                     pairs=shared.pairs)
    outcome.writes = view.pending()
    outcome.seconds = time.perf_counter() - started
    return outcome, answers, notices


def _packed_by_partition(messages: list[Answer | Notice], partitions: int) -> dict[int, list[bytes]]:
    by_partition: dict[int, list[bytes]] = defaultdict(list)
    for message in messages:
        by_partition[records.partition_of(url_identity(message.url).encode(), partitions)].append(
            records.pack_gather_message(message))
    return dict(by_partition)


# -- in the index process ---------------------------------------------------------------------------


HELD_MAX = 4096
"""The most writes a replica is read through before the process catches it up anyway (each one a
key held in memory, and read around on every lookup)."""


@dataclass
class _Replica:
    identity: bytes
    db: Rdict
    held: Overlay
    """The replica (`RocksStore` over `db`) and the writes the process returned since it last caught up."""


_CORE: CoreSettings | None = None
_PARTITIONS = 0
_CACHE_BYTES = 0
_REPLICAS: dict[str, _Replica] = {}


def _init_index_process(core: CoreSettings, partitions: int, cache_bytes: int) -> None:
    global _CORE, _PARTITIONS, _CACHE_BYTES
    _CORE, _PARTITIONS, _CACHE_BYTES = core, partitions, cache_bytes


def _identity(path: str) -> bytes:
    """The DB's IDENTITY file (RocksDB writes a new one when it creates a DB): a DB made anew at the
    same path has another."""
    try:
        return (Path(path) / "IDENTITY").read_bytes()
    except FileNotFoundError:
        return b""


def _opened(path: str, prefix_bytes: int | None) -> bool:
    """Opens the partition's secondary instance, caught up, when this process holds none or holds one of a DB
    since made anew at the same path; whether it did."""
    identity = _identity(path)
    replica = _REPLICAS.get(path)
    if replica is not None and replica.identity == identity:
        return False
    if replica is not None:
        replica.db.close()
    options = rocks_options(prefix_bytes, _CACHE_BYTES)
    options.set_max_open_files(-1)  # a secondary must keep every file open: the primary deletes compacted ones
    db = Rdict(path, options=options, access_type=AccessType.secondary(path + ".replica"))
    db.try_catch_up_with_primary()
    _REPLICAS[path] = _Replica(identity, db, Overlay(RocksStore.wrap(db, same_prefix=bool(prefix_bytes))))
    return True


def _replica(path: str, prefix_bytes: int | None, current: bool = False) -> Overlay:
    """The partition's secondary instance, opened (again) if needed, read through the writes it holds:
    caught up with the primary unless `current` (the loop vouches that the primary has gained only those
    writes since the last catch-up: the module's docstring) and they are fewer than `HELD_MAX`."""
    opened = _opened(path, prefix_bytes)
    replica = _REPLICAS[path]
    if not opened and (not current or len(replica.held) >= HELD_MAX):
        replica.db.try_catch_up_with_primary()
        replica.held = Overlay(replica.held.base)
    return replica.held


def _open_replicas(prefix_bytes: int | None, paths: list[str]) -> tuple[int, int]:
    """The replicas of `paths` opened (caught up) where they are not open yet, and every other replica this
    process holds closed: after a rebalance, the process keeps the replicas of the partitions its worker
    owns, opened before their first probes. How many it opened and closed."""
    keep = set(paths)
    lost = [path for path in _REPLICAS if path not in keep]
    for path in lost:
        _REPLICAS.pop(path).db.close()
    return sum(_opened(path, prefix_bytes) for path in paths), len(lost)


def _index_step_on_replica(path: str, prefix_bytes: int | None, raw_records: list[bytes], now_ms: int,
                           current: bool, shared: SharedStep | None = None
                           ) -> tuple[IndexOutcome, list[Answer], list[Notice]]:
    """`_index_step_unpacked` on the partition's replica; its writes are then held over the replica too."""
    assert _CORE is not None, "the index process starts with _init_index_process"
    held = _replica(path, prefix_bytes, current)
    stepped = _index_step_unpacked(Overlay(held), raw_records, _CORE, now_ms, shared)
    held.write_many(stepped[0].writes)
    return stepped


def _index_steps_on_replicas(prefix_bytes: int | None, parts: list[tuple[str, list[bytes], bool]], now_ms: int
                             ) -> list[IndexOutcome | str]:
    """`_index_step_on_replica` of each partition's records (its RocksDB path, its records, whether the loop
    vouches for the writes the replica holds), in one call: the
    outcome of each, or the error of a step that raised (as text, which always pickles), so one
    partition's failure leaves the others' outcomes. The answers of every partition are merged
    (`merged_answers`) and they and the notices travel in the first outcome's `gather`."""
    assert _CORE is not None, "the index process starts with _init_index_process"
    out: list[IndexOutcome | str] = []
    answers: list[Answer] = []
    notices: list[Notice] = []
    shared = SharedStep.of(_CORE)
    for path, raw_records, current in parts:
        try:
            outcome, said, told = _index_step_on_replica(path, prefix_bytes, raw_records, now_ms, current, shared)
        except Exception as exc:
            out.append(f"{type(exc).__name__}: {exc}")
        else:
            out.append(outcome)
            answers += said
            notices += told
    first = next((o for o in out if isinstance(o, IndexOutcome)), None)
    if first is not None:  # the call's answers and notices, in one outcome (the agent sends them all together)
        first.gather = _packed_by_partition([*merged_answers(answers), *notices], _PARTITIONS)
    return out


# -- in the worker ------------------------------------------------------------------------------------


class IndexProcess:
    """The worker's index processes: partition p goes to process p mod n, which keeps the replicas of
    its partitions (each a pool of one, made again if it died)."""

    def __init__(self, core: CoreSettings, partitions: int, cache_bytes: int, processes: int = 1) -> None:
        """`cache_bytes`: the block cache of each partition's replica, which does the index's reads
        (the table's own store then only writes)."""
        self.core = core
        self.partitions = partitions
        self.cache_bytes = cache_bytes
        self._pools: list[Executor | None] = [None] * max(1, processes)
        self._applied: dict[int, int] = {}
        """Per partition: the primary's sequence number right after the commit that applied the outcome
        the partition's process returned last (`applied`), taken back by the next call."""

    def applied(self, partition: int, sequence: int) -> None:
        """A take's commit applied `partition`'s outcome to the primary, whose RocksDB sequence number is
        now `sequence`: the next call may let the process read its replica through the writes it holds,
        if the number has not moved by then (the module's docstring)."""
        self._applied[partition] = sequence

    def _vouched(self, partition: int, sequence: int | None) -> bool:
        """Whether the primary gained nothing but the partition's last outcome since the process's last
        look; either way the note is used up (a take abandoned before its commit notes nothing)."""
        noted = self._applied.pop(partition, None)
        return sequence is not None and noted == sequence

    def pool(self, partition: int) -> Executor:
        """The process of `partition`, started if it is not running."""
        i = partition % len(self._pools)
        pool = self._pools[i]
        if pool is None:
            pool = self._pools[i] = new_pool(1, initializer=_init_index_process,
                                             initargs=(self.core, self.partitions, self.cache_bytes), spawn=True)
        return pool

    async def start(self) -> list[int]:
        """Starts the processes now (a spawned interpreter imports the project first: about a second),
        not on the first probes; their pids."""
        loop = asyncio.get_running_loop()
        pids: list[int] = list(await asyncio.gather(*(loop.run_in_executor(self.pool(i), os.getpid)
                                                      for i in range(len(self._pools)))))
        log.info("index processes started (pids %s)", ", ".join(map(str, pids)))
        return pids

    async def open_replicas(self, paths: dict[int, str]) -> tuple[int, int]:
        """Each process opens the replicas of its share of `paths` (partition: RocksDB path, the worker's
        index partitions after a rebalance) and closes the others it holds, so that the first probes of a
        partition do not wait for its opening (about 20 ms of the process's CPU each, with the GIL held).
        The replicas opened and closed, over all processes."""
        loop = asyncio.get_running_loop()
        shares: list[list[str]] = [[] for _ in self._pools]
        for partition, path in sorted(paths.items()):
            shares[partition % len(self._pools)].append(path)
        prefix = self.core.design.prefix_bytes
        counts = await asyncio.gather(*(loop.run_in_executor(self.pool(i), _open_replicas, prefix, share)
                                        for i, share in enumerate(shares)))
        return sum(opened for opened, _ in counts), sum(closed for _, closed in counts)

    async def index_steps(self, parts: dict[int, tuple[str, list[bytes]]], now_ms: int,
                          sequences: dict[int, int] | None = None) -> dict[int, IndexOutcome | IndexStepFailed]:
        """`index_step` of every partition of a take (partition: its RocksDB path and records) in its
        index process, with one call per process rather than one per partition: at 32 partitions a take
        touches most of them, and each call costs a round trip and the loop's futures. A process that
        died (killed, out of memory) is started again and the call made once more; one that died twice
        raises. A step that raised in the process gives `IndexStepFailed` for its partition. `sequences`: each
        partition's primary sequence number now; where it is still the one noted by `applied`, the
        process skips its catch-up."""
        loop = asyncio.get_running_loop()
        by_process: dict[int, list[int]] = defaultdict(list)
        current: dict[int, bool] = {}
        for partition in parts:
            by_process[partition % len(self._pools)].append(partition)
            current[partition] = self._vouched(partition, (sequences or {}).get(partition))

        async def call(i: int, partitions: list[int]) -> list[IndexOutcome | str]:
            args = (self.core.design.prefix_bytes, [(*parts[p], current[p]) for p in partitions], now_ms)
            try:
                return await loop.run_in_executor(self.pool(partitions[0]), _index_steps_on_replicas, *args)
            except BrokenProcessPool:
                log.warning("index process %d died; starting it again", i)
                self._close(i)
                return await loop.run_in_executor(self.pool(partitions[0]), _index_steps_on_replicas, *args)

        results = await asyncio.gather(*(call(i, ps) for i, ps in by_process.items()))
        return {p: r if isinstance(r, IndexOutcome) else IndexStepFailed(r)
                for ps, rs in zip(by_process.values(), results, strict=True) for p, r in zip(ps, rs, strict=True)}

    def _close(self, i: int) -> None:
        pool = self._pools[i]
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
            self._pools[i] = None

    def close(self) -> None:
        for i in range(len(self._pools)):
            self._close(i)


class IndexStepFailed(RuntimeError):
    """The index step of one partition raised in the index process (the error, as text)."""
