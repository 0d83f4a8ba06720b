"""Changelogs that compact (issue 21): a crawl, then the same crawl twice more as recrawls whose bodies
change only outside the main text; after each round the bytes compaction keeps in the changelog topics,
the RocksDB size, Kafka's cost of the round, and the recovery time of a worker on an empty disk.

    python bench/bench_changelog.py [--scale 1] [--corpus-limit 150] [--sizes 1,2] [--partitions 4]
                                    [--corpus DIR | --no-corpus] [--results bench/RESULTS.md]

One local broker (`streams.dev.start_broker`), and per crawl size a fresh app on it (its own topic
prefix and app id, `--partitions` partitions) with one worker (`NEARDUP_EXTRACT_PROCESSES=1`). Size k of
`--sizes` is the generated crawl at `k x --scale` (`generate_crawl`, ~343 pages per scale) with `k x
--corpus-limit` real corpus pages (`pages.fetched` events with their manifest URL, raw bytes as
`body_b64`) spread through it; the corpus is read where it lies (`--corpus`, default the shared one) and
skipped with a message when absent.

Round 1 publishes the crawl and waits until every URL has a complete decision for its fetch. Rounds 2
and 3 publish the same events again, `fetched_at` 30 days later per round, each body changed outside
its main text, differently every round: a rotating token in a `<script>` inserted after `<head>`
(`var csrf = "<32 hex>"`) and an ad block (`<div class="ad">` with a few random words) right after
`<body>`. A sample of 100 recrawled events per round is fingerprinted here to check that their main
text digest is that of round 1 (the report says how many were).

After each round:

* the worker is stopped (SIGTERM, a clean shutdown) and its data dir measured: bytes as left (RocksDB
  info logs aside), and a copy of it with every RocksDB (one per table partition) flushed and fully
  compacted: its `.sst` bytes (the "RocksDB size"), live keys and their key+value bytes (Faust's offset
  key and the generation key left out);
* every `{app_id}-*-changelog` topic is read from its low to its high watermark (assigned partitions, no
  group), and what compaction keeps is computed: the last record of each key, its key+value bytes;
  the keys whose last record is a tombstone are counted apart (compaction drops them after
  `delete.retention.ms`); also the key+value bytes of all records in the log (the history, less what
  the cleaner removed), records and distinct keys.
  Headers (the writer generation, a `gen` header of 4-6 bytes per record; 26 bytes before 2026-12-04
  15:30) are left out of both. The changelogs roll
  64 MiB segments in production (`streams.kafka.topics.CHANGELOG_SEGMENT_BYTES`), and Kafka compacts closed
  segments only, so at these sizes nothing would be compacted; the bench sets `--segment-bytes` (1 MiB)
  and `min.cleanable.dirty.ratio` 0.1 on them, and waits `--cleaner-wait` seconds after each round (the
  local broker's cleaner backs off 1 s) so that the recovery reads what a long-running changelog would
  hold: its records left in the log after the cleaner ("records in the log" below);
* Kafka's cost of the round, from the local broker's log segments of the app's topics (`.log` files):
  bytes written during the round and the record batches in them (a produce request carries one or more
  batches, so batches are an upper bound on produce requests); the broker's CPU (its JVM's utime+stime
  from /proc) and the worker's (its process and all its descendants: extraction and index processes)
  from the first publish to the last decision of the round, per page; pages per second = pages / (the
  last decision's record timestamp - the first publish);
* recovery: a worker with a new name (an empty data dir) is started and, at once, one canary page is
  published: a copy of a page the round decided `unique`, at a longer URL on its host, fetched later.
  Recovery time = from starting the worker process to the record timestamp of the canary's complete
  decision; the worker log's Faust lines give start -> "Restore complete!" and the changelog replay
  alone ("Restoring state from changelog topics" -> "Done reading from changelog topics"). The same start ->
  canary time on the fresh app before round 1 (nothing to recover) is the startup floor. The canary
  must be decided a duplicate of the page it copies (the state came from the changelog only); the next
  round runs on this recovered worker.

Report: per size, rows = metrics, columns = round 1, 2, 3 and round 3 / round 1, with the two bars of
issue 21 (round 3 <= 1.3x round 1 for the changelogs' kept bytes and for the RocksDB size; the
changelogs' kept bytes per page <= 2x RocksDB's) pass or fail; the growth per page from the smallest to
the largest size; the kept bytes and RocksDB per table. Appended to `--results` (bench/RESULTS.md) under
"Issue 21: changelogs that compact" with the command line and the code state.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import math
import os
import random
import re
import shutil
import signal
import struct
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from common import DEFAULT_CORPUS, Table, append_results, fmt_bytes, fmt_ratio, say
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from rocksdict import Options, Rdict
from stream_input import Event, corpus_events, crawl_events, interleave
from stream_phase import delete_topics
from stream_procfs import descendants, proc_stat

from neardup_core.fingerprint.page import fingerprint_event
from neardup_core.testing.corpus import has_corpus
from neardup_core.timefmt import rfc3339_to_ms
from streams.dev import Broker, Cluster, ClusterError, start_broker, stop_broker
from streams.state.stores import GENERATION_KEY

ROUNDS = 3
DAY_MS = 86_400_000
RECRAWL_SHIFT_MS = 30 * DAY_MS
TICK_S = os.sysconf("SC_CLK_TCK")
FAUST_OFFSET_KEY = b"__faust\0offset__"
TEXT_CHECK_SAMPLE = 100
AD_WORDS = ("deal", "offer", "save", "cheap", "flights", "insurance", "loans", "mortgage", "casino", "shoes",
            "sale", "discount", "premium", "subscribe", "win", "prize", "vacation", "hotel", "credit", "cars")
HEAD = re.compile(rb"<head\b[^>]*>", re.I)
BODY = re.compile(rb"<body\b[^>]*>", re.I)
LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
RECOVERY_LINES = {"reading": "Restoring state from changelog topics", "read": "Done reading from changelog topics",
                  "restore": "Restore complete!", "ready": "Worker ready"}


# --- the input ----------------------------------------------------------------------------------------


def recrawl_body(body: bytes, rng: random.Random) -> bytes:
    """`body` with a new token in a <script> after <head> and an ad right after <body> (or at the
    start and the end of a page without those tags): changes outside the main text."""
    script = f'<script>var csrf = "{rng.randbytes(16).hex()}";</script>'.encode()
    words = " ".join(rng.choice(AD_WORDS) for _ in range(rng.randint(5, 9)))
    ad = f'<div class="ad">{words}</div>'.encode()
    m = HEAD.search(body)
    body = body[: m.end()] + script + body[m.end():] if m else script + body
    m = BODY.search(body)
    return body[: m.end()] + ad + body[m.end():] if m else body + ad


def recrawl(event: Event, round_no: int, rng: random.Random) -> Event:
    """The event fetched again in round `round_no` (2, 3, ...): later, its body changed outside the text."""
    d = orjson.loads(event.raw)
    if "body_b64" in d:
        d["body_b64"] = base64.b64encode(recrawl_body(base64.b64decode(d["body_b64"]), rng)).decode()
    else:
        d["body"] = recrawl_body(d["body"].encode(), rng).decode()
    fetched = event.fetched_ms + (round_no - 1) * RECRAWL_SHIFT_MS
    d["fetched_at"] = fetched
    return Event(event.url, event.key, orjson.dumps(d), fetched, event.source)


def text_unchanged(first: list[Event], again: list[Event], rng: random.Random) -> tuple[int, int]:
    """(sampled, whose main-text digest is that of round 1) over a sample of the recrawled events."""
    idx = rng.sample(range(len(first)), min(TEXT_CHECK_SAMPLE, len(first)))
    same = 0
    for i in idx:
        a = fingerprint_event(first[i].raw, key=first[i].key)
        b = fingerprint_event(again[i].raw, key=again[i].key)
        same += getattr(a, "text_sha256", None) == getattr(b, "text_sha256", None)
    return len(idx), same


def canary_of(event: Event, tag: str, fetched_ms: int) -> Event:
    """A copy of `event`'s body at a longer URL on its host, fetched at `fetched_ms`: a worse-ranked copy."""
    d = orjson.loads(event.raw)
    scheme, _, rest = event.url.partition("://")
    host = rest.split("/", 1)[0]
    url = f"{scheme}://{host}/canary-{tag}/copy/of/this/page/{uuid.uuid4().hex}"
    d["url"], d["fetched_at"] = url, fetched_ms
    return Event(url, url.encode(), orjson.dumps(d), fetched_ms, "canary")


