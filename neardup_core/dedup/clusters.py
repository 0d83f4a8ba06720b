"""Clusters of duplicates: each URL's final decision, and `duplicate_of` chains followed to the canonical.

A URL's final decision is its latest: the highest `revision`, the later one of equal revisions
(decisions are a changelog keyed by URL identity). `duplicate_of` may name a page that is itself a
duplicate (a page is not told of every better copy that arrives later), so a duplicate's cluster is
found by following the chain until it reaches a page that is not a duplicate: the cluster's canonical.
URLs are compared by their identity (`url_identity`), as decisions are keyed, and shown as received.

Two ends are not a canonical page of the decisions given:
- a URL without a decision among them (decided in an earlier scan of the same state): it is the canonical;
- a chain that comes back to where it started, which recrawls can make (A's body is a copy of what B used
  to hold, and B's of what A used to hold): the cycle's smallest URL identity stands as the canonical,
  and the cluster says it is a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from neardup_core.hosts.urls import url_identity
from neardup_core.messages import Decision

DUPLICATE_VERDICTS = ("exact_duplicate", "near_duplicate")


@dataclass(frozen=True, slots=True)
class Cluster:
    """A canonical page and the duplicates whose `duplicate_of` chains end at it."""

    canonical: str
    """The canonical's URL: as its decision received it, or as a `duplicate_of` named it when it has none."""
    decision: Decision | None
    """The canonical's final decision, None when it has none among the decisions given."""
    members: tuple[Decision, ...]
    """The duplicates' final decisions, by URL."""
    cyclic: bool = False
    """The chains go round in a cycle (recrawls); `canonical` is then the cycle's smallest URL."""

    @property
    def size(self) -> int:
        """Pages in the cluster, the canonical included."""
        return len(self.members) + 1


def keep_final(final: dict[str, Decision], decision: Decision) -> None:
    """Folds one decision into `final` (URL identity -> final decision): the highest revision wins, of
    equal ones the later."""
    key = url_identity(decision.url)
    kept = final.get(key)
    if kept is None or decision.revision >= kept.revision:
        final[key] = decision


def final_decisions(decisions: Iterable[Decision]) -> dict[str, Decision]:
    """The final decision per URL identity."""
    final: dict[str, Decision] = {}
    for decision in decisions:
        keep_final(final, decision)
    return final


def clusters(final: dict[str, Decision]) -> list[Cluster]:
    """The clusters of the final decisions (URL identity -> decision), largest first, then by canonical."""
    canonical_of: dict[str, tuple[str, bool]] = {}  # duplicate's identity -> (canonical's identity, cyclic)
    named: dict[str, str] = {}  # identity -> URL as a duplicate_of named it (for canonicals without a decision)
    for start in final:
        if final[start].verdict not in DUPLICATE_VERDICTS:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        at = start
        while True:
            if at in canonical_of:  # joins a chain resolved before
                end, cyclic = canonical_of[at]
                break
            decision = final.get(at)
            if decision is None or decision.verdict not in DUPLICATE_VERDICTS or decision.duplicate_of is None:
                end, cyclic = at, False
                break
            if at in on_path:
                cycle = path[path.index(at):]
                end, cyclic = min(cycle), True
                break
            path.append(at)
            on_path.add(at)
            named.setdefault(url_identity(decision.duplicate_of), decision.duplicate_of)
            at = url_identity(decision.duplicate_of)
        for url in path:
            canonical_of[url] = (end, cyclic)
    members: dict[str, list[Decision]] = {}
    cyclic_ends: set[str] = set()
    for url, (end, cyclic) in canonical_of.items():
        if url != end:
            members.setdefault(end, []).append(final[url])
        if cyclic:
            cyclic_ends.add(end)
    out = [
        Cluster(
            canonical=final[end].url if end in final else named.get(end, end),
            decision=final.get(end),
            members=tuple(sorted(group, key=lambda d: d.url)),
            cyclic=end in cyclic_ends,
        )
        for end, group in members.items()
    ]
    out.sort(key=lambda c: (-c.size, c.canonical))
    return out
