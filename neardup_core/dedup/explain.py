"""Why two pages are, or are not, duplicates: `neardup explain A B`, as data.

Each page goes through `fingerprint_event_with_extraction` (the one path `scan` and the stream
take), and the pair is decided by the rule's own functions (`rule.match_of`, `better`,
`better_ranked`, `verdict_of`, `reason_of`), each page against the other as the only page around,
which is what `scan` decides for a file holding just the two. Beside the verdict: what extraction
kept of each page, the digests, the SimHash distance with the blocks and tables of the design the
two share (where the index finds one from the other), the MinHash Jaccard estimate (and the exact
Jaccard of the shingle sets) with the LSH bands whose rows are all equal, and a paragraph diff of
the two main texts with the changed words marked. Nothing here decides anything the rule does not.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, replace
from itertools import zip_longest
from typing import Any, Literal

from neardup_core.dedup.gather import JACCARD_DIGITS
from neardup_core.dedup.rank import Rank
from neardup_core.dedup.rule import (
    Match,
    better,
    better_ranked,
    containment_estimate,
    holds,
    match_of,
    partial_match,
    reason_of,
    verdict_of,
)
from neardup_core.dedup.version import PageVersion
from neardup_core.extract.main_text import Extraction
from neardup_core.extract.template import MAX_KEPT_SHARE
from neardup_core.fingerprint.containment import exact_containment, minimum_of, size_class
from neardup_core.fingerprint.features import token_features, tokens
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.minhash import band_bytes, equal_rows, exact_jaccard, jaccard, shared_band
from neardup_core.fingerprint.page import Rejected, fingerprint_event_with_extraction
from neardup_core.fingerprint.simhash import hamming, to_hex
from neardup_core.ingest.lookup import PageSource
from neardup_core.messages import Verdict
from neardup_core.settings import CoreSettings
from neardup_core.timefmt import ms_to_rfc3339

Side = Literal["A", "B"]
RANK_PARTS = ("importance", "scheme (https before http)", "URL shape (path segments + query parameters)",
              "URL length", "first fetch time", "URL", "body digest")
"""What each element of a `Rank` (`rank.rank_of`) compares, in its order."""


class PageRejected(ValueError):
    """A page that validation or decoding refused: no verdict is possible. `side` is A or B."""

    def __init__(self, side: Side, source: PageSource, rejected: Rejected) -> None:
        super().__init__(f"page {side} ({source.spec}) is rejected at stage {rejected.stage}: {rejected.reason}")
        self.side, self.source, self.rejected = side, source, rejected


@dataclass(frozen=True, slots=True)
class TemplateCheck:
    """The template check's outcome: `outcome` is ``replaced`` (what jusText kept was template; the
    page is decided on `action`'s text), ``skipped`` (the page holds only template), ``content``
    (gated, and what jusText kept is content), ``not gated`` (jusText kept at least `MAX_KEPT_SHARE`)
    or ``not run`` (the fallback, or no text); `justext_kept` counts the paragraphs jusText kept when
    the check replaced them."""

    outcome: str
    detail: str
    action: str | None = None
    justext_kept: int | None = None


@dataclass(frozen=True, slots=True)
class ExtractionReport:
    """What extraction kept: the paragraphs the page is decided on, the stoplist (None: the union of
    all), jusText's boilerplate share of the characters, whether the full visible text was the
    fallback, and the template check."""

    paragraphs: tuple[str, ...]
    words: int
    stoplist: str | None
    boilerplate_share: float
    fallback: bool
    template: TemplateCheck


@dataclass(frozen=True, slots=True)
class PageReport:
    """One side: where it came from, its fetch and fingerprints, and its extraction (None when the
    page was skipped before extraction: an error status, not HTML)."""

    side: Side
    spec: str
    path: str
    kind: str
    position: int | None
    fetches: int
    url: str
    host: str
    fetched_at: str
    importance: float
    body_sha256: str
    text_sha256: str | None
    simhash: str | None
    minhash_rows: int | None
    shingles: int | None
    min_features: int
    skip_reason: str | None
    extraction: ExtractionReport | None
    rank: Rank | None


@dataclass(frozen=True, slots=True)
class SimHashReport:
    """The SimHash distance and, per block of the design, whether the two are equal there; the near
    tables (numbered from 0, with their key blocks) whose bucket the two share."""

    distance: int
    k: int
    design: str
    blocks_equal: tuple[bool, ...]
    block_bits: tuple[tuple[int, int], ...]
    tables: int
    shared_tables: tuple[int, ...]
    table_keys: tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class MinHashReport:
    """The Jaccard estimate of the two signatures, the exact Jaccard of the shingle sets behind them,
    equal rows, the bands whose rows are all equal (numbered from 0; the rule looks at the first),
    and J."""

    jaccard: float
    exact_jaccard: float | None
    equal_rows: int
    rows: int
    bands: int
    rows_per_band: int
    shared_bands: tuple[int, ...]
    first_shared_band: int | None
    threshold: float


@dataclass(frozen=True, slots=True)
class ContainmentReport:
    """The containment of each page's main text in the other's: the estimates (`rule.containment_estimate`)
    and the exact values from the shingle sets, the distinct shingle counts and size classes, the
    containment bands whose minima are equal, which page can hold the other (the larger), and the page
    whose `partial_of` names the other under the settings (None when neither)."""

    b_in_a: float
    a_in_b: float
    exact_b_in_a: float | None
    exact_a_in_b: float | None
    shingles_a: int
    shingles_b: int
    size_classes: tuple[int, int]
    shared_bands: tuple[int, ...]
    bands: int
    holder: Side
    names: Side | None
    threshold: float
    enabled: bool = True
    """Whether the settings name partial copies (`NEARDUP_PARTIAL_COPIES`); when off, the report is what
    the index would find with them on, and `names` says which page's `partial_of` would name the other."""
    bucket_texts: int = 0
    """The cap on a containment bucket's texts (0: none): in a crawl, a shared band counts only while its
    bucket holds at most this many main texts; the two pages alone put two in each shared bucket."""