# --- reading decisions ---------------------------------------------------------------------------------


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Partition -> high watermark; retried while the topic is new and its partitions have no leader yet."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}"})
    try:
        for attempt in range(60):
            try:
                meta = consumer.list_topics(topic, timeout=20).topics[topic]
                return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1]
                        for p in meta.partitions}
            except KafkaException:
                if attempt == 59:
                    raise
                time.sleep(0.5)
        raise AssertionError("unreachable")
    finally:
        consumer.close()


def wait_decided(cluster: Cluster, start: dict[int, int], want: dict[str, int], timeout_s: float
                 ) -> dict[str, tuple[dict, int]]:
    """Reads dedup.decisions from `start` (partition -> offset) until every URL of `want` has a complete
    decision for its fetch (`fetched_at` ms); URL -> (that decision, its record timestamp)."""
    topic = cluster.topic("dedup.decisions")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    got: dict[str, tuple[dict, int]] = {}
    try:
        consumer.assign([TopicPartition(topic, p, o) for p, o in start.items()])
        deadline = time.monotonic() + timeout_s
        while len(got) < len(want):
            if time.monotonic() > deadline:
                missing = sorted(set(want) - set(got))
                raise ClusterError(f"{len(missing)} of {len(want)} URLs without a complete decision after "
                                   f"{timeout_s:.0f} s, e.g. {missing[:3]}\n{cluster.log_tail(30)}")
            for msg in consumer.consume(1000, timeout=0.2):
                if msg.error() is not None or msg.value() is None:
                    continue
                d = orjson.loads(msg.value())
                url = d["url"]
                if (url in want and url not in got and d["complete"]
                        and rfc3339_to_ms(d["fetched_at"]) == want[url]):
                    got[url] = (d, msg.timestamp()[1])
            cluster.check_alive()
    finally:
        consumer.close()
    return got


