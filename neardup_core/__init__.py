"""neardup's core: near-duplicate detection of fetched web pages, without Kafka.

What a Python crawler embedding neardup imports. A page goes from its raw `pages.fetched` event to a
fingerprinted `Fetch` (or a `Rejected` with its reason) by `fingerprint_event`, and an `Engine` over
a state directory decides fetches one at a time, returning every decision each one causes (revisions
of earlier pages included); `HostTracker` turns decisions into per-host trap signals. `open_engine`
does all of it, as `neardup scan` does (the README's "Use it from Python")::

    from neardup_core import CoreSettings, Rejected, open_engine

    with open_engine(state_dir, CoreSettings(k=3)) as dd:
        outcome = dd.add({"url": url, "body": html})  # a dict in the pages.fetched schema, or its JSON bytes
        if not isinstance(outcome, Rejected):
            print(outcome.decision.verdict, [d.url for d in outcome.revisions])

The packages, by concern: `ingest` (the event, charset decoding, JSONL/WARC readers), `extract`
(main text), `fingerprint` (features, SimHash, digests), `index` (table designs, keys, the bucket
step), `store` (memory and RocksDB), `dedup` (rank, the rule, per-URL state, the engine), `hosts`
(host statistics and URL rules), `testing` (generators, the oracle, the corpus reader).
"""

from __future__ import annotations

from neardup_core.dedup.engine import Engine, StateMismatch
from neardup_core.dedup.gather import Published
from neardup_core.dedup.version import PageVersion
from neardup_core.embedded import Deduplicator, Outcome, open_engine
from neardup_core.extract.main_text import Extraction, extract
from neardup_core.fingerprint.fetch import Fetch
from neardup_core.fingerprint.page import Rejected, fingerprint, fingerprint_event, text_fingerprint
from neardup_core.fingerprint.simhash import hamming, simhash64
from neardup_core.hosts.statistics import HostPolicy
from neardup_core.hosts.tracker import HostTracker
from neardup_core.index.tables import TableDesign, choose_design
from neardup_core.ingest.event import EventError, FetchedPage, parse_event
from neardup_core.ingest.files import RawEvent, read_events
from neardup_core.messages import VERDICTS, Decision, HostSignal, Rejection, UrlRule, Verdict
from neardup_core.settings import DEFAULT_SETTINGS, CoreSettings

__all__ = [
    "DEFAULT_SETTINGS", "VERDICTS", "CoreSettings", "Decision", "Deduplicator", "Engine", "EventError", "Extraction",
    "Fetch", "FetchedPage", "HostPolicy", "HostSignal", "HostTracker", "Outcome", "PageVersion", "Published",
    "RawEvent", "Rejected", "Rejection", "StateMismatch", "TableDesign", "UrlRule", "Verdict", "choose_design",
    "extract", "fingerprint", "fingerprint_event", "hamming", "open_engine", "parse_event", "read_events", "simhash64",
    "text_fingerprint",
]