@dataclass(frozen=True, slots=True)
class PageVerdict:
    """What the rule decides for one page with the other page the only one around, in the fields of
    its `dedup.decisions` record."""

    verdict: Verdict
    duplicate_of: str | None
    distance: int | None
    jaccard: float | None
    reason: str


@dataclass(frozen=True, slots=True)
class VerdictReport:
    """The pair's outcome: which page ranks better and by what, which (if either) is the duplicate,
    the `rule` that fired (``exact: body digest``, ``exact: text digest``, ``SimHash within k``,
    ``MinHash band and J``, both of the last two, ``skipped``, ``same URL`` or ``none``), and each
    page's verdict. `headline` says it in one sentence."""

    better: Side | None
    rank_reason: str
    duplicate: Side | None
    rule: str
    a: PageVerdict
    b: PageVerdict
    headline: str


@dataclass(frozen=True, slots=True)
class DiffRow:
    """One row of the side-by-side diff: `tag` as difflib's (equal, replace, delete, insert); `a` and
    `b` the paragraph's words in runs of (text, changed), empty on the side that has none."""

    tag: str
    a: tuple[tuple[str, bool], ...]
    b: tuple[tuple[str, bool], ...]


@dataclass(frozen=True, slots=True)
class Explanation:
    """`neardup explain A B`: both pages, the comparisons, the verdict and the diff."""

    a: PageReport
    b: PageReport
    same_body: bool
    same_text: bool
    simhash: SimHashReport | None
    minhash: MinHashReport | None
    verdict: VerdictReport
    diff: tuple[DiffRow, ...]
    settings: dict[str, Any]
    containment: ContainmentReport | None = None

    def to_dict(self) -> dict[str, Any]:
        """The explanation as one JSON-ready object (tuples become lists)."""
        return dataclasses.asdict(self)