def publish(bootstrap: str, topic: str, events: list[Event]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "message.max.bytes": 20_000_000})
    for e in events:
        while True:
            try:
                producer.produce(topic, value=e.raw, key=e.key)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    if producer.flush(120):
        raise ClusterError(f"events still undelivered to {topic} 120 s after the last produce")


# --- measuring -----------------------------------------------------------------------------------------


@dataclass
class Changelog:
    """One changelog topic read from start to end."""

    records: int = 0
    history: int = 0  # key+value bytes of every record
    keys: int = 0
    kept: int = 0  # key+value bytes of each key's last record, when that is not a tombstone
    kept_keys: int = 0
    tombstones: int = 0  # keys whose last record is a tombstone
    tombstone_bytes: int = 0
    header_bytes: int = 0
    kept_header_bytes: int = 0  # the headers of the records compaction keeps


def read_changelogs(bootstrap: str, app_id: str) -> dict[str, Changelog]:
    """Table name -> what its changelog holds and what compaction would keep of it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    out: dict[str, Changelog] = {}
    try:
        topics = consumer.list_topics(timeout=20).topics
        names = sorted(t for t in topics if t.startswith(f"{app_id}-") and t.endswith("-changelog"))
        for name in names:
            table = name[len(app_id) + 1: -len("-changelog")]
            cl = out[table] = Changelog()
            last: dict[bytes, tuple[int | None, int]] = {}  # key -> its last record's value and header bytes
            todo: dict[int, int] = {}  # partition -> its high watermark
            for p in topics[name].partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(name, p), timeout=20)
                if high > low:
                    todo[p] = high
            consumer.assign([TopicPartition(name, p, OFFSET_BEGINNING) for p in todo])
            while todo:
                for msg in consumer.consume(5000, timeout=1.0):
                    p = msg.partition()
                    if msg.error() is not None:
                        if msg.error().code() == KafkaError._PARTITION_EOF:
                            todo.pop(p, None)
                        continue
                    key, value = msg.key() or b"", msg.value()
                    cl.records += 1
                    cl.history += len(key) + len(value or b"")
                    headers = sum(len(k) + len(v or b"") for k, v in msg.headers() or [])
                    cl.header_bytes += headers
                    last[p.to_bytes(4, "big") + key] = (None if value is None else len(value), headers)
                    if p in todo and msg.offset() >= todo[p] - 1:
                        todo.pop(p)
            consumer.unassign()
            cl.keys = len(last)
            for key, (size, headers) in last.items():
                cl.kept_header_bytes += headers
                if size is None:
                    cl.tombstones += 1
                    cl.tombstone_bytes += len(key) - 4
                else:
                    cl.kept_keys += 1
                    cl.kept += len(key) - 4 + size
    finally:
        consumer.close()
    return out


@dataclass
class Rocks:
    """One table's RocksDBs (all partitions) in a stopped worker's data dir."""

    as_left: int = 0
    sst: int = 0  # after a full compaction of a copy
    keys: int = 0
    live: int = 0  # key+value bytes of the live keys


DB_DIR = re.compile(r"(.+)-(\d+)\.db$")


def measure_rocks(data: Path, scratch: Path) -> dict[str, Rocks]:
    """Table name -> its RocksDBs in `data` (a stopped worker's data dir), measured on a compacted copy."""
    out: dict[str, Rocks] = defaultdict(Rocks)
    for current in data.rglob("CURRENT"):
        db_dir = current.parent
        m = DB_DIR.match(db_dir.name)
        r = out[m.group(1) if m else db_dir.name]
        r.as_left += sum(p.stat().st_size for p in db_dir.rglob("*") if p.is_file() and not p.name.startswith("LOG"))
        copy = scratch / "rocks-copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(db_dir, copy)
        db = Rdict(str(copy), options=Options(raw_mode=True))
        db.flush()
        db.compact_range(None, None)
        it = db.iter()
        it.seek_to_first()
        while it.valid():
            key = it.key()
            if key not in (FAUST_OFFSET_KEY, GENERATION_KEY):
                r.keys += 1
                r.live += len(key) + len(it.value())
            it.next()
        del it
        db.close()
        r.sst += sum(p.stat().st_size for p in copy.rglob("*.sst"))
        shutil.rmtree(copy)
    return dict(out)


def topic_group(topic: str, cluster: Cluster) -> str:
    if topic.endswith("-changelog"):
        return "changelogs"
    if topic == cluster.topic("pages.fetched"):
        return "input"
    if topic.startswith(cluster.topic("neardup.")):
        return "internal"
    if topic.startswith(cluster.topic_prefix):
        return "outputs"
    return "faust"


def broker_logs(broker: Broker, cluster: Cluster) -> dict[str, tuple[int, int, int]]:
    """Group of topics (input, internal, changelogs, outputs, faust) -> (.log bytes, record batches,
    records) of the app's topics in the local broker's log dirs."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    assert broker.dir is not None
    part = re.compile(r"(.+)-(\d+)$")
    for d in broker.dir.rglob("*"):
        m = part.match(d.name)
        if not m or not d.is_dir():
            continue
        topic = m.group(1)
        if not (topic.startswith(cluster.topic_prefix) or topic.startswith(f"{cluster.app_id}-")):
            continue
        acc = out[topic_group(topic, cluster)]
        for log in d.glob("*.log"):
            size = log.stat().st_size
            acc[0] += size
            with log.open("rb") as fh:
                pos = 0
                while pos + 61 <= size:  # a v2 batch: baseOffset 8, length 4, ..., records count at 57
                    fh.seek(pos)
                    head = fh.read(61)
                    (length,) = struct.unpack(">i", head[8:12])
                    if length <= 0:
                        break
                    acc[1] += 1
                    acc[2] += struct.unpack(">i", head[57:61])[0]
                    pos += 12 + length
    return {g: (v[0], v[1], v[2]) for g, v in out.items()}


def ticks(pid: int | None) -> dict[int, int]:
    """CPU ticks (utime+stime) of a process and of each of its descendants."""
    if pid is None:
        return {}
    out = {}
    for p in [pid, *descendants(pid)]:
        st = proc_stat(p)
        if st is not None:
            out[p] = st[1]
    return out


def cpu_s(before: dict[int, int], after: dict[int, int]) -> float:
    return sum(t - before.get(p, 0) for p, t in after.items()) / TICK_S


def log_times(log: Path, t0: float) -> dict[str, float]:
    """Seconds from `t0` (epoch) to the first worker log line of each of `RECOVERY_LINES`."""
    out: dict[str, float] = {}
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        m = LOG_TIME.match(line)
        if not m:
            continue
        for name, text in RECOVERY_LINES.items():
            if name not in out and text in line:
                at = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                out[name] = at - t0
    return out


# --- one size ------------------------------------------------------------------------------------------


@dataclass
class Recovery:
    seconds: float
    log: dict[str, float]
    verdict: str
    as_expected: bool


@dataclass
class RoundResult:
    pages: int
    seconds: float
    worker_cpu_s: float
    broker_cpu_s: float
    kafka: dict[str, tuple[int, int, int]]  # group -> (bytes, batches, records) written in the round
    changelogs: dict[str, Changelog]
    rocks: dict[str, Rocks]
    text_checked: tuple[int, int]
    verdicts: dict[str, int] = field(default_factory=dict)  # verdict -> URLs, of the round's decisions
    recovery: Recovery | None = None


@dataclass
class SizeResult:
    label: str
    pages: int
    urls: int
    corpus_pages: int
    startup: Recovery | None = None
    rounds: list[RoundResult] = field(default_factory=list)
    segment_bytes: int = 0


def recover(cluster: Cluster, name: str, canary: Event, expect_of: str | None, timeout_s: float) -> Recovery:
    """Starts worker `name` on an empty data dir, publishes the canary at once, and times its decision."""
    t0 = time.time()
    cluster.start_worker(name)
    start = end_offsets(cluster.bootstrap, cluster.topic("dedup.decisions"))
    publish(cluster.bootstrap, cluster.topic("pages.fetched"), [canary])
    got = wait_decided(cluster, start, {canary.url: canary.fetched_ms}, timeout_s)
    decision, ts = got[canary.url]
    ok = expect_of is None or (decision["verdict"] in ("exact_duplicate", "near_duplicate")
                               and decision["duplicate_of"] == expect_of)
    return Recovery(ts / 1000 - t0, log_times(cluster.logs[name], t0), decision["verdict"], ok)


def compact_sooner(cluster: Cluster, segment_bytes: int) -> None:
    """The app's changelog topics with smaller segments and a lower dirty ratio, so the cleaner reaches
    them at a bench's size (the module docstring says why)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    names = [t for t in admin.list_topics(timeout=30).topics if t.startswith(f"{cluster.app_id}-")
             and t.endswith("-changelog")]
    entries = [ConfigEntry("segment.bytes", str(segment_bytes), incremental_operation=AlterConfigOpType.SET),
               ConfigEntry("min.cleanable.dirty.ratio", "0.1", incremental_operation=AlterConfigOpType.SET)]
    futures = admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, n,
                                                              incremental_configs=entries) for n in names])
    for future in futures.values():
        future.result()


