"""The index process on its own (no Faust, no broker): it reads a RocksDB it does not own as a
secondary that follows the writes applied to the primary, opens the DB again when it was made anew at
the same path, and a process that died is replaced on the next call."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
from pathlib import Path

from rocksdict import Rdict

from neardup_core.dedup.version import PageVersion
from neardup_core.index.bucket import Answer, Notice, probes_for
from neardup_core.settings import CoreSettings
from neardup_core.store.memory import MemoryStore
from neardup_core.store.overlay import Overlay
from neardup_core.store.rocks import RocksStore, rocks_options
from streams.kafka import records
from streams.processes.index import IndexOutcome, IndexProcess, IndexStepFailed, index_step

CORE = CoreSettings()
PARTITIONS = 4


def page(url: str, body: str, at: int) -> PageVersion:
    return PageVersion(url, 0.5, 1_780_000_000_000 + at, body * 64, body * 64, 0x0123456789ABCDEF, None)


def probes_record(version: PageVersion) -> bytes:
    return records.encode_probes(probes_for(CORE.design, version))


def open_primary(path: Path) -> Rdict:
    return Rdict(str(path), options=rocks_options(CORE.design.prefix_bytes))


def apply(primary: Rdict, outcome: IndexOutcome) -> None:
    """What the index agent's commit does with an outcome: its writes, applied to the primary."""
    RocksStore.wrap(primary, same_prefix=True).write_many(outcome.writes)


def said(outcome: IndexOutcome) -> tuple[set[str | None], set[str]]:
    """The URLs the answers name as the page's better copy (None: no better copy), and the URLs of
    the worse pages told of a better one."""
    best: set[str | None] = set()
    told: set[str] = set()
    for packed in outcome.gather.values():
        for record in records.gather_records_packed(packed):
            for message in records.decode_gather(record):
                if isinstance(message, Answer):
                    best.add(message.best.candidate.url if message.best else None)
                else:
                    assert isinstance(message, Notice)
                    told.add(message.url)
    return best, told


async def run_one(index: IndexProcess, partition: int, path: str, raw_records: list[bytes]) -> IndexOutcome:
    """One partition's step through `index_steps`, the worker's one way into the index processes."""
    outcome = (await index.index_steps({partition: (path, raw_records)}, 0))[partition]
    assert isinstance(outcome, IndexOutcome), outcome
    return outcome

def test_the_replica_follows_the_primary_is_opened_again_when_the_db_is_new_and_a_dead_process_is_replaced(
        tmp_path: Path) -> None:
    path = tmp_path / "index-0.db"
    first, copy = page("https://news.example/a", "a", 0), page("https://mirror.example/a/long/path", "a", 1)

    async def scenario() -> None:
        index = IndexProcess(CORE, PARTITIONS, 8 << 20)
        try:
            (pid,) = await index.start()
            primary = open_primary(path)

            # 1. the first page finds nothing; its writes come back unapplied
            outcome = await run_one(index, 0, str(path), [probes_record(first)])
            assert said(outcome) == ({None}, set()) and outcome.probes == len(probes_for(CORE.design, first))
            assert outcome.writes and not list(RocksStore.wrap(primary).scan(b"", b"\xff"))
            apply(primary, outcome)

            # 2. once applied to the primary, the replica sees them: the copy finds the first page
            outcome = await run_one(index, 0, str(path), [probes_record(copy)])
            assert said(outcome) == ({first.url}, set())
            apply(primary, outcome)

            # 3. the DB made anew at the same path (Faust's reset of a partition): not the old data
            primary.close()
            shutil.rmtree(path)
            primary = open_primary(path)
            outcome = await run_one(index, 0, str(path), [probes_record(copy)])
            assert said(outcome) == ({None}, set()), "a replica of the deleted DB would still find the first page"
            apply(primary, outcome)

            # 4. the process killed: the next call runs in a new one, on the same data
            os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.5)
            outcome = await run_one(index, 0, str(path), [probes_record(first)])
            assert said(outcome) == ({None}, {copy.url}), "the better first page revises the copy it finds"
            assert (await index.start()) != [pid]
            primary.close()
        finally:
            index.close()

    asyncio.run(scenario())


def test_two_index_processes_each_keep_their_partitions(tmp_path: Path) -> None:
    """Partition p runs in process p mod 2, in parallel with the other; a killed one is replaced alone."""
    paths = [tmp_path / f"index-{p}.db" for p in range(2)]
    first, copy = page("https://news.example/a", "a", 0), page("https://mirror.example/a/long/path", "a", 1)

    async def scenario() -> None:
        index = IndexProcess(CORE, PARTITIONS, 8 << 20, processes=2)
        primaries = [open_primary(path) for path in paths]
        try:
            pids = await index.start()
            assert len(set(pids)) == 2
            outcomes = await asyncio.gather(*(run_one(index, p, str(paths[p]), [probes_record(first)])
                                              for p in range(2)))
            for primary, outcome in zip(primaries, outcomes, strict=True):
                assert said(outcome) == ({None}, set())
                apply(primary, outcome)
            os.kill(pids[1], signal.SIGKILL)
            await asyncio.sleep(0.5)
            outcomes = await asyncio.gather(*(run_one(index, p, str(paths[p]), [probes_record(copy)])
                                              for p in range(2)))
            assert [said(o) for o in outcomes] == [({first.url}, set())] * 2
            after = await index.start()
            assert after[0] == pids[0] and after[1] not in pids
        finally:
            index.close()
            for primary in primaries:
                primary.close()

    asyncio.run(scenario())


