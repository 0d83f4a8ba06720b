"""The one positional codec (`neardup_core.wire`): every message writes the layouts of records format 6
(the hand-written encoders it replaced are kept here as the reference), reads them back, and reads the
shorter lists of the formats before it (fields added later take their defaults)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_core.dedup.gather import VersionState
from neardup_core.dedup.rule import ALL_BANDS, Match, Partial
from neardup_core.dedup.version import PageVersion
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.index.bucket import Answer, Notice, Probe
from neardup_core.wire import Positional, positional, positional_from_list, positional_to_list

# -- format 6 as the hand-written encoders wrote it (session 21's code, verbatim but for names) ---------


def ref_version(v: PageVersion) -> list[Any]:
    out = [v.url, v.importance, v.fetched_at_ms, v.body_sha256, v.text_sha256, v.simhash]
    if v.minima is not None:
        return [*out, v.minhash, v.shingles, v.minima]
    return out if v.minhash is None else [*out, v.minhash]


def ref_fetch(f: Fetch) -> list[Any]:
    out = [f.url, f.host, f.fetched_at_ms, f.importance, f.body_sha256, f.text_sha256, f.simhash, f.skip_reason]
    if f.minhash is None and f.minima is None:
        return out
    out.append(None if f.minhash is None else base64.b64encode(f.minhash).decode("ascii"))
    if f.minima is None:
        return out
    return [*out, f.shingles, base64.b64encode(f.minima).decode("ascii")]


def ref_match(m: Match) -> list[Any]:
    out = [ref_version(m.candidate), m.exact, m.distance]
    return out if m.jaccard is None else [*out, m.jaccard]


def ref_partial(p: Partial) -> list[Any]:
    return [ref_version(p.candidate), p.containment, p.bands]


def ref_probe(p: Probe) -> list[Any]:
    out = [p.table, p.lo, p.hi, p.group, ref_version(p.page)]
    return [*out, True] if p.remove else out


def ref_answer(a: Answer) -> list[Any]:
    out = [a.url, a.version_id, a.round_ms, list(a.tables), ref_match(a.best) if a.best else None]
    if a.dead:
        return [*out, [ref_partial(p) for p in a.partials], a.dead]
    return [*out, [ref_partial(p) for p in a.partials]] if a.partials else out


def ref_revision(r: Notice) -> list[Any]:
    out = [r.url, r.version_id, ref_match(r.match) if r.match is not None else None]
    if r.dead:
        return [*out, ref_partial(r.partial) if r.partial is not None else None, r.dead]
    return out if r.partial is None else [*out, ref_partial(r.partial)]


def ref_state(s: VersionState) -> list[Any]:
    out = [ref_fetch(s.fetch), s.last_fetch_ms, s.expected, s.answered, ref_match(s.best) if s.best else None,
           s.complete, s.deadline_ms]
    if s.dead:
        return [*out, [ref_partial(p) for p in s.partials], s.dead]
    return [*out, [ref_partial(p) for p in s.partials]] if s.partials else out


# -- instances --------------------------------------------------------------------------------------------

text = st.text(max_size=12)
digest = st.binary(min_size=32, max_size=32).map(bytes.hex)
maybe_bytes = st.none() | st.binary(min_size=1, max_size=16)
mask = st.integers(min_value=1, max_value=(1 << 48) - 1)


@st.composite
def versions(draw: st.DrawFn) -> PageVersion:
    minhash = draw(maybe_bytes)
    minima = draw(maybe_bytes)
    shingles = draw(st.integers(0, 10_000)) if minima is not None else None
    return PageVersion(draw(text), draw(st.floats(0, 1)), draw(st.integers(0, 2**45)), draw(digest), draw(digest),
                       draw(st.none() | st.integers(0, 2**64 - 1)), minhash, shingles, minima)


@st.composite
def fetches(draw: st.DrawFn) -> Fetch:
    minhash = draw(maybe_bytes)
    minima = draw(maybe_bytes)
    shingles = draw(st.integers(0, 10_000)) if minima is not None else None
    return Fetch(draw(text), draw(text), draw(st.integers(0, 2**45)), draw(st.floats(0, 1)), draw(digest),
                 draw(st.none() | digest), draw(st.none() | st.integers(0, 2**64 - 1)), draw(st.none() | text),
                 minhash, shingles, minima)


matches = st.builds(Match, versions(), st.booleans(), st.none() | st.integers(0, 64), st.none() | st.floats(0, 1))
partials = st.builds(Partial, versions(), st.floats(0, 1), mask)
probes = st.builds(Probe, st.integers(0, 300), st.binary(max_size=9), st.binary(max_size=9), st.binary(max_size=13),
                   versions(), st.booleans())
answers = st.builds(Answer, text, st.binary(min_size=12, max_size=12), st.integers(0, 2**45),
                    st.lists(st.integers(0, 300), max_size=5).map(tuple), st.none() | matches,
                    st.lists(partials, max_size=3).map(tuple), st.integers(0, (1 << 48) - 1))
notices = st.builds(Notice, text, st.binary(min_size=12, max_size=12), st.none() | matches,
                      st.none() | partials, st.integers(0, (1 << 48) - 1))
states = st.builds(VersionState, fetches(), st.integers(0, 2**45), st.integers(0, 64),
                   st.lists(st.integers(0, 300), max_size=5), st.none() | matches, st.booleans(),
                   st.integers(0, 2**45), st.lists(partials, max_size=3).map(tuple), st.integers(0, (1 << 48) - 1))

CASES = [(PageVersion, versions(), ref_version), (Fetch, fetches(), ref_fetch), (Match, matches, ref_match),
         (Partial, partials, ref_partial), (Probe, probes, ref_probe), (Answer, answers, ref_answer),
         (Notice, notices, ref_revision), (VersionState, states, ref_state)]


@pytest.mark.parametrize(("cls", "strategy", "reference"), CASES, ids=[c[0].__name__ for c in CASES])
def test_every_message_writes_format_6_and_reads_it_back(cls: Any, strategy: Any, reference: Any) -> None:
    @settings(max_examples=150, deadline=None)
    @given(strategy)
    def check(message: Any) -> None:
        written = message.to_list()
        assert written == reference(message)
        packed = msgpack.packb(written, use_bin_type=True)
        assert packed == msgpack.packb(reference(message), use_bin_type=True)
        assert cls.from_list(msgpack.unpackb(packed, raw=False)) == message

    check()


def test_the_formats_before_read_with_the_later_fields_at_their_defaults() -> None:
    v = ["https://a.example/", 0.5, 1000, "ab" * 32, "cd" * 32, 77]  # format 2: no signature
    assert PageVersion.from_list(v) == PageVersion(*v)
    match = [v, False, 3]  # format 2: no Jaccard
    assert Match.from_list(match) == Match(PageVersion(*v), False, 3, None)
    assert Partial.from_list([v, 0.75]).bands == ALL_BANDS  # format 5: no band mask
    answer = Answer.from_list(["https://a.example/", b"i" * 12, 5, [1, 2], None])  # format 3: no partials
    assert answer.partials == () and answer.dead == 0 and answer.tables == (1, 2)
    notice = Notice.from_list(["https://a.example/", b"i" * 12, match])
    assert notice.partial is None and notice.dead == 0 and notice.match == Match.from_list(match)
    fetch = Fetch.from_list(["u", "h", 1, 0.5, "b", "t", 7, None])  # format 2: no signature, skip reason null
    assert fetch.minhash is None and fetch.skip_reason is None
    assert fetch.to_list() == ["u", "h", 1, 0.5, "b", "t", 7, None]  # its eight places stay, null or not
    probe = Probe.from_list([1, b"lo", b"hi", b"g", v])
    assert probe.remove is False and probe.page == PageVersion(*v)


@positional()
class Pair(NamedTuple):
    a: int
    b: tuple[int, ...] = ()

    def to_list(self) -> list[Any]:
        return positional_to_list(self)

    @classmethod
    def from_list(cls, data: list[Any]) -> Pair:
        return positional_from_list(cls, data)


@dataclass
class Nested(Positional, keep=2):
    first: str
    pairs: list[Pair]
    extra: Pair | None = None
    tail: list[int] | None = None


def test_the_codec_of_a_new_message_follows_its_fields() -> None:
    n = Nested("x", [Pair(1, (2, 3)), Pair(4)])
    assert n.to_list() == ["x", [[1, [2, 3]], [4]]]
    assert Nested.from_list(n.to_list()) == n
    full = Nested("y", [], Pair(5), [6])
    assert full.to_list() == ["y", [], [5], [6]]
    assert Nested.from_list(full.to_list()) == full
    assert Nested.from_list(["y", []]) == Nested("y", [])