def run_size(broker: Broker, label: str, events: list[Event], partitions: int, root: Path, seed: int,
             timeout_s: float, segment_bytes: int = 1 << 20, cleaner_wait_s: float = 15.0) -> SizeResult:
    rng = random.Random(seed)
    rounds = [events] + [[recrawl(e, r, rng) for e in events] for r in range(2, ROUNDS + 1)]
    urls = {e.url for e in events}
    result = SizeResult(label, len(events), len(urls), sum(e.source == "corpus" for e in events),
                        segment_bytes=segment_bytes)
    checks = [(0, 0)] + [text_unchanged(events, rounds[r], rng) for r in range(1, ROUNDS)]
    prefix = f"chl-{label.replace(' ', '')}-{uuid.uuid4().hex[:6]}"
    cluster = Cluster(broker.bootstrap, prefix, root / prefix, partitions,
                      worker_env={"NEARDUP_EXTRACT_PROCESSES": "1"}, log_level="info")
    later = max(e.fetched_ms for e in rounds[-1]) + DAY_MS
    try:
        cluster.create_topics()
        if segment_bytes:
            compact_sooner(cluster, segment_bytes)
        # the startup floor: the same start -> canary decided on the fresh app, nothing to recover
        floor_page = next((e for e in events if e.source == "corpus"), events[0])
        result.startup = recover(cluster, "w0", canary_of(floor_page, "w0", later), None, timeout_s)
        say(f"{label}: startup floor {result.startup.seconds:.1f} s (log {result.startup.log})")
        worker = "w0"
        for r, round_events in enumerate(rounds, start=1):
            cluster.wait_balanced(stable_s=2.0)
            want = {e.url: e.fetched_ms for e in round_events}  # each URL's last fetch of the round
            pid = cluster.workers[worker].pid
            start = end_offsets(cluster.bootstrap, cluster.topic("dedup.decisions"))
            logs0, w0, b0 = broker_logs(broker, cluster), ticks(pid), ticks(broker.pid)
            t0 = time.time()
            publish(cluster.bootstrap, cluster.topic("pages.fetched"), round_events)
            got = wait_decided(cluster, start, want, timeout_s)
            w1, b1 = ticks(pid), ticks(broker.pid)
            logs1 = broker_logs(broker, cluster)
            last_ts = max(ts for _, ts in got.values()) / 1000
            kafka = {g: tuple(a - b for a, b in zip(v, logs0.get(g, (0, 0, 0)), strict=True))
                     for g, v in logs1.items()}
            say(f"{label}, round {r}: {len(round_events)} pages decided in {last_ts - t0:.1f} s")
            cluster.kill_worker(worker, signal.SIGTERM)
            time.sleep(cleaner_wait_s if segment_bytes else 0.0)
            rocks = measure_rocks(cluster.workdir / f"data-{worker}", root)
            changelogs = read_changelogs(cluster.bootstrap, cluster.app_id)
            res = RoundResult(len(round_events), last_ts - t0, cpu_s(w0, w1), cpu_s(b0, b1),
                              kafka, changelogs, rocks, checks[r - 1],  # type: ignore[arg-type]
                              dict(Counter(d["verdict"] for d, _ in got.values())))
            result.rounds.append(res)
            unique = next((u for u, (d, _) in got.items() if d["verdict"] == "unique"
                           and next(e for e in round_events if e.url == u).source == "corpus"), None)
            unique = unique or next((u for u, (d, _) in got.items() if d["verdict"] == "unique"), None)
            source = next(e for e in round_events if e.url == unique) if unique else round_events[0]
            worker = f"w{r}"
            res.recovery = recover(cluster, worker, canary_of(source, worker, later + r * 1000), unique, timeout_s)
            say(f"{label}, round {r}: kept {fmt_bytes(sum(c.kept for c in changelogs.values()))}, "
                f"RocksDB {fmt_bytes(sum(x.sst for x in rocks.values()))}, recovery {res.recovery.seconds:.1f} s "
                f"(log {res.recovery.log}), canary {res.recovery.verdict}")
    finally:
        cluster.stop_all()
        delete_topics(cluster)
    return result


