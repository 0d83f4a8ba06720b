"""The gap rule of `streams.redelivery`: which records Faust's fetch loop would count as processed
without reading them."""

from __future__ import annotations

from streams.redelivery import missing_before


def test_the_next_record_opens_no_gap() -> None:
    assert missing_before(72, 73) is None
    assert missing_before(73, 73) is None  # after a seek the read offset is the next record's


def test_a_record_two_or_more_past_the_read_offset_leaves_the_ones_between() -> None:
    assert missing_before(72, 75) == 73  # the soak's loss: 73 and 74 counted as processed
    assert missing_before(72, 74) == 73


def test_nothing_read_yet_is_no_gap() -> None:
    assert missing_before(None, 75) is None
    assert missing_before(0, 75) is None  # Faust's loop takes a read offset of 0 as none
