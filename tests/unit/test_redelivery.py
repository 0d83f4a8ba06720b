"""`streams.kafka.redelivery`'s rules: which records Faust's fetch loop would count as processed without reading
them, and which records a flow resume drops from the queues that are to be fetched again."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from faust.types import TP, Message
from mode.utils.queues import FlowControlEvent

from streams.kafka.redelivery import (
    CommittingThread,
    Progress,
    RedeliveringConsumer,
    RedeliveringQueue,
    committing,
    fetch_again,
    missing_before,
    parse_drops,
    stalled,
    unacked_head,
)


def test_the_next_record_opens_no_gap() -> None:
    assert missing_before(72, 73) is None
    assert missing_before(73, 73) is None  # after a seek the read offset is the next record's


def test_a_record_two_or_more_past_the_read_offset_leaves_the_ones_between() -> None:
    assert missing_before(72, 75) == 73  # the soak's loss: 73 and 74 counted as processed
    assert missing_before(72, 74) == 73


def test_nothing_read_yet_is_no_gap() -> None:
    assert missing_before(None, 75) is None
    assert missing_before(0, 75) is None  # Faust's loop takes a read offset of 0 as none


# -- what a flow resume drops from the queues ------------------------------------------------------------

def event_at(tp: TP, offset: int) -> SimpleNamespace:
    message = Message(tp.topic, tp.partition, offset, 0.0, 0, None, b"k", b"v", None)
    return SimpleNamespace(message=message)


def test_a_cleared_queue_reports_the_first_offset_it_drops_of_each_partition() -> None:
    a, b = TP("pages.fetched", 0), TP("pages.fetched", 3)
    dropped: list[dict[TP, int]] = []

    async def run() -> None:
        queue = RedeliveringQueue(maxsize=100, flow_control=FlowControlEvent(), clear_on_resume=True,
                                  on_drop=lambda d: dropped.append(dict(d)))
        for item in (event_at(a, 51), event_at(b, 7), event_at(a, 50), "not an event", event_at(a, 52)):
            queue.put_nowait(item)
        queue.clear()
        assert queue.qsize() == 0
        queue.clear()  # nothing queued: nothing reported

    asyncio.run(run())
    assert dropped == [{a: 50, b: 7}]


def test_a_flow_resume_clears_the_managed_queue_through_it() -> None:
    tp = TP("neardup.probes", 1)
    dropped: list[dict[TP, int]] = []

    async def run() -> None:
        flow = FlowControlEvent()
        queue = RedeliveringQueue(maxsize=10, flow_control=flow, clear_on_resume=True,
                                  on_drop=lambda d: dropped.append(dict(d)))
        queue.put_nowait(event_at(tp, 9))
        flow.suspend()
        flow.resume()  # what Faust's recovery does after seeking the stream partitions

    asyncio.run(run())
    assert dropped == [{tp: 9}]


def test_dropped_records_are_fetched_again_unless_the_group_has_done_them() -> None:
    assert fetch_again(26, None)  # nothing committed: the seek to the committed offsets left the partition
    assert fetch_again(18, 18)
    assert fetch_again(40, 18)
    assert not fetch_again(10, 18)  # from before the partition was revoked, done by another worker since


# -- the net: a partition holding records that nothing processes -------------------------------------------

def progress(committed: int | None = 30, read: int | None = 41, highwater: int | None = 48,
             busy: bool = False) -> Progress:
    return Progress(committed=committed, read=read, highwater=highwater, busy=busy)


def test_a_partition_holding_uncommitted_records_nothing_processes_is_read_again_from_its_committed_offset() -> None:
    assert stalled(progress(), progress()) == 30


def test_nothing_committed_yet_is_read_again_from_the_start() -> None:
    assert stalled(progress(committed=None), progress(committed=None)) == 0


def test_a_partition_is_not_stalled_at_the_first_look_or_when_anything_moved() -> None:
    assert stalled(None, progress()) is None
    assert stalled(progress(committed=29), progress()) is None  # a commit since the last look
    assert stalled(progress(read=40), progress()) is None  # a record handed on
    assert stalled(progress(highwater=47), progress()) is None  # a record written


def test_a_partition_with_records_queued_or_in_a_take_is_not_stalled() -> None:
    assert stalled(progress(busy=True), progress(busy=True)) is None


def test_a_partition_done_to_its_end_or_never_fetched_is_not_stalled() -> None:
    assert stalled(progress(committed=48), progress(committed=48)) is None
    assert stalled(progress(highwater=None), progress(highwater=None)) is None


def test_the_fault_setting_names_records_by_topic_partition_and_offset() -> None:
    assert parse_drops("") == set()
    assert parse_drops("pages.fetched:3:17,neardup.gather:0:0") == {("pages.fetched", 3, 17), ("neardup.gather", 0, 0)}


def test_records_processed_and_waiting_for_a_commit_are_not_a_stall() -> None:
    # the broker away for a while: records 30-40 acked, the commit waits; the soak saw this
    waiting = Progress(committed=30, read=40, highwater=41, busy=False, committing=committing(list(range(30, 41)), 30))
    assert waiting.committing
    assert stalled(waiting, waiting) is None


def test_acknowledged_records_after_a_hole_wait_for_nothing() -> None:
    # records 32-41 never handed on, 42-47 processed: Faust never commits past 32 (`Consumer._new_offset`)
    assert not committing(list(range(42, 48)), 32)
    assert not committing([], 32)
    assert committing([5, 6], None)
    hole = Progress(committed=32, read=47, highwater=48, busy=False, committing=False)
    assert stalled(hole, hole) == 32


def test_the_record_at_the_head_fetched_and_not_acknowledged_holds_the_commit() -> None:
    assert unacked_head({16, 17, 18}, {17, 18}, 16) == 16
    assert unacked_head({16, 17, 18}, {16, 17, 18}, 16) is None
    assert unacked_head({17, 18}, {17, 18}, 16) is None  # 16 never fetched: a marker, compacted or deleted
    assert unacked_head({0, 1, 2}, {1, 2}, None) == 0  # nothing committed: the first offset fetched
    assert unacked_head({3, 4}, {3, 4}, None) is None
    assert unacked_head(set(), set(), 7) is None


def commit_state(committed: int | None, acked: list[int], fetched: set[int]) -> Any:
    """A `RedeliveringConsumer` holding only what `_new_offset` reads (Faust's and its own books)."""
    from collections import defaultdict

    from intervaltree import IntervalTree

    tp = TP("pages.fetched", 1)
    consumer: Any = object.__new__(RedeliveringConsumer)
    consumer._committed_offset = defaultdict(lambda: None, {tp: committed})
    consumer._acked = defaultdict(list, {tp: list(acked)})
    consumer._acked_index = defaultdict(set, {tp: set(acked)})
    consumer._gap = defaultdict(IntervalTree)
    consumer._fetched = {tp: set(fetched)}
    return consumer, tp


def test_faust_commits_past_an_unacknowledged_record_at_the_committed_offset_and_the_consumer_does_not() -> None:
    """Faust's `_new_offset` lets the record at the committed offset be missing from the acknowledged run
    (and anything before the run with nothing committed); the worker's consumer does not when a fetch
    returned that record, and keeps the acknowledged offsets for the commit after it is processed."""
    from faust.transport.consumer import Consumer

    for committed, acked in ((16, [17, 18, 19]), (None, [1, 2, 3])):
        consumer, tp = commit_state(committed, acked, {0, 16, 17, 18, 19} if committed else {0, 1, 2, 3})
        assert Consumer._new_offset(consumer, tp) == acked[-1] + 1  # upstream: past the head
        consumer, tp = commit_state(committed, acked, {0, 16, 17, 18, 19} if committed else {0, 1, 2, 3})
        assert consumer._new_offset(tp) is None
        assert consumer._acked[tp] == acked
        head = committed if committed is not None else 0
        consumer._acked[tp].insert(0, head)  # an agent acknowledged the head
        consumer._acked_index[tp].add(head)
        assert consumer._new_offset(tp) == acked[-1] + 1
    consumer, tp = commit_state(16, [17, 18], {17, 18})  # 16 never fetched (a marker): Faust's rule stands
    assert consumer._new_offset(tp) == 19


def test_a_commit_builds_the_assignment_once_and_commits_only_assigned_partitions() -> None:
    """`CommittingThread._commit`: the offsets of assigned partitions go to aiokafka's commit, those of
    partitions no longer assigned do not, and the set of assigned partitions is built once, not per offset."""
    built: list[int] = []
    assigned = {TP("t", 0), TP("t", 1)}
    committed: dict[Any, Any] = {}

    class Client:
        async def commit(self, offsets: dict[Any, Any]) -> None:
            committed.update(offsets)

    thread = object.__new__(CommittingThread)  # no consumer, loop or thread: only `_commit` runs
    thread.assignment = lambda: built.append(1) or set(assigned)  # type: ignore[method-assign]
    thread._ensure_consumer = Client  # type: ignore[assignment,method-assign]
    thread.tp_last_committed_at = {}
    assert asyncio.run(thread._commit({TP("t", 0): 5, TP("t", 1): 7, TP("t", 2): 9}))
    assert {(tp.topic, tp.partition): meta.offset for tp, meta in committed.items()} == {("t", 0): 5, ("t", 1): 7}
    assert set(thread.tp_last_committed_at) == assigned
    assert built == [1]


def test_a_seek_from_another_thread_runs_on_the_consumer_thread_in_call_order() -> None:
    """`CommittingThread.seek`: aiokafka's fetcher is not thread-safe, so a seek called from the app's thread
    runs on the consumer thread's loop, in the order of the calls; one called there runs at once; a partition
    no longer assigned, or a stopped consumer thread, is logged, not raised."""
    import threading

    from aiokafka.errors import IllegalStateError

    seeks: list[tuple[str, int, str]] = []

    class Client:
        def seek(self, tp: TP, offset: int) -> None:
            if tp.partition == 9:
                raise IllegalStateError("not assigned")
            seeks.append((tp.topic, offset, threading.current_thread().name))

    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, name="consumer-thread")
    runner.start()
    thread = object.__new__(CommittingThread)  # no consumer or Faust app: only `seek` runs
    thread.thread_loop = loop
    thread._ensure_consumer = Client  # type: ignore[assignment,method-assign]
    try:
        thread.seek(TP("t", 9), 1)  # no longer assigned
        for offset in range(5):
            thread.seek(TP("t", 0), offset)

        async def from_the_thread() -> int:
            thread.seek(TP("u", 0), 7)
            return len(seeks)

        done_before = asyncio.run_coroutine_threadsafe(from_the_thread(), loop).result(timeout=10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(timeout=10)
    assert [(topic, offset) for topic, offset, _ in seeks] == [("t", 0), ("t", 1), ("t", 2), ("t", 3), ("t", 4),
                                                               ("u", 7)]
    assert {name for _, _, name in seeks} == {"consumer-thread"}
    assert done_before == 6  # the seek called on the thread ran before it returned
    loop.close()
    thread.seek(TP("t", 0), 8)  # the thread's loop closed: nothing to seek, nothing raised
    assert len(seeks) == 6
