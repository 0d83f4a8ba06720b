"""One fetched page in, one fingerprinted page out: decode, extract the main text, digest, SimHash,
and the MinHash signature when MinHash is on.

`FingerprintBatch` is the one path from raw `pages.fetched` values to their `Fetch`es or rejections:
`neardup scan` and the stream's fingerprint agent run it over a batch of records, with the extraction
in their process pool (`fingerprint_body`); `fingerprint_event` runs it over one record in this process.
Each distinct body of a batch is extracted once, and a body met recently is not extracted again: this
process's memo of recent bodies (`MEMO`, `memo.py`) sits before the pool, so a copy finds the first
body whichever extraction process had it.

One entry point per purpose: `FingerprintBatch` (records, extracted in a pool), `fingerprint_event` (one
record), `fingerprint` (one parsed page: the library and the tools), `fingerprint_event_with_extraction`
(one record and what extraction kept of it, for `neardup explain`), `text_fingerprints` and
`html_fingerprints` (a main text or an HTML document alone, for the tools).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, replace
from typing import NamedTuple

from neardup_core.extract.main_text import ExtractError, Extraction, extract
from neardup_core.fingerprint.containment import ShingleSketch, text_minima
from neardup_core.fingerprint.digests import body_sha256, tokens_sha256
from neardup_core.fingerprint.features import Features, token_features, tokens
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.memo import ContentMemo, content_key
from neardup_core.fingerprint.minhash import minhash
from neardup_core.fingerprint.simhash import simhash64
from neardup_core.hosts.urls import host_of
from neardup_core.ingest.decode import DecodeError, decode_body, is_html_content_type
from neardup_core.ingest.event import EventError, FetchedPage, parse_event
from neardup_core.messages import DeadLetter, Rejection, dead_letter
from neardup_core.settings import DEFAULT_SETTINGS, CoreSettings


@dataclass(frozen=True, slots=True)
class Rejected:
    """Why an event was refused, and the stage that refused it (`validate`, `decode`, `extract`,
    or `fingerprint` for a bug, which must not stop a worker either)."""

    reason: str
    stage: str

    def message(self, raw: bytes, topic: str | None, partition: int | None, offset: int | None, *,
                key: bytes | None = None, settings: CoreSettings = DEFAULT_SETTINGS) -> Rejection:
        """The dead letter's value: where the event came from (a topic or a file) and its original
        bytes, cut so that it fits `settings.max_message_bytes` beside `key` (as `dead_letter` cuts it)."""
        return self.dead_letter(raw, topic, partition, offset, key=key, settings=settings).rejection

    def dead_letter(self, raw: bytes, topic: str | None, partition: int | None, offset: int | None, *,
                    key: bytes | None = None, settings: CoreSettings = DEFAULT_SETTINGS) -> DeadLetter:
        """The `pages.rejected` record to send: the input `key` cut to `settings.max_url_bytes`, and
        the value cut so that both fit `settings.max_message_bytes` (`messages.dead_letter`)."""
        return dead_letter(self.reason, self.stage, topic, partition, offset, raw, key=key,
                           max_bytes=settings.max_message_bytes, max_key_bytes=settings.max_url_bytes)


def fingerprint_event(raw: bytes, *, key: bytes | None = None, timestamp_ms: int | None = None,
                      settings: CoreSettings = DEFAULT_SETTINGS) -> Fetch | Rejected:
    """Parse, validate and fingerprint one raw `pages.fetched` value, in this process (a
    `FingerprintBatch` of one record).

    `key` and `timestamp_ms` are the record's (a Kafka record, or what a file reader says): the key
    must agree with the URL, and the timestamp is the fetch time of an event without `fetched_at`.
    """
    batch = FingerprintBatch([(raw, key, timestamp_ms)], settings)
    return batch.finish([fingerprint_body(job) for job in batch.jobs])[0]


@dataclass(frozen=True, slots=True)
class BodyJob:
    """One distinct body of a batch, for an extraction process: the first page that carries it."""

    page: FetchedPage
    body_digest: str
    settings: CoreSettings


def fingerprint_body(job: BodyJob) -> Fetch | Rejected:
    """The `Fetch` of a job's page, extracted (no memo: a batch sends each body it lacks once), or why
    the page is refused. Runs in an extraction process."""
    try:
        return _fingerprint(job.page, job.settings, job.body_digest)[0]
    except EventError as exc:
        return Rejected(exc.reason, exc.stage)
    except Exception as exc:  # a bug must not stop the worker or the scan: the event goes to the dead letters
        return Rejected(f"internal error: {type(exc).__name__}: {exc}", "fingerprint")


RawRecord = tuple[bytes, bytes | None, int | None]
"""A `pages.fetched` value with its record's key and timestamp (ms), as `fingerprint_event` takes them."""


