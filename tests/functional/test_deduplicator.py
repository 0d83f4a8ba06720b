"""`neardup_core.Deduplicator`, call by call: add, query (nothing stored), remove (a later copy is unique),
canonical (the end of the chain), add_many (checked before anything is stored), host_signal, the state
directory, the callbacks, and the old event form with its DeprecationWarning."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from neardup_core import Decision, Deduplicator, HostSignal, InvalidPage
from neardup_core.embedded import EventDeduplicator, Outcome
from neardup_core.testing.synthetic import generate_crawl

STORY = [
    "The town council voted on Tuesday to rebuild the old river bridge, which has been closed to traffic since "
    "the spring floods damaged two of its piers.",
    "Work is expected to start in the autumn and to last about eighteen months, according to the engineers who "
    "presented the plans at a crowded public meeting in the library.",
    "Residents who live on the north bank said they had waited long enough, and several asked why the repairs "
    "had not been done when the first cracks were reported years ago.",
]
OTHER = [
    "The regional orchestra announced a season of twelve concerts, with three premieres by young composers "
    "from the conservatory and a festival of chamber music in the summer.",
    "Tickets go on sale next month, and students will be able to attend the rehearsals for free, said the "
    "director, who hopes to bring a new audience into the concert hall.",
]


def page(paragraphs: list[str], title: str = "Bridge to be rebuilt") -> str:
    text = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"<html><body><article><h1>{title}</h1>{text}</article></body></html>"


def test_add_decides_unique_then_duplicates_with_the_better_copy_canonical() -> None:
    with Deduplicator() as dd:
        first = dd.add("https://news.example/bridge", page(STORY))
        copy = dd.add("https://news.example/bridge?sid=42", page(STORY))
        near = dd.add("https://news.example/bridge?comments=1", page(STORY + ["A reader wrote in to agree."]))
        other = dd.add("https://news.example/concerts", page(OTHER, "Concerts"))
    assert isinstance(first, Decision) and first.verdict == "unique" and not first.is_duplicate
    assert copy.verdict == "exact_duplicate" and copy.duplicate_of == first.url and copy.is_duplicate
    assert near.verdict == "near_duplicate" and near.duplicate_of == first.url
    assert other.verdict == "unique"


def test_query_says_what_add_would_and_stores_nothing(tmp_path: Path) -> None:
    with Deduplicator(tmp_path / "state") as dd:
        dd.add("https://news.example/bridge", page(STORY))
        before = dd.host_signal("news.example")
        asked = dd.query("https://news.example/bridge?sid=7", page(STORY))
        assert asked.verdict == "exact_duplicate" and asked.duplicate_of == "https://news.example/bridge"
        assert dd.decision("https://news.example/bridge?sid=7") is None
        assert dd.host_signal("news.example") == before, "no host statistics either"
        # a query of a better copy would revise the stored page: it is not revised
        better = dd.query("https://news.example/b", page(STORY))
        assert better.verdict == "unique"
        assert dd.decision("https://news.example/bridge") is not None
        assert dd.decision("https://news.example/bridge").verdict == "unique"  # type: ignore[union-attr]
        assert dd.query("https://news.example/bridge?sid=7", page(STORY)).verdict == asked.verdict
        # nothing of the queries is in the index: a copy is matched against the stored page only
        added = dd.add("https://news.example/bridge?sid=8", page(STORY))
        assert added.duplicate_of == "https://news.example/bridge"
        assert dd.canonical("https://news.example/b") is None


def test_remove_takes_a_page_out_and_a_later_copy_is_unique() -> None:
    with Deduplicator() as dd:
        dd.add("https://news.example/bridge", page(STORY))
        assert dd.add("https://mirror.example/bridge", page(STORY)).is_duplicate
        assert dd.remove("https://news.example/bridge") is True
        assert dd.decision("https://news.example/bridge") is None
        assert dd.remove("https://news.example/bridge") is False
        assert dd.remove("https://never.example/") is False
        assert dd.remove("https://mirror.example/bridge") is True
        later = dd.add("https://archive.example/bridge-2026", page(STORY))
        assert later.verdict == "unique", later
        # with the original still there, the same copy was a duplicate (the remove is what changed it)
    with Deduplicator() as dd:
        dd.add("https://news.example/bridge", page(STORY))
        assert dd.add("https://archive.example/bridge-2026", page(STORY)).is_duplicate


def test_canonical_follows_the_chain_to_the_copy_to_keep() -> None:
    """Worse copies first: each better one revises the one before, and the worst one's `duplicate_of` may
    still name a page that is itself a duplicate; `canonical` ends at the best."""
    with Deduplicator() as dd:
        worst = dd.add("http://news.example/archive/2026/11/bridge?ref=feed", page(STORY))
        middle = dd.add("http://news.example/bridge", page(STORY))
        best = dd.add("https://news.example/b", page(STORY))
        assert worst.verdict == "unique" and middle.verdict == "unique" and best.verdict == "unique"
        assert dd.decision(middle.url).duplicate_of == best.url  # type: ignore[union-attr]
        assert dd.decision(worst.url).is_duplicate  # type: ignore[union-attr]
        for url in (worst.url, middle.url, best.url):
            assert dd.canonical(url) == best.url
        other = dd.add("https://news.example/concerts", page(OTHER, "Concerts"))
        assert dd.canonical(other.url) == other.url
        assert dd.canonical("https://news.example/never") is None


def test_add_many_is_add_in_order_and_checks_every_page_first() -> None:
    pages = [("http://news.example/bridge?ref=home", page(STORY)), ("https://news.example/bridge", page(STORY)),
             {"url": "https://news.example/concerts", "html": page(OTHER, "Concerts").encode(),
              "fetched_at": datetime(2026, 11, 3, 8, tzinfo=UTC), "importance": 1.0}]
    with Deduplicator() as batch, Deduplicator() as single:
        many = batch.add_many(pages)
        for p in pages:
            single.add(*p) if isinstance(p, tuple) else single.add(**p)  # type: ignore[arg-type]
        assert [d.verdict for d in many] == ["exact_duplicate", "unique", "unique"], "the batch's final decisions"
        assert [d.verdict_key() for d in many] == [single.decision(d.url).verdict_key() for d in many]  # type: ignore[union-attr]
        with pytest.raises(InvalidPage, match="absolute http"):
            batch.add_many([("https://news.example/late", page(OTHER, "Late")), ("late.example/x", page(STORY))])
        assert batch.decision("https://news.example/late") is None, "an invalid page leaves the index as it was"


def test_bad_input_raises_invalid_page_with_its_reason() -> None:
    with Deduplicator() as dd:
        with pytest.raises(InvalidPage) as caught:
            dd.add("ftp://news.example/x", page(STORY))
        assert caught.value.stage == "validate" and "absolute http(s) URL" in caught.value.reason
        with pytest.raises(InvalidPage, match="time zone"):
            dd.add("https://news.example/x", page(STORY), fetched_at=datetime(2026, 11, 3))
        with pytest.raises(InvalidPage, match="fetched_at"):
            dd.query("https://news.example/x", page(STORY), fetched_at="yesterday")
        with pytest.raises(InvalidPage, match="over the cap"):
            dd.add("https://news.example/big", "<p>" + "x" * (6 * 1024 * 1024) + "</p>")
        with pytest.raises(TypeError, match="text or bytes"):
            dd.add("https://news.example/x", 5)  # type: ignore[call-overload]
        assert dd.decision("https://news.example/x") is None


def test_skipped_pages_have_their_reason_and_are_their_own_canonical() -> None:
    with Deduplicator() as dd:
        error = dd.add("https://news.example/gone", page(STORY), status=404)
        assert error.verdict == "skipped" and error.reason and dd.canonical(error.url) == error.url


def test_a_state_directory_is_continued_and_callbacks_see_every_decision_and_signal(tmp_path: Path) -> None:
    decisions: list[Decision] = []
    signals: list[HostSignal] = []
    with Deduplicator(tmp_path / "state", on_decision=decisions.append, on_host_signal=signals.append) as dd:
        dd.add("http://news.example/bridge?ref=home", page(STORY))
        dd.add("https://news.example/bridge", page(STORY))
    assert [(d.url, d.verdict) for d in decisions] == [
        ("http://news.example/bridge?ref=home", "unique"), ("https://news.example/bridge", "unique"),
        ("http://news.example/bridge?ref=home", "exact_duplicate")], "the revision is published too"
    with Deduplicator(tmp_path / "state") as dd:
        assert dd.add("https://news.example/bridge?sid=3", page(STORY)).duplicate_of == "https://news.example/bridge"
        signal = dd.host_signal("news.example")
    assert signal is not None and signal.pages == 3 and signal.same_host_duplicates == 2
    with EventDeduplicator(tmp_path / "state") as events:  # the event form reads the same state
        assert events.decision("https://news.example/bridge") is not None


def test_host_signal_learns_a_session_parameter_and_penalises_a_trap() -> None:
    with Deduplicator() as dd:
        assert dd.host_signal("news.example") is None
        for i in range(6):
            dd.add(f"https://news.example/story{i}", page([f"Story number {i} is about {w}." * 3 for w in OTHER],
                                                          f"Story {i}"))
            dd.add(f"https://news.example/story{i}?sid=s{i}x", page([f"Story number {i} is about {w}." * 3
                                                                     for w in OTHER], f"Story {i}"))
        rules = dd.host_signal("news.example").url_rules  # type: ignore[union-attr]
        assert {"kind": "ignore_query_param", "param": "sid"}.items() <= rules[0].items(), rules
        for day in range(1, 29):
            dd.add(f"https://cal.example/calendar/2026-02-{day:02d}", page(["No events are listed on this day."] * 3,
                                                                           f"Calendar 2026-02-{day:02d}"))
        trap = dd.host_signal("cal.example")
    assert trap is not None and trap.penalty > 0.5 and trap.budget_factor < 0.5, trap


def test_the_old_event_form_still_works_with_a_warning() -> None:
    event = generate_crawl(seed=3)[0]
    with Deduplicator() as dd:
        with pytest.warns(DeprecationWarning, match=r"add\(event\) is deprecated"):
            outcome = dd.add(event)
        assert isinstance(outcome, Outcome) and outcome.decision == dd.decision(event["url"])
