"""A body met again is fingerprinted from the process's memo: the same `Fetch` as extracting it again, with
the page's own URL, host, time and importance, and never for a page that decodes or is judged otherwise."""

from __future__ import annotations

from dataclasses import replace

import pytest

from neardup_core.fingerprint import page as page_module
from neardup_core.fingerprint.memo import ContentMemo
from neardup_core.fingerprint.page import fingerprint, fingerprint_with_extraction
from neardup_core.ingest.event import FetchedPage
from neardup_core.settings import CoreSettings

PARAGRAPHS = [
    "The council voted on Tuesday to reopen the rail line that closed in 2007, ending months of argument.",
    "Supporters said the line would bring visitors back to the valley and shorten the trip to the city.",
    "Opponents asked who would pay for the new bridge, and the council promised to publish the costs soon.",
]
BODY = ("<html><head><title>Rail line</title></head><body><article>"
        + "".join(f"<p>{p}</p>" for p in PARAGRAPHS) + "</article></body></html>").encode()


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch: pytest.MonkeyPatch) -> ContentMemo:
    memo = ContentMemo()
    monkeypatch.setattr(page_module, "MEMO", memo)
    return memo


def fetched(url: str, **fields: object) -> FetchedPage:
    return FetchedPage(url, BODY, 1_700_000_000_000, content_type="text/html", **fields)  # type: ignore[arg-type]


def test_a_body_met_again_is_answered_from_the_memo_as_extracting_it_would(fresh_memo: ContentMemo) -> None:
    first = fingerprint(fetched("https://news.example/rail"))
    other = replace(fetched("http://mirror.example/copy?utm=x"), fetched_at_ms=1_700_000_999_000, importance=0.7)
    second = fingerprint(other)
    assert (fresh_memo.hits, fresh_memo.misses) == (1, 1)
    assert second == fingerprint_with_extraction(other)[0]  # every field, the page's own URL, host, time
    assert second.host == "mirror.example" and second.importance == 0.7 and second.simhash == first.simhash


@pytest.mark.parametrize("change", [
    {"status": 404},  # skipped, and its reason names the status
    {"content_type": "text/plain"},  # not HTML
    {"encoding": "utf-16"},  # decoded otherwise
    {"content_type": None, "headers": {"Content-Type": "text/plain"}},  # the headers' type when the event has none
])
def test_a_body_that_would_be_decoded_or_judged_otherwise_is_not_served_from_the_memo(
        fresh_memo: ContentMemo, change: dict[str, object]) -> None:
    fingerprint(fetched("https://news.example/rail"))
    page = replace(fetched("https://news.example/rail-2"), **change)  # type: ignore[arg-type]
    try:
        expected = fingerprint_with_extraction(page)[0]
    except Exception as exc:  # an undecodable body is refused the same way with the memo
        with pytest.raises(type(exc)):
            fingerprint(page)
    else:
        assert fingerprint(page) == expected
    assert fresh_memo.hits == 0


def test_other_settings_do_not_share_entries(fresh_memo: ContentMemo) -> None:
    on = fingerprint(fetched("https://news.example/rail"))
    off = fingerprint(fetched("https://news.example/rail"), CoreSettings(minhash=False))
    assert on.minhash is not None and off.minhash is None and fresh_memo.hits == 0


def test_the_memo_keeps_the_most_recently_used_entries() -> None:
    memo = ContentMemo(2)
    a, b, c = (fingerprint_with_extraction(fetched(f"https://news.example/{n}"))[0] for n in "abc")
    memo.put(("a",), a)
    memo.put(("b",), b)
    assert memo.get(("a",)) is a  # a is now the most recent
    memo.put(("c",), c)
    assert len(memo) == 2 and memo.get(("b",)) is None and memo.get(("a",)) is a and memo.get(("c",)) is c
    empty = ContentMemo(0)
    empty.put(("a",), a)
    assert empty.get(("a",)) is None
    with pytest.raises(ValueError):
        ContentMemo(-1)
