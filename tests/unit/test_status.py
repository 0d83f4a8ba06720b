"""The status page's data and rendering without a worker: quantiles from histogram buckets, reasons
grouped by kind, the recorder's bounds, and the HTML escaping every value from the input."""

from __future__ import annotations

import math

import lxml.html
import pytest

from neardup_core.fingerprint.page import Rejected
from neardup_core.hosts.statistics import HostState
from neardup_core.hosts.tracker import HostTracker
from neardup_core.store.memory import MemoryStore
from streams.web import status, status_html
from streams.web.metrics import PartitionOffsets

INF = math.inf


def test_histogram_quantile_interpolates_within_the_bucket_as_prometheus() -> None:
    buckets = ((0.1, 0.0), (0.5, 10.0), (1.0, 20.0), (INF, 20.0))
    assert status.histogram_quantile(0.5, buckets) == pytest.approx(0.5)  # rank 10: the top of (0.1, 0.5]
    assert status.histogram_quantile(0.25, buckets) == pytest.approx(0.3)  # rank 5: half way through it
    assert status.histogram_quantile(0.75, buckets) == pytest.approx(0.75)
    assert status.histogram_quantile(0.99, ((1.0, 5.0), (INF, 10.0))) == 1.0  # in +Inf: the highest bound
    assert status.histogram_quantile(0.5, ((0.1, 0.0), (INF, 0.0))) is None


@pytest.mark.parametrize(("reason", "kind"), [
    ("'url' is not an absolute http(s) URL: 'ftp://bad.example/x'", "'url' is not an absolute http(s) URL: …"),
    ("body has 200001 bytes, over the cap of 200000 (NEARDUP_MAX_BODY_BYTES)",
     "body has N bytes, over the cap of N (NEARDUP_MAX_BODY_BYTES)"),
    ("record key b'https://a.example/' disagrees with the event's url 'https://b.example/'",
     "record key … disagrees with the event's url …"),
    ("'fetched_at' -5 is outside 1995..2100 (epoch ms -5)", "'fetched_at' N is outside N..N (epoch ms N)"),
    ("event is not UTF-8: 'utf-8' codec can't decode byte 0xff in position 39: invalid start byte",
     "event is not UTF-8: … codec can't decode byte 0xff in position N: invalid start byte"),
])
def test_reason_kind_masks_the_events_values(reason: str, kind: str) -> None:
    assert status.reason_kind(reason) == kind


def test_reasons_and_rejections_are_bounded() -> None:
    rec = status.Recorder()
    for i in range(status.REASONS_KEPT + 30):
        rec.rejected(Rejected(f"reason {'x' * i} with 'value {i}'", "validate"), key=b"k", topic="t", partition=0,
                     offset=i)
    assert len(rec.reasons) == status.REASONS_KEPT + 1
    assert rec.reasons[("validate", status.OTHER_REASONS)] == 30
    assert len(rec.rejections) == status.RECENT_REJECTIONS
    assert rec.rejections[0]["offset"] == status.REASONS_KEPT + 29  # the latest first


def tracker_with(hosts: dict[str, tuple[int, int]]) -> HostTracker:
    """A tracker whose hosts have (pages, same-host duplicates)."""
    store = MemoryStore()
    for host, (pages, dups) in hosts.items():
        store.put(f"c|{host}".encode(), HostState(host, pages=pages, same_host_duplicates=dups).to_bytes())
    return HostTracker(store)


def test_hosts_keep_the_highest_penalties() -> None:
    rec = status.Recorder()
    hosts = {f"h{i}.example": (100, i % 90) for i in range(status.HOSTS_KEPT + 50)}
    tracker = tracker_with(hosts)
    rec.hosts_updated(tracker, hosts, [])
    assert len(rec.hosts) == status.HOSTS_KEPT
    top = rec.top_hosts()
    assert len(top) == status.TOP_HOSTS
    assert [h["penalty"] for h in top] == sorted((h["penalty"] for h in top), reverse=True)
    assert top[0]["same_host_duplicates"] == 89 and top[0]["penalty"] == round(89 / 120, 4)
    kept_low = min(h["penalty"] for h in rec.hosts.values())
    assert kept_low >= sorted(dups / 120 for _, dups in hosts.values())[-status.HOSTS_KEPT] - 1e-4
    # a kept host whose penalty falls is updated, not kept at its old value
    tracker.store.put(b"c|h89.example", HostState("h89.example", pages=1000, same_host_duplicates=1).to_bytes())
    rec.hosts_updated(tracker, ["h89.example"], [])
    assert rec.hosts["h89.example"]["penalty"] == round(1 / 1020, 4)


def test_the_page_escapes_what_came_from_the_input() -> None:
    rec = status.Recorder()
    rec.rejected(Rejected("bad <b>html</b> & 'quotes'", "validate"), key=b"https://x.example/<img src=x>", topic="t",
                 partition=1, offset=2)
    host = "<script>alert(1)</script>.example"
    rec.hosts_updated(tracker_with({host: (40, 30)}), [host], [])
    s = status.gather({}, [PartitionOffsets("t", 0, "source", 10, 7, 6)],
                      worker={"app_id": "<i>app</i>", "design": "d", "k": 3, "ready": True}, recorder=rec)
    page = status_html.render(s)
    doc = lxml.html.fromstring(page)
    assert not doc.xpath("//img | //script | //b | //i")
    text = doc.text_content()
    assert "https://x.example/<img src=x>" in text and host in text and "<i>app</i>" in text
    assert doc.xpath("//td[@data-tp='t:0']")[0].text_content() == "3"
    assert doc.xpath("//meta[@http-equiv='refresh']")[0].get("content") == str(status_html.REFRESH_S)
    assert not doc.xpath("//script | //link[@href] | //*[@src]"), "nothing loaded from elsewhere"