# --- the report ----------------------------------------------------------------------------------------


def total(d: dict, attr: str) -> int:
    return sum(getattr(v, attr) for v in d.values())


def per_page_metrics(r: RoundResult, n: int) -> dict[str, float]:
    kafka_bytes = sum(v[0] for v in r.kafka.values())
    kafka_batches = sum(v[1] for v in r.kafka.values())
    kept, sst = total(r.changelogs, "kept"), total(r.rocks, "sst")
    out = {
        "changelog kept bytes per page": kept / n,
        "changelog tombstones kept (keys) per page": total(r.changelogs, "tombstones") / n,
        "changelog bytes in the log per page": total(r.changelogs, "history") / n,
        "changelog records in the log per page": total(r.changelogs, "records") / n,
        "changelog distinct keys per page": total(r.changelogs, "keys") / n,
        "RocksDB size per page (compacted copy, .sst)": sst / n,
        "RocksDB as left per page": total(r.rocks, "as_left") / n,
        "RocksDB live key+value bytes per page": total(r.rocks, "live") / n,
        "RocksDB live keys per page": total(r.rocks, "keys") / n,
        "kept / RocksDB size": kept / sst if sst else math.nan,
        "kept / RocksDB live key+value": kept / total(r.rocks, "live") if total(r.rocks, "live") else math.nan,
        "Kafka bytes written in the round per page, all topics": kafka_bytes / r.pages,
        "of which changelogs": r.kafka.get("changelogs", (0, 0, 0))[0] / r.pages,
        "record batches per page (>= produce requests)": kafka_batches / r.pages,
        "broker CPU ms per page": r.broker_cpu_s * 1000 / r.pages,
        "worker CPU ms per page (all its processes)": r.worker_cpu_s * 1000 / r.pages,
        "pages per second": r.pages / r.seconds,
    }
    if r.recovery is not None:
        out["recovery of an empty-disk worker, s (start -> canary decided)"] = r.recovery.seconds
        log = r.recovery.log
        out["of which to Faust's 'Restore complete!', s"] = log.get("restore", math.nan)
        reading = log.get("read", math.nan) - log.get("reading", math.nan)
        out["of which reading the changelogs, s ('Restoring state' -> 'Done reading')"] = reading
        out["changelog records replayed per second of that"] = total(r.changelogs, "records") / reading
    return out


