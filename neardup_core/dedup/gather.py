"""The per-URL state machine that turns a page's table answers into its published decision.

Keyed by URL identity (`url_identity`; a decision keeps the URL as received), it is also
the URL table: the versions (bodies) seen at the URL, which one is
current (the latest fetch), and the last decision published. Everything it does is idempotent
and monotone, so replays and duplicate deliveries re-send at most an equal decision:

1. A fetch of a version the URL holds, at a time no earlier than the version's first fetch, is a
   recrawl of unchanged content: the version's decision comes back without a probe (if the version
   is still waiting for answers, its probes go out again: idempotent, and a crash may have lost
   them). A fetch is of a held version when its body is that version's, or when its body is new but
   its main text (`text_sha256`) is a held version's: a rotating token, an ad or a timestamp outside
   the main text makes no new version and no new index entries (`UrlState.version_of`). Equal bodies
   have equal main texts, so the index loses no match by not holding the new body's digest. The
   decision keeps naming the body that ranks the version (its first fetch's).
2. A new main text (or an earlier fetch of a held version, which ranks it from then on) starts a
   probe round: one probe per table, answers counted per table for that round (an answer may speak
   for several tables of one partition). An earlier fetch with another body moves the version to
   that body's id, and the entries under its old id are removed from the index.
3. Answers and revisions only ever lower a version's best match (`decision.better`), and only
   candidates ranked better than the version count. The pages a version holds (`partials`, from the
   containment tables' answers and notices) only ever merge (`rule.merge_partials`), whatever the
   ranks, and so do its saturated containment bands (`dead`, from answers and notices), which withdraw
   the pages held only through them (`rule.named_partials`); a new round of the same version keeps both
   (they depend on its text, not its rank).
4. A version is complete when every table of its current round answered; a tick past its
   deadline publishes it provisionally (`complete: false`), and later answers complete it.
   An input seen before (a replay after a crash or rebalance) publishes the URL's last decision
   again, unchanged: the state may have survived while the output it caused was lost.
5. The URL's decision is its current version's; a new revision is published whenever that
   changes, with a revision number that only grows, together with the decision it replaces (what
   the host statistics move the URL out of).
6. A URL holds at most `CoreSettings.max_versions` versions, its latest by fetch (the current one
   always among them): a new one beyond that lets the oldest go, from the URL's state and, by
   removal probes (`Probe.remove`) sent after the probes that inserted it, from the index. So a
   page whose main text changes on every crawl costs bounded state. The rule stays exact over what
   the index holds: a page decided while an old version was held keeps its decision, and a page
   arriving after the version went is decided as if it never existed, as with a retention
   (`neardup_core/testing/oracle.py` models it in arrival order).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, NamedTuple

import orjson

from neardup_core.dedup.retention import Retention, url_expired_range, url_expiry_key
from neardup_core.dedup.rule import (
    Match,
    Partial,
    better,
    better_ranked,
    merge_partials,
    named_partials,
    reason_of,
    verdict_of,
)
from neardup_core.dedup.version import PageVersion, version_id
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.simhash import to_hex
from neardup_core.hosts.urls import url_identity
from neardup_core.index.bucket import Answer, Notice, Probe, probes_for, removals_for, table_ids
from neardup_core.index.tables import TableDesign
from neardup_core.messages import Decision
from neardup_core.settings import CoreSettings
from neardup_core.store.base import Store
from neardup_core.timefmt import ms_to_rfc3339
from neardup_core.wire import Positional

_SAYS = ("verdict", "duplicate_of", "distance", "jaccard", "partial_of", "complete", "fetched_at", "body_sha256")
_DECISION_FIELDS = tuple(f.name for f in dataclasses.fields(Decision))
JACCARD_DIGITS = 4
"""A decision's `jaccard`, and each `partial_of` containment, is rounded to this many decimals."""


class Published(NamedTuple):
    """A decision to publish, and the URL's decision before it (None for its first)."""

    decision: Decision
    previous: Decision | None


