"""A body met again is fingerprinted from the process's memo: the same `Fetch` as extracting it again, with
the page's own URL, host, time and importance, and never for a page that decodes or is judged otherwise."""

from __future__ import annotations

import re
from dataclasses import replace

import orjson
import pytest

from neardup_core.fingerprint import page as page_module
from neardup_core.fingerprint.digests import body_sha256
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.memo import ContentMemo
from neardup_core.fingerprint.page import (
    BodyJob,
    FingerprintBatch,
    Rejected,
    fingerprint,
    fingerprint_body,
    fingerprint_event_with_extraction,
)
from neardup_core.ingest.event import EventError, FetchedPage
from neardup_core.settings import DEFAULT_SETTINGS, CoreSettings

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


def extracted(page: FetchedPage) -> Fetch | Rejected:
    """The page's outcome extracted afresh (an extraction process's path, which has no memo)."""
    return fingerprint_body(BodyJob(page, body_sha256(page.body), DEFAULT_SETTINGS))


def fetched(url: str, **fields: object) -> FetchedPage:
    return FetchedPage(url, BODY, 1_700_000_000_000, content_type="text/html", **fields)  # type: ignore[arg-type]


def test_a_body_met_again_is_answered_from_the_memo_as_extracting_it_would(fresh_memo: ContentMemo) -> None:
    first = fingerprint(fetched("https://news.example/rail"))
    other = replace(fetched("http://mirror.example/copy?utm=x"), fetched_at_ms=1_700_000_999_000, importance=0.7)
    second = fingerprint(other)
    assert (fresh_memo.hits, fresh_memo.misses) == (1, 1)
    assert second == extracted(other)  # every field, the page's own URL, host, time
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
    expected = extracted(page)
    if isinstance(expected, Rejected):  # an undecodable body is refused the same way with the memo
        with pytest.raises(EventError, match=re.escape(expected.reason)):
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
    a, b, c = (extracted(fetched(f"https://news.example/{n}")) for n in "abc")
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


def raw_event(url: str, body: bytes = BODY, **fields: object) -> bytes:
    return orjson.dumps({"url": url, "body": body.decode(), "fetched_at": "2026-01-01T00:00:00Z",
                         "content_type": "text/html", **fields})


def test_a_batch_extracts_each_distinct_body_once_and_answers_every_record_in_order(fresh_memo: ContentMemo) -> None:
    other = BODY.replace(b"rail line", b"tram line")
    records = [raw_event("https://news.example/rail"), b"not json", raw_event("http://mirror.example/rail"),
               raw_event("https://news.example/tram", other), raw_event("https://copy.example/rail?utm=x"),
               raw_event("https://news.example/gone", status=404)]
    batch = FingerprintBatch([(raw, None, None) for raw in records])
    assert [job.page.url for job in batch.jobs] == [
        "https://news.example/rail", "https://news.example/tram", "https://news.example/gone"]
    assert batch.remembered == 2  # the mirror and the copy: their body came earlier in the batch
    outcomes = batch.finish([fingerprint_body(job) for job in batch.jobs])
    alone = [fingerprint_event_with_extraction(raw)[0] for raw in records]  # each extracted on its own
    assert outcomes == alone
    assert isinstance(outcomes[1], Rejected) and outcomes[1].stage == "validate"
    # the next batch finds the bodies in the memo, whichever process extracted them
    again = FingerprintBatch([(raw_event("https://fourth.example/rail"), None, None)])
    assert again.jobs == [] and again.remembered == 1 and again.finish([]) == [fingerprint_event_with_extraction(
        raw_event("https://fourth.example/rail"))[0]]


def test_a_body_refused_by_extraction_refuses_every_record_that_carries_it(fresh_memo: ContentMemo) -> None:
    records = [(raw_event(f"https://news.example/{n}"), None, None) for n in range(3)]
    batch = FingerprintBatch(records)
    assert len(batch.jobs) == 1
    refused = Rejected("the extraction process died", "extract")
    assert batch.finish([refused]) == [refused] * 3
    assert len(fresh_memo) == 0  # a refusal is not remembered: the next record is extracted again
    with pytest.raises(ValueError):
        FingerprintBatch(records).finish([])