class FingerprintBatch:
    """Records fingerprinted together, each distinct body extracted once:

    1. `FingerprintBatch(records, settings)` parses and validates each record here (a refused one has
       its `Rejected` at once) and looks each body up in `MEMO`;
    2. `jobs` holds one `BodyJob` per distinct body the memo lacks, for `fingerprint_body` (in a pool);
    3. `finish(results)`, given those jobs' results in order, remembers each new `Fetch` and returns
       every record's outcome in input order: a page whose body was met gets that body's content
       fields with its own URL, host, time and importance (`_as_page`).
    """

    def __init__(self, records: Iterable[RawRecord], settings: CoreSettings = DEFAULT_SETTINGS) -> None:
        self.settings = settings
        self.jobs: list[BodyJob] = []
        self.remembered = 0
        """Records whose body was met before, in the memo or earlier in the batch: not extracted."""
        self._outcomes: list[Fetch | Rejected | None] = []
        self._waiting: list[tuple[int, int, FetchedPage]] = []  # (record, job, page) answered by `finish`
        self._keys: list[tuple[Hashable, ...]] = []  # each job's memo key
        self._new: dict[tuple[Hashable, ...], int] = {}  # a memo key's job
        for raw, key, timestamp_ms in records:
            try:
                page = parse_event(raw, key=key, timestamp_ms=timestamp_ms, max_body_bytes=settings.max_body_bytes,
                                   max_url_bytes=settings.max_url_bytes)
                body_digest, content = self._content(page)
            except EventError as exc:
                self._outcomes.append(Rejected(exc.reason, exc.stage))
                continue
            except Exception as exc:  # a bug must not stop the worker or the scan: a dead letter
                self._outcomes.append(Rejected(f"internal error: {type(exc).__name__}: {exc}", "fingerprint"))
                continue
            self._add(page, body_digest, content)

    @classmethod
    def of_pages(cls, pages: Iterable[FetchedPage], settings: CoreSettings = DEFAULT_SETTINGS) -> FingerprintBatch:
        """A batch of pages already parsed (`fingerprint`)."""
        batch = cls((), settings)
        for page in pages:
            batch._add(page, *batch._content(page))
        return batch

    def _content(self, page: FetchedPage) -> tuple[str, tuple[Hashable, ...]]:
        body_digest = body_sha256(page.body)
        return body_digest, content_key(page, body_digest, self.settings)

    def _add(self, page: FetchedPage, body_digest: str, content: tuple[Hashable, ...]) -> None:
        """The page's outcome from the memo, or its wait for its body's job (a new one, or an earlier
        page's of this batch)."""
        at = len(self._outcomes)
        seen = MEMO.get(content)
        if seen is not None:
            self._outcomes.append(_as_page(seen, page))
            self.remembered += 1
            return
        self._outcomes.append(None)
        job = self._new.get(content)
        if job is None:
            job = self._new[content] = len(self.jobs)
            self.jobs.append(BodyJob(page, body_digest, self.settings))
            self._keys.append(content)
        else:
            self.remembered += 1
        self._waiting.append((at, job, page))

    def finish(self, results: list[Fetch | Rejected]) -> list[Fetch | Rejected]:
        """Every record's outcome, in input order, given the results of `jobs` in their order."""
        if len(results) != len(self.jobs):
            raise ValueError(f"{len(results)} results for {len(self.jobs)} jobs")
        for content, result in zip(self._keys, results, strict=True):
            if isinstance(result, Fetch):
                MEMO.put(content, result)
        outcomes = self._outcomes
        for at, job, page in self._waiting:
            result = results[job]
            outcomes[at] = result if isinstance(result, Rejected) or self.jobs[job].page is page \
                else _as_page(result, page)
        done = [outcome for outcome in outcomes if outcome is not None]
        if len(done) != len(outcomes):  # every record has been answered above: a record without one is a bug
            raise AssertionError("a record of the batch was given no outcome")
        return done