BYTES_ROWS = {"changelog kept bytes per page", "changelog bytes in the log per page",
              "RocksDB size per page (compacted copy, .sst)", "RocksDB as left per page",
              "RocksDB live key+value bytes per page",
              "Kafka bytes written in the round per page, all topics", "of which changelogs"}
RATIO_ROWS = {"kept / RocksDB size", "kept / RocksDB live key+value"}


def fmt_metric(name: str, x: float) -> str:
    if x != x:
        return "n/a"
    if name in BYTES_ROWS:
        return fmt_bytes(x)
    if name in RATIO_ROWS:
        return fmt_ratio(x)
    return f"{x:,.1f}" if abs(x) >= 10 else f"{x:.2f}"


def size_table(s: SizeResult) -> tuple[Table, list[str]]:
    n = s.pages
    metrics = [per_page_metrics(r, n) for r in s.rounds]
    cols = ["metric"] + [f"round {i + 1}" for i in range(len(s.rounds))] + ["round 3 / round 1"]
    table = Table(f"{s.label}: {n:,} pages per round ({s.urls:,} URLs, {s.corpus_pages} of them real corpus "
                  f"pages), one worker", cols)
    for name in metrics[0]:
        vals = [m.get(name, math.nan) for m in metrics]
        ratio = vals[-1] / vals[0] if vals[0] else math.nan
        table.add(name, *(fmt_metric(name, v) for v in vals), fmt_ratio(ratio))
    table.add("canary decided as a duplicate of its page (after recovery)",
              *("yes" if r.recovery and r.recovery.as_expected else f"no ({r.recovery.verdict if r.recovery else '-'})"
                for r in s.rounds), "")
    kinds = ("unique", "exact_duplicate", "near_duplicate", "skipped")
    table.add("decisions of the round: unique / exact / near duplicate / skipped",
              *(" / ".join(str(r.verdicts.get(k, 0)) for k in kinds) for r in s.rounds), "")
    table.add("recrawled main text unchanged (sample)", "",
              *(f"{r.text_checked[1]}/{r.text_checked[0]}" for r in s.rounds[1:]), "")
    first, last = metrics[0], metrics[-1]
    kept_growth = last["changelog kept bytes per page"] / first["changelog kept bytes per page"]
    rocks_growth = (last["RocksDB size per page (compacted copy, .sst)"]
                    / first["RocksDB size per page (compacted copy, .sst)"])
    bars = [
        f"bar: changelog kept bytes, round 3 <= 1.3x round 1: {kept_growth:.2f}x, "
        f"**{'pass' if kept_growth <= 1.3 else 'fail'}**",
        f"bar: RocksDB size, round 3 <= 1.3x round 1: {rocks_growth:.2f}x, "
        f"**{'pass' if rocks_growth <= 1.3 else 'fail'}**",
    ]
    for i, m in enumerate(metrics):
        ratio = m["kept / RocksDB size"]
        bars.append(f"bar: changelog kept bytes per page <= 2x RocksDB's, round {i + 1}: {ratio:.2f}x, "
                    f"**{'pass' if ratio <= 2 else 'fail'}** (against live key+value bytes: "
                    f"{m['kept / RocksDB live key+value']:.2f}x)")
    table.notes.append("compaction cleans closed segments only: this run's changelogs rolled "
                       f"{fmt_bytes(s.segment_bytes) if s.segment_bytes else '64 MiB (the topics own)'} segments, "
                       "and the cleaner had the seconds of --cleaner-wait after each round; 'in the log' is what "
                       "the recovery read, 'kept' what compaction keeps in the end")
    if s.startup is not None:
        table.notes.append(f"startup floor (start -> canary decided on the fresh app, nothing to recover): "
                           f"{s.startup.seconds:.1f} s; to 'Restore complete!' "
                           f"{s.startup.log.get('restore', math.nan):.1f} s")
    headers = [(total(r.changelogs, "kept_header_bytes") / n, total(r.changelogs, "header_bytes") / n)
               for r in s.rounds]
    table.notes.append("changelog record headers (the writer generation), not counted above, per page, of the "
                       "records compaction keeps / of all records: "
                       + ", ".join(f"round {i + 1} {fmt_bytes(a)} / {fmt_bytes(b)}"
                                   for i, (a, b) in enumerate(headers)))
    for i, r in enumerate(s.rounds):
        groups = ", ".join(f"{g} {fmt_bytes(v[0] / r.pages)} / {v[1] / r.pages:.2f} batches / "
                           f"{v[2] / r.pages:.1f} records" for g, v in sorted(r.kafka.items()))
        table.notes.append(f"round {i + 1}, Kafka written per page by topic group: {groups}; "
                           f"{r.seconds:.1f} s, worker CPU {r.worker_cpu_s:.1f} s, broker CPU {r.broker_cpu_s:.1f} s")
    return table, bars


