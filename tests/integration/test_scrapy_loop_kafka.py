"""The loop in Kafka mode: a real Scrapy crawl of the test site publishes its pages to the test broker
(`NeardupPublisher`), a worker decides them, and the crawl's frontier and items middlewares read the decisions
and host signals back from `dedup.decisions` and `frontier.host-signals` (a consumer on its own thread). Against
a plain crawl of the same site, with the loop's defaults: fewer fetches, every distinct main text reached, at
most 1% of the items emitted duplicates.

How much it saves depends on how soon the decisions and signals come back (the worker's batches and ticks): the
table printed (`pytest -s`) is measured, and the savings asserted are the issue's bars."""

from __future__ import annotations

from pathlib import Path

from streams.dev import Cluster
from tests.functional.test_scrapy_loop_crawl import copies
from tests.integration.site_crawl import run_crawl, savings_table


def test_a_kafka_mode_crawl_reads_decisions_and_signals_back_and_fetches_less(pipeline: Cluster,
                                                                              tmp_path: Path) -> None:
    pipeline.start_worker("a")
    pipeline.wait_balanced(["a"])
    plain = run_crawl("plain", tmp_path, label="plain Scrapy")
    kafka = run_crawl("kafka", tmp_path, label="kafka, defaults", broker=pipeline.bootstrap,
                      topic_prefix=pipeline.topic_prefix)
    print("\n" + savings_table([plain, kafka]))
    stats = kafka.stats
    print({k: v for k, v in sorted(stats.items()) if k.startswith("neardup/")})
    assert stats["finish_reason"] == "finished"
    assert stats["neardup/produced"] == stats["neardup/delivered"] > 0, stats
    assert "neardup/delivery_errors" not in stats, stats
    assert "neardup/items_undecided" not in stats, "every item's page had its decision back in time"
    assert kafka.missed == set(), "every distinct main text of the site is still reached"
    assert kafka.trap_fetched <= 0.6 * plain.trap_fetched, (kafka.trap_fetched, plain.trap_fetched)
    assert kafka.fetched <= 0.8 * plain.fetched, (kafka.fetched, plain.fetched)
    assert stats["neardup/items_dropped"] > 0 and stats["neardup/links_dropped"] > 0, stats
    assert kafka.duplicate_items <= 0.01 * len(kafka.items), copies(kafka)