@dataclass(slots=True)
class VersionState(Positional, keep=7):
    fetch: Fetch  # the first fetch of this body at this URL (its rank)
    last_fetch_ms: int
    expected: int
    answered: list[int] = field(default_factory=list)
    best: Match | None = None
    complete: bool = False
    deadline_ms: int = 0
    partials: tuple[Partial, ...] = ()
    """Every main text the version holds (`merge_partials`); `partial_of` names the best live ones."""
    dead: int = 0
    """The containment bands whose bucket of this version is saturated (bit b: band b)."""

    @property
    def page(self) -> PageVersion | None:
        return self.fetch.version


@dataclass(slots=True)
class UrlState:
    versions: dict[str, VersionState] = field(default_factory=dict)  # by version id (hex)
    revision: int = 0
    published: dict[str, Any] | None = None  # the last published decision
    seen_ms: int = 0  # the URL's latest fetch, kept with a retention (its versions may have expired)

    def to_bytes(self) -> bytes:
        out = [{v: s.to_list() for v, s in self.versions.items()}, self.revision, self.published]
        return orjson.dumps(out if not self.seen_ms else [*out, self.seen_ms])

    @classmethod
    def from_bytes(cls, raw: bytes | None) -> UrlState:
        if raw is None:
            return cls()
        versions, revision, published, *seen = orjson.loads(raw)
        return cls({v: VersionState.from_list(s) for v, s in versions.items()}, revision, published,
                   seen[0] if seen else 0)

    def is_empty(self) -> bool:
        return not self.versions and self.published is None and self.revision == 0

    def last_decision(self) -> Decision | None:
        return Decision(**self.published) if self.published is not None else None

    def version_of(self, fetch: Fetch) -> tuple[str, VersionState | None]:
        """The held version a fetch is of, with the id (hex) it is held under: the version of its
        body, else the version of its main text (a recrawl whose raw bytes moved); else None, with
        the id a new version of the fetch would get."""
        vid = version_id(fetch.url, fetch.body_sha256).hex()
        known = self.versions.get(vid)
        if known is None and fetch.version is not None:
            for held, version in self.versions.items():
                if version.page is not None and version.page.text_sha256 == fetch.text_sha256:
                    return held, version
        return vid, known

    def current(self) -> VersionState | None:
        """The version of the latest fetch (ties: the larger body digest, for determinism)."""
        if not self.versions:
            return None
        return max(self.versions.values(), key=lambda s: (s.last_fetch_ms, s.fetch.body_sha256))


class UrlStates:
    """The URL table on a `Store`: a URL's `UrlState` by its URL's identity (`url_identity`; what
    `scan`'s engine and the gather agent keep, one in a RocksDB directory, the other in a Faust table's partition).

    With a `retention` and a `horizon_ms` (the caller sets it from the store's clock before each
    step, `neardup_core/dedup/retention.py`), `load` leaves out the versions first fetched before
    the horizon, `save` writes each state's expiry key (`url_expiry_key` of its latest fetch), and
    `expire` removes the states last fetched before the horizon. A version still waiting for answers
    is neither left out nor expired with its state: a fetch already older than the window when it
    arrives still gets its decision (in the stream its answers come in later records)."""

    def __init__(self, store: Store, retention: Retention | None = None) -> None:
        self.store = store
        self.retention = retention
        self.horizon_ms: int | None = None

    def load(self, url: str) -> UrlState:
        key = url_identity(url)
        state = UrlState.from_bytes(self.store.get(key.encode()))
        if self.retention is not None and self.horizon_ms is not None:
            horizon = self.horizon_ms
            state.versions = {v: s for v, s in state.versions.items()
                              if s.fetch.fetched_at_ms >= horizon or not s.complete}
        return state

    def save(self, url: str, state: UrlState) -> None:
        key = url_identity(url)
        if self.retention is not None:
            before = state.seen_ms  # the latest fetch its expiry key was written with
            if state.is_empty():  # an answer or a notice for a URL whose state expired: nothing to keep
                return
            state.seen_ms = max(state.seen_ms, *(v.last_fetch_ms for v in state.versions.values()), 0)
            if before and state.seen_ms != before:
                self.store.delete(url_expiry_key(before, key))
            self.store.put(url_expiry_key(state.seen_ms, key), b"")  # again: `expire` may have taken it
        self.store.put(key.encode(), state.to_bytes())

    def expire(self, limit: int) -> list[tuple[str, UrlState]]:
        """Remove up to `limit` URL states last fetched before the horizon, oldest first; each one
        removed (its identity and state), for what the caller keeps beside it (a pending deadline)."""
        if self.horizon_ms is None:
            return []
        removed: list[tuple[str, UrlState]] = []
        for key, _ in list(islice(self.store.scan(*url_expired_range(self.horizon_ms)), limit)):
            self.store.delete(key)
            identity = key[1 + 8:].decode()
            raw = self.store.get(identity.encode())
            state = UrlState.from_bytes(raw)
            if raw is None or state.seen_ms != int.from_bytes(key[1:9], "big"):
                continue  # a key left behind by a state saved since (its own key is later)
            if not all(v.complete for v in state.versions.values()):
                continue  # answers still to come: the save they cause writes the key again
            self.store.delete(identity.encode())
            removed.append((identity, state))
        return removed


