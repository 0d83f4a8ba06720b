"""Clusters from final decisions: chains followed to the canonical, by URL identity, cycles, revisions."""

from __future__ import annotations

from neardup_core.dedup.clusters import clusters, final_decisions
from neardup_core.messages import Decision, Verdict


def decision(url: str, verdict: Verdict = "unique", of: str | None = None, revision: int = 1) -> Decision:
    return Decision(url=url, host="h", verdict=verdict, duplicate_of=of, distance=0 if of else None, simhash=None,
                    text_sha256=None, body_sha256=None, reason="", revision=revision, complete=True,
                    fetched_at="2026-11-03T08:00:00Z", decided_at="2026-11-03T08:00:00Z")


def shape(found: list) -> list[tuple[str, list[str], bool]]:
    return [(c.canonical, [m.url for m in c.members], c.cyclic) for c in found]


def test_chains_end_at_the_canonical_largest_cluster_first() -> None:
    final = final_decisions([
        decision("https://a.example/c"),
        decision("https://a.example/b", "near_duplicate", "https://a.example/c"),
        decision("https://a.example/a", "exact_duplicate", "https://a.example/b"),  # a -> b -> c
        decision("https://z.example/1"),
        decision("https://z.example/2", "exact_duplicate", "https://z.example/1"),
        decision("https://z.example/lonely"),
    ])
    found = clusters(final)
    assert shape(found) == [("https://a.example/c", ["https://a.example/a", "https://a.example/b"], False),
                            ("https://z.example/1", ["https://z.example/2"], False)]
    assert [c.size for c in found] == [3, 2]
    assert found[0].decision is not None and found[0].decision.verdict == "unique"


def test_urls_by_identity_and_shown_as_received() -> None:
    final = final_decisions([
        decision("http://Example.com:80/"),
        decision("http://example.com/copy", "exact_duplicate", "http://example.com"),
    ])
    assert shape(clusters(final)) == [("http://Example.com:80/", ["http://example.com/copy"], False)]


def test_a_canonical_without_a_decision_is_named_by_duplicate_of() -> None:
    final = final_decisions([decision("https://x.example/new", "near_duplicate", "https://x.example/old")])
    (cluster,) = clusters(final)
    assert (cluster.canonical, cluster.decision, cluster.size) == ("https://x.example/old", None, 2)


def test_the_final_decision_is_the_highest_revision() -> None:
    final = final_decisions([
        decision("https://x.example/p"),
        decision("https://x.example/q", "exact_duplicate", "https://x.example/p", revision=2),
        decision("https://x.example/q", revision=1),  # an older revision arriving late does not win
        decision("https://x.example/p", "exact_duplicate", "https://x.example/r", revision=2),
        decision("https://x.example/r"),
    ])
    assert final["https://x.example/q"].revision == 2
    assert shape(clusters(final)) == [("https://x.example/r", ["https://x.example/p", "https://x.example/q"], False)]


def test_a_cycle_of_recrawls_stands_under_its_smallest_url() -> None:
    final = final_decisions([
        decision("https://x.example/b", "exact_duplicate", "https://x.example/a"),
        decision("https://x.example/a", "exact_duplicate", "https://x.example/b"),
        decision("https://x.example/c", "near_duplicate", "https://x.example/b"),
    ])
    (cluster,) = clusters(final)
    assert cluster.cyclic and cluster.canonical == "https://x.example/a"
    assert [m.url for m in cluster.members] == ["https://x.example/b", "https://x.example/c"]
