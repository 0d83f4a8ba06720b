"""When the redelivery watch calls a partition stalled: fetched past what its streams got, with
nothing queued, twice in a row unchanged."""

from __future__ import annotations

from faust.types import TP

from streams.redelivery import Delivery, refetch_from, stalled_partitions

A = TP("pages.fetched", 0)
B = TP("pages.fetched", 1)


def test_behind_only_when_fetched_records_never_reached_an_empty_stream() -> None:
    assert Delivery(position=90, handed_on=None, queued=False).behind  # fetched 90, none handed on
    assert Delivery(position=90, handed_on=40, queued=False).behind  # 41..89 fetched, not handed on
    assert not Delivery(position=41, handed_on=40, queued=False).behind  # all handed on
    assert not Delivery(position=0, handed_on=None, queued=False).behind  # nothing fetched yet
    assert not Delivery(position=90, handed_on=40, queued=True).behind  # still being handed on (backpressure)


def test_stalled_needs_two_equal_checks() -> None:
    stuck = Delivery(90, None, False)
    assert stalled_partitions({}, {A: stuck}) == []
    assert stalled_partitions({A: stuck}, {A: stuck}) == [A]
    moving = {A: Delivery(95, None, False)}  # the position moved: records arrive, look again later
    assert stalled_partitions({A: stuck}, moving) == []
    fine = Delivery(91, 90, False)
    assert stalled_partitions({A: stuck, B: fine}, {A: stuck, B: fine}) == [A]


def test_refetch_from_after_the_last_record_handed_on_or_from_the_start() -> None:
    assert refetch_from(Delivery(90, 40, False)) == 41
    assert refetch_from(Delivery(90, None, False)) == 0  # nothing handed on, nothing committed