def fingerprint_event_with_extraction(raw: bytes, *, key: bytes | None = None, timestamp_ms: int | None = None,
                                      settings: CoreSettings = DEFAULT_SETTINGS
                                      ) -> tuple[Fetch | Rejected, Extraction | None]:
    """`fingerprint_event`, and what extraction kept of the page (None when it was not extracted:
    rejected, or skipped before extraction), for `neardup explain`: the page is always extracted (the
    memo of `fingerprint` keeps no extraction)."""
    try:
        page = parse_event(raw, key=key, timestamp_ms=timestamp_ms, max_body_bytes=settings.max_body_bytes,
                           max_url_bytes=settings.max_url_bytes)
        return _fingerprint(page, settings, body_sha256(page.body))
    except EventError as exc:
        return Rejected(exc.reason, exc.stage), None
    except Exception as exc:  # a bug must not stop the worker or the scan: the event goes to the dead letters
        return Rejected(f"internal error: {type(exc).__name__}: {exc}", "fingerprint"), None


WARM_UP_PAGE = FetchedPage(
    "http://warm-up.invalid/", fetched_at_ms=1_000_000_000_000, content_type="text/html",
    body=b"<html><head><title>Warm up</title></head><body><p>" + b"This sentence is here to be extracted. " * 8
    + b"</p></body></html>")


def warm_up(settings: CoreSettings = DEFAULT_SETTINGS) -> None:
    """Fingerprint a small built-in page, so that what the first page would load (the stoplist index,
    parsers) is loaded now: a process pool forked afterwards inherits it, and its first pages do not
    wait for it."""
    _fingerprint(WARM_UP_PAGE, settings, body_sha256(WARM_UP_PAGE.body))


MEMO = ContentMemo()
"""This process's fingerprints of recent bodies (`memo.ContentMemo`)."""


def fingerprint(page: FetchedPage, settings: CoreSettings = DEFAULT_SETTINGS) -> Fetch:
    """The page's `Fetch`; raises `EventError` (stage decode or extract) for undecodable pages. A body
    this process fingerprinted recently under the same decoding fields and settings is not extracted
    again (`MEMO`): its content fields are the last one's, with this page's URL, host, time and
    importance (a `FingerprintBatch` of one page, extracted here)."""
    batch = FingerprintBatch.of_pages([page], settings)
    fetch = batch.finish([_fingerprint(job.page, job.settings, job.body_digest)[0] for job in batch.jobs])[0]
    assert isinstance(fetch, Fetch)  # `_fingerprint` raises rather than refuse
    return fetch


def _as_page(fetch: Fetch, page: FetchedPage) -> Fetch:
    """The content fields of `fetch` (another page with the same body) for `page`."""
    return replace(fetch, url=page.url, host=host_of(page.url), fetched_at_ms=page.fetched_at_ms,
                   importance=page.importance)


def _fingerprint(page: FetchedPage, settings: CoreSettings, body_digest: str) -> tuple[Fetch, Extraction | None]:
    """The page's `Fetch` and its `Extraction` (None when the page was skipped before extraction), always
    extracted; `body_digest` is the body's SHA-256, which the callers have computed already."""
    host = host_of(page.url)

    def skipped(reason: str, main: Extraction | None = None) -> tuple[Fetch, Extraction | None]:
        return Fetch(page.url, host, page.fetched_at_ms, page.importance, body_digest, None, None, reason), main

    if not 200 <= page.status < 300:
        return skipped(f"HTTP status {page.status}")
    content_type = page.content_type or page.headers.get("content-type") or page.headers.get("Content-Type")
    if not is_html_content_type(content_type):
        return skipped(f"content type {content_type} is not HTML")
    try:
        html = decode_body(page.body, encoding=page.encoding, content_type=content_type, headers=page.headers).text
    except DecodeError as exc:
        raise EventError(f"undecodable body: {exc}", stage="decode") from None
    try:
        main = extract(html)
    except ExtractError as exc:
        raise EventError(f"cannot extract main text: {exc}", stage="extract") from None
    reason = skip_reason(main)
    if reason is not None:
        return skipped(reason, main)
    toks, text_digest, features = _tokens_digest_and_features(main.text, settings)
    if features is None:
        return Fetch(page.url, host, page.fetched_at_ms, page.importance, body_digest, text_digest, None), main
    signature = minhash(features.hashes, settings.bands * settings.rows) if settings.minhash else None
    minima = text_minima(toks) if settings.design.partial is not None else None
    return Fetch(page.url, host, page.fetched_at_ms, page.importance, body_digest, text_digest,
                 simhash64(features.hashes, features.weights), minhash=signature,
                 shingles=len(features) if minima is not None else None, minima=minima), main