def tables_table(s: SizeResult) -> Table:
    cols = ["table", *[f"kept, round {i + 1}" for i in range(len(s.rounds))], "kept r3 / r1",
            *[f"RocksDB, round {i + 1}" for i in range(len(s.rounds))], "RocksDB r3 / r1",
            "records r3", "keys per page r1 / r2 / r3", "tombstones r3", "RocksDB keys r3"]
    table = Table(f"{s.label}: per table, per page (changelog kept key+value bytes; RocksDB .sst after "
                  f"compaction)", cols)
    names = sorted(set().union(*(r.changelogs for r in s.rounds), *(r.rocks for r in s.rounds)))
    n = s.pages
    for name in names:
        kept = [r.changelogs.get(name, Changelog()).kept / n for r in s.rounds]
        sst = [r.rocks.get(name, Rocks()).sst / n for r in s.rounds]
        last_cl, last_rocks = s.rounds[-1].changelogs.get(name, Changelog()), s.rounds[-1].rocks.get(name, Rocks())
        table.add(name, *(fmt_bytes(k) for k in kept), fmt_ratio(kept[-1] / kept[0] if kept[0] else math.nan),
                  *(fmt_bytes(x) for x in sst), fmt_ratio(sst[-1] / sst[0] if sst[0] else math.nan),
                  f"{last_cl.records:,}",
                  " / ".join(f"{r.changelogs.get(name, Changelog()).keys / n:.1f}" for r in s.rounds),
                  f"{last_cl.tombstones:,}", f"{last_rocks.keys:,}")
    return table