def merged(outcomes: dict[int, IndexOutcome | IndexStepFailed]) -> IndexOutcome:
    """The gather messages of an `index_steps` call's outcomes, in one outcome."""
    gather: dict[int, list[bytes]] = {}
    for outcome in outcomes.values():
        if isinstance(outcome, IndexOutcome):
            for partition, packed in outcome.gather.items():
                gather[partition] = gather.get(partition, []) + packed
    return IndexOutcome(gather=gather)


def test_a_take_s_partitions_go_in_one_call_and_one_failing_step_leaves_the_others(tmp_path: Path) -> None:
    """`index_steps`: every partition of a take in one call per index process, each with its own
    writes, the answers about one page put together; a partition whose step raises (here a record
    that is not a probes record) gives `IndexStepFailed` for that partition only; a killed process is
    replaced and the call made again."""
    paths = [tmp_path / f"index-{p}.db" for p in range(3)]
    first, copy = page("https://news.example/a", "a", 0), page("https://mirror.example/a/long/path", "a", 1)

    async def scenario() -> None:
        index = IndexProcess(CORE, PARTITIONS, 8 << 20)
        primaries = [open_primary(path) for path in paths]
        try:
            pids = await index.start()
            outcomes = await index.index_steps({0: (str(paths[0]), [probes_record(first)]),
                                                1: (str(paths[1]), [probes_record(first)]),
                                                2: (str(paths[2]), [b"not msgpack"])}, 0)
            assert isinstance(outcomes[2], IndexStepFailed)
            for p in (0, 1):
                outcome = outcomes[p]
                assert isinstance(outcome, IndexOutcome) and outcome.writes
                apply(primaries[p], outcome)
            assert said(merged(outcomes)) == ({None}, set())
            os.kill(pids[0], signal.SIGKILL)
            await asyncio.sleep(0.5)
            outcomes = await index.index_steps({p: (str(paths[p]), [probes_record(copy)]) for p in (0, 1)}, 0)
            assert said(merged(outcomes)) == ({first.url}, set())
            answers = [m for packed in merged(outcomes).gather.values() for r in records.gather_records_packed(packed)
                       for m in records.decode_gather(r)]
            assert len(answers) == 1  # the two partitions' answers about the page, as one
        finally:
            index.close()
            for primary in primaries:
                primary.close()

    asyncio.run(scenario())


def test_after_a_rebalance_the_processes_open_the_worker_s_replicas_and_close_the_others(tmp_path: Path) -> None:
    """`open_replicas` with the worker's partitions after a rebalance: each process opens the replicas of
    its share it lacks (one already open is kept, one whose DB was made anew is opened again) and closes
    those of partitions the worker lost; a closed replica opens again on its partition's next probes, and
    every step reads what its primary holds."""
    paths = {p: tmp_path / f"index-{p}.db" for p in range(3)}
    first, copy = page("https://news.example/a", "a", 0), page("https://mirror.example/a/long/path", "a", 1)

    async def scenario() -> None:
        index = IndexProcess(CORE, PARTITIONS, 8 << 20, processes=2)
        primaries = {p: open_primary(path) for p, path in paths.items()}
        try:
            await index.start()
            apply(primaries[0], await run_one(index, 0, str(paths[0]), [probes_record(first)]))  # 0 is open
            assert await index.open_replicas({p: str(path) for p, path in paths.items()}) == (2, 0)
            assert await index.open_replicas({p: str(path) for p, path in paths.items()}) == (0, 0)

            apply(primaries[1], await run_one(index, 1, str(paths[1]), [probes_record(first)]))
            assert said(await run_one(index, 1, str(paths[1]), [probes_record(copy)])) == ({first.url}, set())

            assert await index.open_replicas({2: str(paths[2])}) == (0, 2), "the worker lost partitions 0 and 1"
            assert said(await run_one(index, 0, str(paths[0]), [probes_record(copy)])) == ({first.url}, set()), \
                "opened again on its probes, it reads the primary"

            primaries[2].close()  # partition 2 made anew at the same path (Faust's reset of a partition)
            shutil.rmtree(paths[2])
            primaries[2] = open_primary(paths[2])
            assert await index.open_replicas({0: str(paths[0]), 2: str(paths[2])}) == (1, 0)
        finally:
            index.close()
            for primary in primaries.values():
                primary.close()

    asyncio.run(scenario())