def skip_reason(main: Extraction) -> str | None:
    """Why a page extracted as `main` is skipped rather than deduplicated on its main text (what
    jusText kept is template and the page holds nothing else, or there is no main text); None when
    it is deduplicated. The one rule for it: `fingerprint` and `html_fingerprints` both ask here."""
    if main.skip_reason:
        return main.skip_reason
    if not main.text.strip():
        return "no main text"
    return None


class TextFingerprints(NamedTuple):
    """A main text's fingerprints, as a `Fetch` carries them: its digest (None: a page that is skipped,
    `html_fingerprints`), SimHash and MinHash signature (None when the text has too few features; the
    signature also when it is not asked for), and its distinct shingle count (None: too few features)."""

    digest: str | None
    simhash: int | None
    minhash: bytes | None
    shingles: int | None

    @property
    def sketch(self) -> ShingleSketch | None:
        """The signature and the shingle count, for a containment estimate (`containment.containment`)."""
        return None if self.minhash is None or self.shingles is None else ShingleSketch(self.minhash, self.shingles)


NO_TEXT = TextFingerprints(None, None, None, None)


def text_fingerprints(main_text: str, settings: CoreSettings = DEFAULT_SETTINGS, *, signed: bool | None = None
                      ) -> TextFingerprints:
    """The fingerprints of a main text (the one entry point for a text; `html_fingerprints` for a page):
    the SimHash and the signature over the same shingles, the signature when MinHash is on (`signed`
    overrides it: a containment estimate signs whatever the settings)."""
    digest, features = _digest_and_features(main_text, settings)
    if features is None:
        return TextFingerprints(digest, None, None, None)
    sign = settings.minhash if signed is None else signed
    signature = minhash(features.hashes, settings.bands * settings.rows) if sign else None
    return TextFingerprints(digest, simhash64(features.hashes, features.weights), signature, len(features))


def text_fingerprint(main_text: str, settings: CoreSettings = DEFAULT_SETTINGS) -> tuple[str | None, int | None]:
    """Deprecated, kept for `neardup_core.text_fingerprint` (exported before the API was cut):
    `text_fingerprints(main_text, settings)[:2]`."""
    fingerprints = text_fingerprints(main_text, settings)
    return fingerprints.digest, fingerprints.simhash


def _digest_and_features(main_text: str, settings: CoreSettings) -> tuple[str, Features | None]:
    """The text digest, and the shingle features (None when fewer than `min_features`)."""
    _, digest, features = _tokens_digest_and_features(main_text, settings)
    return digest, features


def _tokens_digest_and_features(main_text: str, settings: CoreSettings
                                ) -> tuple[list[str], str, Features | None]:
    """The tokens, `_digest_and_features`."""
    toks = tokens(main_text)
    features = token_features(toks, settings.shingle_size)
    return toks, tokens_sha256(toks), features if len(features) >= settings.min_features else None


def html_fingerprints(html: str, settings: CoreSettings = DEFAULT_SETTINGS) -> TextFingerprints:
    """`text_fingerprints` of an HTML page's main text, as `fingerprint` makes them; `NO_TEXT` (every
    field None) when the page would be skipped (no main text, or only template text)."""
    main = extract(html)
    if skip_reason(main) is not None:
        return NO_TEXT
    return text_fingerprints(main.text, settings)