@dataclass(frozen=True, slots=True)
class Gather:
    """The decision stage's transitions under the core settings; state lives in `UrlState`."""

    settings: CoreSettings

    @property
    def design(self) -> TableDesign:
        return self.settings.design

    @property
    def k(self) -> int:
        return self.settings.k

    @property
    def timeout_ms(self) -> int:
        return self.settings.decision_timeout_ms

    def on_fetch(self, state: UrlState, fetch: Fetch, now_ms: int) -> tuple[list[Probe], list[Published]]:
        """The probes a fetch causes (removals first) and the decisions to publish (steps 1, 2, 6)."""
        held, known = state.version_of(fetch)
        probes: list[Probe] = []
        removals: list[Probe] = []
        replay = known is not None and fetch.fetched_at_ms <= known.last_fetch_ms
        if known is not None and fetch.fetched_at_ms >= known.fetch.fetched_at_ms:
            known.last_fetch_ms = max(known.last_fetch_ms, fetch.fetched_at_ms)
            if not known.complete and known.page is not None:
                # a replay after a crash may find the round started but its probes never sent
                probes = probes_for(self.design, known.page)
        elif known is not None:
            vid = version_id(fetch.url, fetch.body_sha256).hex()
            if vid != held:  # the same main text, first fetched with another body: the version moves to it
                if known.page is not None:
                    removals = removals_for(self.design, known.page)
                del state.versions[held]
                state.versions[vid] = known
            known.fetch = fetch
            known.last_fetch_ms = max(known.last_fetch_ms, fetch.fetched_at_ms)
            probes = self._start_round(known, now_ms)
        else:
            new = VersionState(fetch, fetch.fetched_at_ms, 0)
            state.versions[held] = new
            probes = self._start_round(new, now_ms)
            removals = self._let_go(state)
        return removals + probes, self._publish(state, now_ms, replay=replay)

    def _let_go(self, state: UrlState) -> list[Probe]:
        """Drop the URL's oldest versions beyond `max_versions` (by latest fetch, as `current` orders
        them, so the current one stays); the removals of their index entries."""
        order = sorted(state.versions, key=lambda v: (state.versions[v].last_fetch_ms,
                                                      state.versions[v].fetch.body_sha256))
        removals: list[Probe] = []
        for vid in order[:max(0, len(order) - self.settings.max_versions)]:
            page = state.versions.pop(vid).page
            if page is not None:
                removals += removals_for(self.design, page)
        return removals

    def _start_round(self, version: VersionState, now_ms: int) -> list[Probe]:
        page = version.page
        if page is None:
            version.expected, version.answered, version.best, version.complete = 0, [], None, True
            return []
        if version.best is not None and not better_ranked(version.best.candidate, page):
            version.best = None
        version.expected = len(table_ids(self.design, page))
        version.answered = []
        version.complete = False
        version.deadline_ms = now_ms + self.timeout_ms
        return probes_for(self.design, page)

    def on_answer(self, state: UrlState, answer: Answer, now_ms: int) -> list[Published]:
        version = state.versions.get(answer.version_id.hex())
        if version is None or version.page is None:
            return []
        self._merge(version, answer.best)
        version.partials = merge_partials(version.partials, answer.partials)
        version.dead |= answer.dead
        new = [t for t in answer.tables if t not in version.answered]
        replay = not new
        if answer.round_ms == version.fetch.fetched_at_ms and not replay:
            version.answered += new
            if len(version.answered) >= version.expected:
                version.complete = True
        return self._publish(state, now_ms, replay=replay)

    def on_notice(self, state: UrlState, notice: Notice, now_ms: int) -> list[Published]:
        version = state.versions.get(notice.version_id.hex())
        if version is None or version.page is None:
            return []
        if notice.dead:
            replay = version.dead & notice.dead == notice.dead  # this notice may be what set them
            version.dead |= notice.dead
            return self._publish(state, now_ms, replay=replay)
        if notice.partial is not None:
            replay = notice.partial in version.partials  # this notice may be what added it
            version.partials = merge_partials(version.partials, (notice.partial,))
            return self._publish(state, now_ms, replay=replay)
        replay = version.best == notice.match  # this notice may be what set the best match
        self._merge(version, notice.match)
        return self._publish(state, now_ms, replay=replay)

    def on_tick(self, state: UrlState, now_ms: int) -> list[Published]:
        """Publish a current version whose answers are overdue, provisionally."""
        current = state.current()
        if current is None or current.complete or current.deadline_ms > now_ms:
            return []
        return self._publish(state, now_ms, provisional=True)

    @staticmethod
    def awaiting(state: UrlState) -> int | None:
        """The deadline of the current version if it still waits for answers and has not been
        published provisionally yet; None otherwise."""
        current = state.current()
        if current is None or current.complete:
            return None
        if state.published is not None and state.published["body_sha256"] == current.fetch.body_sha256:
            return None
        return current.deadline_ms

    @staticmethod
    def _merge(version: VersionState, match: Match | None) -> None:
        page = version.page
        if match is not None and page is not None and better_ranked(match.candidate, page):
            version.best = better(version.best, match)

    def _publish(self, state: UrlState, now_ms: int, provisional: bool = False, replay: bool = False
                 ) -> list[Published]:
        """The decision to publish if the URL's decision changed; with `replay`, the last one again
        when nothing changed (the input was seen before, and its output may have been lost)."""
        current = state.current()
        if current is None:
            return []
        provisional_already = (state.published is not None and not state.published["complete"]
                               and state.published["body_sha256"] == current.fetch.body_sha256)
        if not (current.complete or provisional or provisional_already):
            return []
        decision = self.decision_of(current, state.revision + 1, now_ms)
        said = {name: getattr(decision, name) for name in _DECISION_FIELDS}  # dataclasses.asdict: flat fields
        previous = state.last_decision()
        if state.published is not None and all(said[f] == state.published.get(f) for f in _SAYS):
            return [Published(Decision(**state.published), previous)] if replay else []
        state.revision += 1
        state.published = said
        return [Published(decision, previous)]

    def decision_of(self, version: VersionState, revision: int, now_ms: int) -> Decision:
        fetch, page, best = version.fetch, version.page, version.best
        common: dict[str, Any] = dict(url=fetch.url, host=fetch.host, body_sha256=fetch.body_sha256,
                                      revision=revision, fetched_at=ms_to_rfc3339(version.last_fetch_ms),
                                      decided_at=ms_to_rfc3339(now_ms))
        if page is None:
            return Decision(verdict="skipped", duplicate_of=None, distance=None, simhash=None, text_sha256=None,
                            reason=fetch.skip_reason or "skipped", complete=True, **common)
        jaccard = round(best.jaccard, JACCARD_DIGITS) if best is not None and best.jaccard is not None else None
        verdict = verdict_of(best)
        partial_of = [] if verdict == "exact_duplicate" else [
            {"url": p.candidate.url, "containment": round(p.containment, JACCARD_DIGITS)}
            for p in named_partials(version.partials, version.dead)]
        return Decision(verdict=verdict, duplicate_of=best.candidate.url if best else None, partial_of=partial_of,
                        distance=best.distance if best else None, jaccard=jaccard,
                        simhash=to_hex(page.simhash) if page.simhash is not None else None,
                        text_sha256=page.text_sha256, reason=reason_of(page, best, self.k, self.design.lsh),
                        complete=version.complete, **common)