def growth_table(small: SizeResult, large: SizeResult) -> Table:
    """Per metric, per page at the two sizes, and the growth: large / small per page, and x in total ~ n^x."""
    table = Table(f"growth with the crawl size: {small.pages:,} -> {large.pages:,} pages "
                  f"({large.pages / small.pages:.2f}x)",
                  ["metric", "round", small.label, large.label, "per page, large / small", "total ~ n^x"])
    grow = math.log(large.pages / small.pages)
    for r in (0, len(large.rounds) - 1):
        a, b = per_page_metrics(small.rounds[r], small.pages), per_page_metrics(large.rounds[r], large.pages)
        for name in a:
            if name in RATIO_ROWS or name in ("pages per second", "changelog records replayed per second of that"):
                continue
            ratio = b[name] / a[name] if a[name] else math.nan
            # recovery seconds are totals, not per page
            is_total = name.startswith(("recovery", "of which to Faust", "of which reading"))
            exponent = (math.log(ratio) / grow if is_total else 1 + math.log(ratio) / grow) if ratio > 0 else math.nan
            table.add(name, str(r + 1), fmt_metric(name, a[name]), fmt_metric(name, b[name]),
                      fmt_ratio(ratio) if not is_total else f"{ratio:.2f}x (total)", f"{exponent:.2f}")
    table.notes.append("total ~ n^x: 1.00 is linear in the crawl size (constant per page); recovery seconds are "
                       "totals, so their x is taken on them directly")
    return table


# --- main ----------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=1, help="generated crawl scale at size 1 (~343 pages)")
    parser.add_argument("--corpus-limit", type=int, default=150, help="real corpus pages at size 1")
    parser.add_argument("--sizes", default="1,2", help="crawl sizes as multiples of --scale and --corpus-limit")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--no-corpus", action="store_true")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a round's decisions")
    parser.add_argument("--segment-bytes", type=int, default=1 << 20,
                        help="segment.bytes of the changelogs in this bench (0: the topics' own, 64 MiB)")
    parser.add_argument("--cleaner-wait", type=float, default=15.0,
                        help="seconds to let the log cleaner run after each round")
    parser.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "RESULTS.md")
    parser.add_argument("--note", action="append", default=[], help="a line for the results section (repeatable)")
    args = parser.parse_args()
    started = time.perf_counter()
    sizes = [int(x) for x in args.sizes.split(",")]
    if not args.no_corpus and not has_corpus(args.corpus):
        say(f"no corpus at {args.corpus} (MANIFEST.jsonl and pages/): running on the generated crawl only")
    inputs = {}
    for k in sizes:
        crawl = crawl_events(args.seed, args.scale * k)
        real = [] if args.no_corpus else corpus_events(args.corpus, args.corpus_limit * k)
        inputs[k] = interleave(crawl, real)
        say(f"size {k}: {len(crawl)} generated + {len(real)} corpus events")
    results: list[SizeResult] = []
    with tempfile.TemporaryDirectory(prefix="bench-changelog-") as tmp:
        root = Path(tmp)
        broker = start_broker(root / "kafka", config={"file.delete.delay.ms": "0"})
        say(f"broker at {broker.bootstrap} (pid {broker.pid})")
        try:
            for k in sizes:
                results.append(run_size(broker, f"size {k}", inputs[k], args.partitions, root, args.seed + k,
                                        args.timeout, segment_bytes=args.segment_bytes,
                                        cleaner_wait_s=args.cleaner_wait))
        finally:
            stop_broker(root / "kafka")
    tables, notes = [], []
    for s in reversed(results):  # the largest first
        table, bars = size_table(s)
        table.print()
        for b in bars:
            print(f"  {s.label}: {b}")
        tables.append(table)
        notes += [f"- {s.label}: {b}" for b in bars]
    if len(results) > 1:
        g = growth_table(results[0], results[-1])
        g.print()
        tables.append(g)
    t = tables_table(results[-1])
    t.print()
    tables.append(t)
    notes.append("- broker CPU: the first size's round 1 includes the broker JVM's warm-up (its first topics and "
                 "clients in this run)")
    notes += [f"- {n}" for n in args.note]
    append_results(args.results, "Issue 21: changelogs that compact", tables, notes=notes, started=started)


if __name__ == "__main__":
    sys.exit(main())
