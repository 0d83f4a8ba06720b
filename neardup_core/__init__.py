"""neardup's core: near-duplicate detection of fetched web pages, without Kafka.

What a Python crawler imports: a `Deduplicator` over memory or a state directory, whose `add(url, html)`
returns the URL's `Decision` (`unique`, or a duplicate with its `duplicate_of`):

    from neardup_core import Deduplicator

    with Deduplicator() as dd:  # Deduplicator("state/") keeps the index in RocksDB
        decision = dd.add(url, html)
        if decision.is_duplicate:
            print(url, "is a copy of", dd.canonical(url))

`query`, `remove`, `canonical`, `add_many`, `host_signal`: see `Deduplicator`. The packages, by
concern: `ingest` (the event, charset decoding, JSONL/WARC readers), `extract` (main text),
`fingerprint` (features, SimHash, digests), `index` (table designs, keys, the bucket step), `store`
(memory and RocksDB), `dedup` (rank, the rule, per-URL state, the engine), `hosts` (host statistics
and URL rules), `testing` (generators, the oracle, the corpus reader); `embedded` decides events in the
`pages.fetched` schema, as `neardup scan` does.

The names this package exported before and no longer does still import from here, with a
`DeprecationWarning` naming the module that holds them.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from neardup_core.dedup.engine import StateMismatch
from neardup_core.deduplicator import Deduplicator, InvalidPage
from neardup_core.messages import Decision, HostSignal, Verdict
from neardup_core.settings import CoreSettings

__all__ = ["CoreSettings", "Decision", "Deduplicator", "HostSignal", "InvalidPage", "StateMismatch", "Verdict"]

_MOVED = {
    "DEFAULT_SETTINGS": "neardup_core.settings", "VERDICTS": "neardup_core.messages",
    "Engine": "neardup_core.dedup.engine", "EventError": "neardup_core.ingest.event",
    "Extraction": "neardup_core.extract.main_text", "extract": "neardup_core.extract.main_text",
    "Fetch": "neardup_core.fingerprint.fetch", "FetchedPage": "neardup_core.ingest.event",
    "parse_event": "neardup_core.ingest.event", "HostPolicy": "neardup_core.hosts.statistics",
    "HostTracker": "neardup_core.hosts.tracker", "Outcome": "neardup_core.embedded",
    "open_engine": "neardup_core.embedded", "PageVersion": "neardup_core.dedup.version",
    "Published": "neardup_core.dedup.gather", "RawEvent": "neardup_core.ingest.files",
    "read_events": "neardup_core.ingest.files", "Rejected": "neardup_core.fingerprint.page",
    "fingerprint": "neardup_core.fingerprint.page", "fingerprint_event": "neardup_core.fingerprint.page",
    "text_fingerprint": "neardup_core.fingerprint.page", "Rejection": "neardup_core.messages",
    "UrlRule": "neardup_core.messages", "TableDesign": "neardup_core.index.tables",
    "choose_design": "neardup_core.index.tables", "hamming": "neardup_core.fingerprint.simhash",
    "simhash64": "neardup_core.fingerprint.simhash",
}
"""Names exported here before the API was cut to `__all__`: where each one lives."""


def __getattr__(name: str) -> Any:
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'neardup_core' has no attribute {name!r}")
    replaced = name in ("open_engine", "Engine", "Outcome", "Rejected")
    hint = "use Deduplicator" if replaced else f"import it from {module}"
    warnings.warn(f"neardup_core.{name} is deprecated: {hint} ({name} lives in {module})", DeprecationWarning,
                  stacklevel=2)
    return getattr(importlib.import_module(module), name)