def explain(a: PageSource, b: PageSource, settings: CoreSettings) -> Explanation:
    """Explain the pair; raises `PageRejected` when a page is refused."""
    fetch_a, main_a = _fingerprinted("A", a, settings)
    fetch_b, main_b = _fingerprinted("B", b, settings)
    lsh = settings.design.lsh
    report_a, report_b = _page_report("A", a, fetch_a, main_a, settings), _page_report("B", b, fetch_b, main_b,
                                                                                      settings)
    simhash = _simhash_report(fetch_a, fetch_b, settings)
    minhash = None
    if lsh is not None and fetch_a.minhash is not None and fetch_b.minhash is not None:
        minhash = _minhash_report(fetch_a.minhash, fetch_b.minhash, main_a, main_b, settings)
    paragraphs_a = main_a.paragraphs if main_a is not None else ()
    paragraphs_b = main_b.paragraphs if main_b is not None else ()
    return Explanation(
        a=report_a, b=report_b, same_body=fetch_a.body_sha256 == fetch_b.body_sha256,
        same_text=fetch_a.text_sha256 is not None and fetch_a.text_sha256 == fetch_b.text_sha256,
        simhash=simhash, minhash=minhash, verdict=_verdict(fetch_a, fetch_b, settings),
        diff=paragraph_diff(paragraphs_a, paragraphs_b),
        settings={"k": settings.k, "design": settings.design.name, "shingle_size": settings.shingle_size,
                  "min_features": settings.min_features, "minhash": settings.minhash, "bands": settings.bands,
                  "rows": settings.rows, "jaccard": settings.jaccard, "containment": settings.containment},
        containment=_containment(a, b, fetch_a, fetch_b, main_a, main_b, settings))


def _containment(a: PageSource, b: PageSource, fetch_a: Fetch, fetch_b: Fetch, main_a: Extraction | None,
                 main_b: Extraction | None, settings: CoreSettings) -> ContainmentReport | None:
    """`_containment_report` under the settings, or, with partial copies off, under the same settings with
    them on (the pages fingerprinted again for their containment minima), marked as not enabled."""
    if settings.partial_copies:
        return _containment_report(fetch_a, fetch_b, main_a, main_b, settings)
    on = replace(settings, partial_copies=True)
    (on_a, on_main_a), (on_b, on_main_b) = _fingerprinted("A", a, on), _fingerprinted("B", b, on)
    report = _containment_report(on_a, on_b, on_main_a, on_main_b, on)
    return None if report is None else replace(report, enabled=False)


def _containment_report(a: Fetch, b: Fetch, main_a: Extraction | None, main_b: Extraction | None,
                        settings: CoreSettings) -> ContainmentReport | None:
    """Each page's containment in the other (None without containment minima: MinHash off, a page skipped
    or with too few shingles)."""
    design = settings.design
    va, vb = a.version, b.version
    if design.partial is None or va is None or vb is None or va.minima is None or vb.minima is None \
            or va.shingles is None or vb.shingles is None:
        return None
    exact_b = exact_a = None
    if main_a is not None and main_b is not None:
        set_a = token_features(tokens(main_a.text), settings.shingle_size).hashes
        set_b = token_features(tokens(main_b.text), settings.shingle_size).hashes
        exact_b, exact_a = exact_containment(set_a, set_b), exact_containment(set_b, set_a)
    bits = design.lsh.bits if design.lsh is not None else 8
    shared = tuple(band for band in range(design.partial.bands)
                   if minimum_of(va.minima, band) == minimum_of(vb.minima, band))
    cap = design.partial.bucket_texts
    names: Side | None = None if cap == 1 else "A" if partial_match(va, vb, design) is not None else \
        "B" if partial_match(vb, va, design) is not None else None  # a cap of 1 text: two saturate a bucket
    return ContainmentReport(containment_estimate(va, vb, bits), containment_estimate(vb, va, bits), exact_b, exact_a,
                             va.shingles, vb.shingles, (size_class(va.shingles), size_class(vb.shingles)), shared,
                             design.partial.bands, "A" if holds(va, vb) else "B", names, design.partial.containment,
                             bucket_texts=cap)


def _fingerprinted(side: Side, source: PageSource, settings: CoreSettings) -> tuple[Fetch, Extraction | None]:
    event = source.event
    result, main = fingerprint_event_with_extraction(event.raw, key=event.key, timestamp_ms=event.timestamp_ms,
                                                     settings=settings)
    if isinstance(result, Rejected):
        raise PageRejected(side, source, result)
    return result, main