def test_the_replica_is_read_through_its_own_writes_while_the_loop_vouches_for_them(tmp_path: Path) -> None:
    """`index_steps` with the primary's sequence numbers: where `applied` noted the number the primary still
    has, the process skips its catch-up and reads its replica through the writes it returned (here the
    loop vouches for writes it never applied, which only the process holds: the copy finds them); a
    write by anything else (a page added to the primary directly) moves the number, and an outcome that
    was never noted (a take abandoned before its commit) is not vouched for: the process catches up and
    sees what the primary holds, not what it returned."""
    path = tmp_path / "index-0.db"

    def version(url: str, at: int, simhash: int) -> PageVersion:
        text, body = hashlib.sha256(url.encode()).hexdigest(), hashlib.sha256(url.encode() * 2).hexdigest()
        return PageVersion(url, 0.5, 1_780_000_000_000 + at, text, body, simhash, None)

    a, a_copy = version("https://news.example/a", 0, 0x0123456789ABCDEF), \
        version("https://mirror.example/a/long/path", 1, 0x0123456789ABCDEF)
    b, b_copy = version("https://news.example/b", 2, 0xFEDCBA9876543210), \
        version("https://mirror.example/b/long/path", 3, 0xFEDCBA9876543210)
    c, c_copy = version("https://news.example/c", 4, 0x0F0F0F0FF0F0F0F0), \
        version("https://mirror.example/c/long/path", 5, 0x0F0F0F0FF0F0F0F0)

    async def scenario() -> None:
        index = IndexProcess(CORE, PARTITIONS, 8 << 20)
        primary = open_primary(path)

        async def step(page: PageVersion) -> IndexOutcome:
            outcomes = await index.index_steps({0: (str(path), [probes_record(page)])}, 0,
                                               {0: primary.latest_sequence_number()})
            outcome = outcomes[0]
            assert isinstance(outcome, IndexOutcome) and outcome.writes
            return outcome

        try:
            await index.start()
            assert said(await step(a)) == ({None}, set())
            index.applied(0, primary.latest_sequence_number())  # vouched for, not applied
            assert said(await step(a_copy)) == ({a.url}, set()), "vouched for: it reads the writes it holds"
            assert not list(RocksStore.wrap(primary).scan(b"", b"\xff"))

            index.applied(0, primary.latest_sequence_number())
            apply(primary, index_step(Overlay(MemoryStore()), [probes_record(b)], CORE, PARTITIONS, 0))
            assert said(await step(b_copy)) == ({b.url}, set()), "a write it did not make: it caught up"
            assert said(await step(a_copy)) == ({None}, set()), "caught up: what it held is gone"

            outcome = await step(c)  # returned, never applied, never noted
            assert said(outcome) == ({None}, set())
            assert said(await step(c_copy)) == ({None}, set()), "an outcome never noted is not read again"
        finally:
            index.close()
            primary.close()

    asyncio.run(scenario())


def test_the_steps_of_one_call_share_pages_and_the_rule_s_answers_and_say_what_separate_steps_say() -> None:
    """`SharedStep`: a page's probes, split over the index partitions by bucket (as the gather agent sends
    them), stepped partition by partition in one call with one memo, give each partition the writes,
    answers and notices that the same steps give alone; the page is decoded once and the rule asked
    once per pair across the partitions, not once per partition."""
    from neardup_core.index.bucket import Probe
    from streams.processes.index import SharedStep, _index_step_unpacked

    pages = [page(f"https://site{i}.example/a/{'x' * i}", body, at) for i, (body, at) in
             enumerate([("a", 0), ("b", 1), ("a", 2), ("a", 3), ("b", 4), ("c", 5)])]
    by_partition: dict[int, list[Probe]] = {}
    for version in pages:
        for probe in probes_for(CORE.design, version):
            by_partition.setdefault(records.partition_of(probe.lo, PARTITIONS), []).append(probe)
    assert len(by_partition) > 1
    raw = {p: [records.encode_probes(probes)] for p, probes in by_partition.items()}

    def run(shared: SharedStep | None) -> list[tuple[object, ...]]:
        out = []
        for partition in sorted(raw):
            outcome, answers, notices = _index_step_unpacked(Overlay(MemoryStore()), raw[partition], CORE, 0, shared)
            out.append((outcome.writes, sorted(map(repr, answers)), sorted(map(repr, notices))))
        return out

    shared = SharedStep.of(CORE)
    assert run(shared) == run(None)
    assert len({id(v) for v in shared.pages.values()}) == len(pages)  # each page decoded once in the call
    alone = [SharedStep.of(CORE) for _ in raw]
    for memo, partition in zip(alone, sorted(raw), strict=True):
        _index_step_unpacked(Overlay(MemoryStore()), raw[partition], CORE, 0, memo)
    asked_alone = sum(len(memo.pairs._said) for memo in alone)
    assert 0 < len(shared.pairs._said) < asked_alone  # a pair met in several partitions is asked once
