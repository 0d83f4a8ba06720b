"""Per-host duplicate statistics, the trap penalty, and when to tell the crawl frontier.

A host that serves many URLs with the same content (session ids, sort orders, calendars) wastes crawl
budget. Its signal rises with the share of its pages that duplicate pages of the SAME host (`same_site`:
a www / bare mirror counts as the same host) and with the sample size; syndicated copies of other
hosts' pages are counted (`exact_duplicates`, `near_duplicates`) but raise no penalty.

Counting, from the `dedup.decisions` changelog (keyed by URL, the last revision wins):

- `pages` counts deduplicated pages (unique, exact and near duplicates). `skipped` pages (errors,
  non-HTML, empty text) are counted apart and are not pages: they would dilute the duplicate ratio.
- The cumulative state (one per host) counts URLs, each by its latest decision. A new decision for a
  URL moves the URL between counts: minus the previous decision, plus the new one.
- A window state (one per host and window, windows of `window_s` seconds aligned to the Unix epoch, by
  the decision's `fetched_at`) counts fetches: a revision of the same fetch (same `fetched_at`) moves
  it between counts in its window; a recrawl is a new fetch, counted in its own window, and the earlier
  fetch stays in the earlier window (it was crawl work done then).
- A decision with a lower `revision` than the previous one is stale (a replay) and changes nothing; an
  identical replay moves nothing. So the counts are idempotent under at-least-once delivery, provided
  the caller keeps the latest decision per URL (`supersedes`).

Penalty: with n = pages, s = same-host duplicates and n0 = `HostPolicy.n0` (default 20),

    penalty = (s / n) * (n / (n + n0)) = s / (n + n0)

the same-host duplicate ratio times a confidence that grows with the sample (1/2 at n = n0), so a host
needs both a high ratio and enough pages. It lies in [0, 1). `budget_factor = max(floor, 1 - penalty)`
with `floor` 0.05. `dup_ratio` is (exact + near) / n, all duplicates, for information.

Signals (`HostSignal`, compacted by host, the last one wins). Every signal carries the host's
cumulative state: `penalty`, `budget_factor` and `url_rules` are always the host's, now, so a frontier
that reads only the last signal per host never loses a penalty; the counts (`pages` ... `dup_ratio`)
are the window's in a window signal and the host's in the others. `revision` numbers a host's
signals 1, 2, 3, ...; a signal sent again keeps its number, so a frontier keeps the highest it saw.
They are sent on

- threshold crossings of the cumulative penalty, with hysteresis: a host is flagged when its penalty
  reaches `up` (0.5) and unflagged when it falls to `down` (0.3); nothing is sent in between, so a
  penalty hovering at a threshold does not flap. `window_start` / `window_end` are null.
- window closings: when the host's watermark (its latest `fetched_at`) passes a window's end plus
  `grace_s` (600 s), that window's counts are sent once, with the host's cumulative penalty, budget
  factor and rules (a window of few duplicates must not clear a trap's penalty). A quiet host's
  last window closes at its next decision, or when the caller passes a watermark or `flush` (end of
  input). Decisions arriving later for a closed
  window still count in its state while that is stored (a table TTL of a few windows is enough), else
  only cumulatively, and send nothing: a late signal would overwrite a newer one.
- settling (`settle`): a host whose cumulative state changed since its last signal (`unsignalled`)
  sends it when the caller asks (the stream on each tick, at most once per tick and host), so the
  last signal per host catches up with the host's state shortly after its last change.

`observe` runs one decision through all of this; the streaming `hosts` agent and `neardup scan` both
call it, keeping the states in a table keyed by host and one keyed by host and window start.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from neardup_core.hosts.urls import host_of, same_site
from neardup_core.messages import Decision, HostSignal, UrlRule
from neardup_core.timefmt import ms_to_rfc3339, rfc3339_to_ms


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """The knobs of host scoring."""

    window_s: int = 3600
    """Window size in seconds."""
    grace_s: int = 600
    """How long after its end a window waits for late fetches before it closes."""
    n0: float = 20.0
    """Sample size at which the confidence factor is 1/2."""
    up: float = 0.5
    """Penalty at which a host gets flagged."""
    down: float = 0.3
    """Penalty at which a flagged host gets unflagged."""
    floor: float = 0.05
    """Smallest budget factor."""
    max_open_windows: int = 48
    """Open windows tracked per host; the oldest beyond this are dropped without a signal."""


DEFAULT_POLICY = HostPolicy()


@dataclass(frozen=True, slots=True)
class HostState:
    """Counts for one host, cumulative (`window_start` None) or for one window. Serialisable."""

    host: str
    window_start: str | None = None
    window_end: str | None = None
    pages: int = 0
    exact_duplicates: int = 0
    near_duplicates: int = 0
    same_host_duplicates: int = 0
    skipped: int = 0
    partial_copies: int = 0
    """Pages whose `partial_of` names a page of another host (syndication accounting; no trap signal)."""
    flagged: bool = False
    """Cumulative: the hysteresis level last signalled."""
    closed: bool = False
    """Window: its closing signal has been sent."""
    watermark: str | None = None
    """Cumulative: the latest `fetched_at` seen for the host."""
    open_windows: tuple[str, ...] = field(default=())
    """Cumulative: starts of windows with counts and no closing signal yet, oldest first."""
    closed_through: str | None = None
    """Cumulative: the end of the latest closed window."""
    signals: int = 0
    """Cumulative: signals sent so far, the revision of the last one."""
    unsignalled: bool = False
    """Cumulative: counts changed since the last signal (`settle` sends them)."""

    @property
    def duplicates(self) -> int:
        return self.exact_duplicates + self.near_duplicates

    @property
    def dup_ratio(self) -> float:
        return self.duplicates / self.pages if self.pages else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The fields by name, as `dataclasses.asdict` gives them (each is a str, number, bool, None or a
        tuple of str, so a shallow copy is the same), at a tenth of its cost: it runs twice per page."""
        return {name: getattr(self, name) for name in _HOST_STATE_FIELDS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostState:
        return cls(**{**data, "open_windows": tuple(data.get("open_windows", ()))})

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_bytes(cls, raw: bytes) -> HostState:
        return cls.from_dict(orjson.loads(raw))


_HOST_STATE_FIELDS = tuple(f.name for f in dataclasses.fields(HostState))


@dataclass(frozen=True, slots=True)
class HostUpdate:
    """What `observe` changed: the cumulative state, the window states to store (by window start), and
    the signals to send, in order."""

    host: HostState
    windows: dict[str, HostState]
    signals: list[HostSignal]


def penalty(state: HostState, policy: HostPolicy = DEFAULT_POLICY) -> float:
    """The trap penalty: same-host duplicates / (pages + n0), in [0, 1)."""
    if state.pages <= 0:
        return 0.0
    return max(0.0, state.same_host_duplicates) / (state.pages + policy.n0)


def budget_factor(state: HostState, policy: HostPolicy = DEFAULT_POLICY) -> float:
    """The share of its usual crawl budget a host should get: 1 - penalty, at least `floor`."""
    return max(policy.floor, 1.0 - penalty(state, policy))


def supersedes(previous: Decision | None, new: Decision) -> bool:
    """Whether `new` replaces `previous` as the URL's latest decision (False for a stale replay)."""
    return previous is None or new.revision >= previous.revision


def window_start_of(fetched_at: str, window_s: int = DEFAULT_POLICY.window_s) -> str:
    """The start (RFC 3339, UTC) of the window holding `fetched_at`; also the window's table key."""
    return _format(_seconds(fetched_at) // window_s * window_s)


def apply_decision(state: HostState | None, previous: Decision | None, new: Decision,
                   policy: HostPolicy = DEFAULT_POLICY) -> HostState:
    """The cumulative state of `new.host` after `new`, given the URL's `previous` decision (or None).

    Moves the URL from the counts of `previous` to those of `new`, advances the watermark and records
    the window of `new` as open (unless that window already closed).
    """
    state = state if state is not None else HostState(host=new.host)
    if not supersedes(previous, new):
        return state
    state = _add(state, _counts(new), +1)
    if previous is not None:
        state = _add(state, _counts(previous), -1)
    at = _seconds(new.fetched_at)
    later = state.watermark is None or at > _seconds(state.watermark)
    watermark = new.fetched_at if later else state.watermark
    start = at // policy.window_s * policy.window_s
    open_windows = state.open_windows
    closed_through = _seconds(state.closed_through) if state.closed_through else None
    key = _format(start)
    if key not in open_windows and (closed_through is None or start + policy.window_s > closed_through):
        open_windows = tuple(sorted((*open_windows, key), key=_seconds))[-policy.max_open_windows:]
    return dataclasses.replace(state, watermark=watermark, open_windows=open_windows)


def apply_window_decision(state: HostState | None, previous: Decision | None, new: Decision,
                          policy: HostPolicy = DEFAULT_POLICY) -> HostState:
    """The state of the window holding `new.fetched_at` after `new`: a revision of the same fetch moves
    it between counts, any other decision is a new fetch in this window."""
    start = _seconds(new.fetched_at) // policy.window_s * policy.window_s
    if state is None:
        state = HostState(host=new.host, window_start=_format(start),
                          window_end=_format(start + policy.window_s))
    elif state.window_start != _format(start):
        raise ValueError(f"{new.fetched_at} is not in the window starting {state.window_start}")
    if not supersedes(previous, new):
        return state
    state = _add(state, _counts(new), +1)
    if previous is not None and _seconds(previous.fetched_at) == _seconds(new.fetched_at):
        state = _add(state, _counts(previous), -1)
    return state


def signal_for(state: HostState, window: HostState | None = None, *, rules: Sequence[UrlRule] = (),
               reason: str = "", policy: HostPolicy = DEFAULT_POLICY) -> HostSignal:
    """The next `frontier.host-signals` message of a host's cumulative `state`: its penalty, budget
    factor and `rules`, with the counts and bounds of `window` when given (else the cumulative counts,
    bounds null), numbered `state.signals + 1`. `emit` also counts it in the state."""
    counts = window if window is not None else state
    return HostSignal(
        host=state.host,
        window_start=counts.window_start,
        window_end=counts.window_end,
        pages=counts.pages,
        exact_duplicates=counts.exact_duplicates,
        near_duplicates=counts.near_duplicates,
        same_host_duplicates=counts.same_host_duplicates,
        partial_copies=counts.partial_copies,
        dup_ratio=round(counts.dup_ratio, 4),
        penalty=round(penalty(state, policy), 4),
        budget_factor=round(budget_factor(state, policy), 4),
        url_rules=[rule.to_dict() for rule in rules],
        reason=reason or _describe(state, policy),
        revision=state.signals + 1,
    )


def emit(state: HostState, window: HostState | None = None, *, rules: Sequence[UrlRule] = (), reason: str = "",
         policy: HostPolicy = DEFAULT_POLICY) -> tuple[HostState, HostSignal]:
    """The host's next signal (`signal_for`) and its state having sent it: counted, nothing unsignalled."""
    signal = signal_for(state, window, rules=rules, reason=reason, policy=policy)
    return dataclasses.replace(state, signals=signal.revision, unsignalled=False), signal


def settle(state: HostState, *, rules: Sequence[UrlRule] = (),
           policy: HostPolicy = DEFAULT_POLICY) -> tuple[HostState, HostSignal | None]:
    """A cumulative signal when the host's state changed since its last one (`unsignalled`), else None."""
    if not state.unsignalled:
        return state, None
    return emit(state, rules=rules, reason=f"settled: {_describe(state, policy)}", policy=policy)


def threshold_signal(state: HostState, *, rules: Sequence[UrlRule] = (),
                     policy: HostPolicy = DEFAULT_POLICY) -> tuple[HostState, HostSignal | None]:
    """The state with its hysteresis level updated, and a signal when the level changed: flagged when
    the penalty reaches `up`, unflagged when it falls to `down`."""
    value = penalty(state, policy)
    if not state.flagged and value >= policy.up:
        state = dataclasses.replace(state, flagged=True)
        reason = f"penalty {value:.2f} reached {policy.up}: {_describe(state, policy)}"
    elif state.flagged and value <= policy.down:
        state = dataclasses.replace(state, flagged=False)
        reason = f"penalty {value:.2f} fell to {policy.down}: {_describe(state, policy)}"
    else:
        return state, None
    return emit(state, rules=rules, reason=reason, policy=policy)


def due_windows(state: HostState, watermark: str | None = None, *, flush: bool = False,
                policy: HostPolicy = DEFAULT_POLICY) -> list[str]:
    """Starts of the host's open windows that close at `watermark` (default: the host's own), i.e.
    whose end plus `grace_s` is not after it; all of them when `flush`."""
    mark = watermark if watermark is not None else state.watermark
    if flush:
        return list(state.open_windows)
    if mark is None:
        return []
    limit = _seconds(mark) - policy.grace_s - policy.window_s
    return [start for start in state.open_windows if _seconds(start) <= limit]


def close_windows(state: HostState, windows: Callable[[str], HostState | None], watermark: str | None = None,
                  *, flush: bool = False, rules: Sequence[UrlRule] = (),
                  policy: HostPolicy = DEFAULT_POLICY) -> HostUpdate:
    """Closes the windows due at `watermark` (see `due_windows`): one signal per window not closed
    before, oldest first, each with the window's counts and the host's cumulative state. `windows`
    looks a window state up by its start."""
    due = due_windows(state, watermark, flush=flush, policy=policy)
    if not due:
        return HostUpdate(state, {}, [])
    closed: dict[str, HostState] = {}
    signals: list[HostSignal] = []
    for start in due:
        window = windows(start)
        if window is None or window.closed:
            continue
        closed[start] = dataclasses.replace(window, closed=True)
        state, signal = emit(state, window, rules=rules, policy=policy,
                             reason=f"window closed: {_describe(window, policy, of='in the window')}; "
                                    f"host penalty {penalty(state, policy):.2f}")
        signals.append(signal)
    end = max(_seconds(start) for start in due) + policy.window_s
    previous_end = _seconds(state.closed_through) if state.closed_through else end
    state = dataclasses.replace(state, open_windows=tuple(s for s in state.open_windows if s not in due),
                                closed_through=_format(max(end, previous_end)))
    return HostUpdate(state, closed, signals)


def observe(state: HostState | None, windows: Callable[[str], HostState | None], previous: Decision | None,
            new: Decision, *, rules: Sequence[UrlRule] = (),
            policy: HostPolicy = DEFAULT_POLICY) -> HostUpdate:
    """One decision through the host statistics, in this order:

    1. a stale decision (`supersedes` is False) changes nothing;
    2. the cumulative counts move (`apply_decision`), and a change of them is `unsignalled`;
    3. the window of `new.fetched_at` counts it (`apply_window_decision`), unless that window closed
       and its state is gone;
    4. a threshold crossing of the cumulative penalty gives a signal (`threshold_signal`);
    5. windows due at the host's new watermark close, each with a signal (`close_windows`).

    `windows` looks up stored window states by start; `rules` are the host's current URL rules, carried
    by every signal with the host's cumulative penalty and budget factor. The caller stores the
    returned states and, if `supersedes`, `new` as the URL's latest decision.
    """
    host = state if state is not None else HostState(host=new.host)
    if not supersedes(previous, new):
        return HostUpdate(host, {}, [])
    before = _totals(host)
    host = apply_decision(host, previous, new, policy)
    if _totals(host) != before:
        host = dataclasses.replace(host, unsignalled=True)
    changed: dict[str, HostState] = {}
    start = window_start_of(new.fetched_at, policy.window_s)
    window = windows(start)
    if window is not None or start in host.open_windows:
        changed[start] = apply_window_decision(window, previous, new, policy)
    host, crossing = threshold_signal(host, rules=rules, policy=policy)
    closing = close_windows(host, lambda s: changed.get(s) or windows(s), rules=rules, policy=policy)
    changed.update(closing.windows)
    signals = ([crossing] if crossing else []) + closing.signals
    return HostUpdate(closing.host, changed, signals)


Counts = tuple[int, int, int, int, int, int]
"""(pages, exact, near, same-host duplicates, skipped, partial copies of other hosts' pages)."""


def _counts(decision: Decision) -> Counts:
    """What one decision adds (`Counts`)."""
    if decision.verdict == "skipped":
        return (0, 0, 0, 0, 1, 0)
    partial = int(any(not same_site(host_of(p["url"]), decision.host) for p in decision.partial_of or ()))
    if decision.verdict == "unique":
        return (1, 0, 0, 0, 0, partial)
    same = int(decision.duplicate_of is not None and same_site(host_of(decision.duplicate_of), decision.host))
    return (1, int(decision.verdict == "exact_duplicate"), int(decision.verdict == "near_duplicate"), same, 0, partial)


def _totals(state: HostState) -> Counts:
    return (state.pages, state.exact_duplicates, state.near_duplicates, state.same_host_duplicates, state.skipped,
            state.partial_copies)


def _add(state: HostState, counts: Counts, sign: int) -> HostState:
    pages, exact, near, same, skipped, partial = counts
    return dataclasses.replace(
        state,
        pages=state.pages + sign * pages,
        exact_duplicates=state.exact_duplicates + sign * exact,
        near_duplicates=state.near_duplicates + sign * near,
        same_host_duplicates=state.same_host_duplicates + sign * same,
        skipped=state.skipped + sign * skipped,
        partial_copies=state.partial_copies + sign * partial,
    )


def _describe(state: HostState, policy: HostPolicy, of: str = "") -> str:
    """The counts in words, and the penalty they give (`of`: the counts are a window's, say so instead)."""
    counts = (f"{state.same_host_duplicates} of {state.pages} pages duplicate pages of the same host, "
              f"{state.duplicates - state.same_host_duplicates} copy other hosts, {state.skipped} skipped")
    return f"{counts} {of}" if of else f"{counts}; penalty {penalty(state, policy):.2f}"


def _seconds(stamp: str) -> int:
    """Whole seconds since the epoch of an RFC 3339 time (a time without zone is UTC)."""
    return rfc3339_to_ms(stamp) // 1000


def _format(seconds: int) -> str:
    return ms_to_rfc3339(seconds * 1000)