def _page_report(side: Side, source: PageSource, fetch: Fetch, main: Extraction | None,
                 settings: CoreSettings) -> PageReport:
    shingles = None
    if main is not None and fetch.skip_reason is None:
        shingles = len(token_features(tokens(main.text), settings.shingle_size))
    version = fetch.version
    return PageReport(
        side=side, spec=source.spec, path=source.path, kind=source.kind, position=source.position,
        fetches=source.fetches, url=fetch.url, host=fetch.host, fetched_at=ms_to_rfc3339(fetch.fetched_at_ms),
        importance=fetch.importance, body_sha256=fetch.body_sha256, text_sha256=fetch.text_sha256,
        simhash=to_hex(fetch.simhash) if fetch.simhash is not None else None,
        minhash_rows=len(fetch.minhash) if fetch.minhash is not None else None, shingles=shingles,
        min_features=settings.min_features, skip_reason=fetch.skip_reason,
        extraction=_extraction_report(main) if main is not None else None,
        rank=version.rank if version is not None else None)


def _extraction_report(main: Extraction) -> ExtractionReport:
    return ExtractionReport(paragraphs=main.paragraphs, words=len(main.text.split()), stoplist=main.language,
                            boilerplate_share=main.boilerplate_ratio, fallback=main.fallback,
                            template=template_check(main))


def template_check(main: Extraction) -> TemplateCheck:
    """What the template check did with this extraction (see `neardup_core.extract.template`)."""
    kept = 1.0 - main.boilerplate_ratio
    finding = main.template
    if finding is not None:
        outcome = "skipped" if finding.action == "skip" else "replaced"
        return TemplateCheck(outcome, finding.reason, finding.action, len(finding.kept))
    if main.fallback:
        return TemplateCheck("not run", "jusText kept nothing: the page's full visible text is its main text")
    if not main.paragraphs:
        return TemplateCheck("not run", "the page has no text")
    if kept < MAX_KEPT_SHARE:
        return TemplateCheck("content", f"jusText kept {kept:.0%} of the text (under {MAX_KEPT_SHARE:.0%}), "
                                        "and what it kept is the page's content")
    return TemplateCheck("not gated", f"jusText kept {kept:.0%} of the text (at least {MAX_KEPT_SHARE:.0%})")


def _simhash_report(a: Fetch, b: Fetch, settings: CoreSettings) -> SimHashReport | None:
    if a.simhash is None or b.simhash is None:
        return None
    design = settings.design
    blocks = tuple(((a.simhash >> shift) ^ (b.simhash >> shift)) & ((1 << width) - 1) == 0
                   for shift, width in design.block_bits)
    shared = tuple(t for t in range(design.table_count) if design.bucket(a.simhash, t) == design.bucket(b.simhash, t))
    keys = tuple(order[: design.blocks - design.k] for order in design.tables)
    return SimHashReport(hamming(a.simhash, b.simhash), settings.k, design.name, blocks, design.block_bits,
                         design.table_count, shared, keys)


def _minhash_report(sig_a: bytes, sig_b: bytes, main_a: Extraction | None, main_b: Extraction | None,
                    settings: CoreSettings) -> MinHashReport:
    lsh = settings.design.lsh
    assert lsh is not None
    exact = None
    if main_a is not None and main_b is not None:
        exact = exact_jaccard(token_features(tokens(main_a.text), settings.shingle_size).hashes,
                              token_features(tokens(main_b.text), settings.shingle_size).hashes)
    shared = tuple(band for band in range(lsh.bands)
                   if band_bytes(sig_a, band, lsh.rows, lsh.bits) == band_bytes(sig_b, band, lsh.rows, lsh.bits))
    return MinHashReport(jaccard(sig_a, sig_b, lsh.bits), exact, equal_rows(sig_a, sig_b, lsh.bits),
                         lsh.permutations, lsh.bands, lsh.rows, shared,
                         shared_band(sig_a, sig_b, lsh.bands, lsh.rows, lsh.bits), lsh.jaccard)


def _page_verdict(page: Fetch, other: Fetch, settings: CoreSettings) -> tuple[PageVerdict, Match | None]:
    """The rule for `page` with `other` the only other page: a duplicate only of a better-ranked page."""
    version, candidate = page.version, other.version
    if version is None:
        return PageVerdict("skipped", None, None, None, page.skip_reason or "skipped"), None
    k, lsh = settings.k, settings.design.lsh
    best: Match | None = None
    if candidate is not None and better_ranked(candidate, version):
        best = better(best, match_of(version, candidate, k, lsh))
    jaccard_value = round(best.jaccard, JACCARD_DIGITS) if best is not None and best.jaccard is not None else None
    return PageVerdict(verdict_of(best), best.candidate.url if best else None, best.distance if best else None,
                       jaccard_value, reason_of(version, best, k, lsh)), best


