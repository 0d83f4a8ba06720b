"""The soak's time to recover (`tests/reliability/soak.py`, `recovery`): from a disturbance to the first
page of its window from which on every page was decided within `late_s`."""

from __future__ import annotations

from tests.reliability.soak import Disturbance, recovery

LATE = 10.0


def pages(*rows: tuple[float, float | None]) -> list[tuple[float, float | None]]:
    return sorted(rows)


def test_recovery_is_when_pages_are_on_time_again() -> None:
    kill = Disturbance("SIGKILL", "a", at=100.0)
    # published 101..104 late (decided at 140), from 105 on within 2 s
    rows = [(100.0 + i, 140.0) for i in range(1, 5)] + [(100.0 + i, 102.0 + i) for i in range(5, 30)]
    recovery([kill], pages(*rows), LATE, end=200.0)
    assert kill.recovery_s == 5.0
    assert (kill.late_pages, kill.window_pages) == (4, 29)


def test_no_late_page_is_no_recovery_time_and_a_late_last_page_is_none() -> None:
    quiet = Disturbance("SIGTERM", "b", at=0.0)
    stuck = Disturbance("broker", None, at=50.0)
    rows = [(float(t), t + 1.0) for t in range(1, 40)] + [(60.0, None), (70.0, 130.0)]
    recovery([quiet, stuck], pages(*rows), LATE, end=200.0)
    assert quiet.recovery_s == 0.0
    assert stuck.recovery_s is None, "its last page was late: not recovered before the end"


def test_the_window_ends_late_s_before_the_next_disturbance() -> None:
    first = Disturbance("SIGKILL", "a", at=0.0)
    second = Disturbance("SIGKILL", "b", at=50.0)
    # the page published at 45 is late because of the second kill, not the first: outside its window
    rows = [(5.0, 30.0), (20.0, 21.0), (45.0, 80.0), (60.0, 61.0)]
    recovery([first, second], pages(*rows), LATE, end=100.0)
    assert first.recovery_s == 20.0
    assert first.window_pages == 2
    assert second.recovery_s == 0.0