def _verdict(a: Fetch, b: Fetch, settings: CoreSettings) -> VerdictReport:
    verdict_a, match_a = _page_verdict(a, b, settings)
    verdict_b, match_b = _page_verdict(b, a, settings)
    va, vb = a.version, b.version
    if va is None or vb is None:
        skipped = [side for side, v in (("A", va), ("B", vb)) if v is None]
        return VerdictReport(None, "a skipped page has no rank: it is not deduplicated", None, "skipped", verdict_a,
                             verdict_b, f"not compared: {' and '.join(skipped)} skipped ("
                             + "; ".join(f.skip_reason or "skipped" for f in (a, b) if f.version is None) + ")")
    if va.identity == vb.identity:
        return VerdictReport(None, "one URL: a page is never a duplicate of its own URL", None, "same URL",
                             verdict_a, verdict_b, f"not compared: A and B are one URL ({va.identity}); "
                             "a second fetch of a URL is a recrawl, never a duplicate of itself")
    better_side: Side = "A" if better_ranked(va, vb) else "B"
    worse_side: Side = "B" if better_side == "A" else "A"
    rank_reason = _rank_reason(better_side, *((va, vb) if better_side == "A" else (vb, va)))
    match = match_b if better_side == "A" else match_a
    worse = verdict_b if better_side == "A" else verdict_a
    rule = _rule_of(match, va, vb)
    if match is None:
        headline = f"{worse_side} is unique against {better_side}: {worse.reason}"
        return VerdictReport(better_side, rank_reason, None, rule, verdict_a, verdict_b, headline)
    article = "an" if worse.verdict.startswith("exact") else "a"
    headline = f"{worse_side} is {article} {worse.verdict} of {better_side} ({rule}): {worse.reason}"
    return VerdictReport(better_side, rank_reason, worse_side, rule, verdict_a, verdict_b, headline)


def _rule_of(match: Match | None, a: PageVersion, b: PageVersion) -> str:
    """Which part of the rule the match is: the name of the test its fields say passed."""
    if match is None:
        return "none"
    if match.exact:
        return "exact: body digest" if a.body_sha256 == b.body_sha256 else "exact: text digest"
    tests = (["SimHash within k"] if match.distance is not None else []) \
        + (["MinHash band and J"] if match.jaccard is not None else [])
    return " and ".join(tests)


def _rank_reason(side: Side, good: PageVersion, bad: PageVersion) -> str:
    """Which element of the rank decided, in words."""
    for part, x, y in zip(RANK_PARTS, good.rank, bad.rank, strict=True):
        if x != y:
            return f"{side} ranks better by {part}: {_rank_value(part, x)} against {_rank_value(part, y)}"
    return f"{side} ranks better"  # unreachable for two URLs: the rank holds the URL


def _rank_value(part: str, value: object) -> str:
    if part == "importance" and isinstance(value, float):
        return f"{-value:g}"
    if part.startswith("scheme"):
        return "https" if value == 0 else "http"
    if part == "first fetch time" and isinstance(value, int):
        return ms_to_rfc3339(value)
    return str(value)


def paragraph_diff(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[DiffRow, ...]:
    """The two paragraph lists aligned by difflib, replaced paragraphs paired in order with their
    changed words marked."""
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(DiffRow("equal", ((p, False),), ((p, False),)) for p in a[i1:i2])
            continue
        for left, right in zip_longest(a[i1:i2], b[j1:j2]):
            if left is None:
                rows.append(DiffRow("insert", (), ((right, True),)))
            elif right is None:
                rows.append(DiffRow("delete", ((left, True),), ()))
            else:
                rows.append(DiffRow("replace", *word_diff(left, right)))
    return tuple(rows)


def word_diff(a: str, b: str) -> tuple[tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]]:
    """Two paragraphs as runs of (words, changed)."""
    wa, wb = a.split(), b.split()
    left: list[tuple[str, bool]] = []
    right: list[tuple[str, bool]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if i2 > i1:
            left.append((" ".join(wa[i1:i2]), tag != "equal"))
        if j2 > j1:
            right.append((" ".join(wb[j1:j2]), tag != "equal"))
    return tuple(left), tuple(right)
