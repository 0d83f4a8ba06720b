"""The settings a state is built with (`neardup_core.settings.state_settings`): which differences make a
worker refuse to join its app id's state (and `scan` refuse a state dir), which are free to differ, the
refusal line, and which record of the settings topic is the state's (the first of the app id)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from neardup_core.dedup.engine import META_FILE, StateMismatch, open_state
from neardup_core.settings import CoreSettings, Difference, state_differences, state_settings
from streams.kafka.admin import first_record, own_record, refusal
from streams.settings import Settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("NEARDUP_"):
            monkeypatch.delenv(name)


def line(state: Settings, own: Settings) -> str | None:
    """The refusal of a worker with `own` settings joining a state recorded by one with `state`."""
    return refusal(own.app_id, own_record(state), own_record(own))


@pytest.mark.parametrize(("changed", "named"), [
    ({"k": 4}, "the table design is k3-b5-t10-l20x4-j75 in the state, k4-b6-t15-l20x4-j75 here"),
    ({"expected_pages": 1000}, "NEARDUP_EXPECTED_PAGES 1000000 there, 1000 here"),
    ({"tables": "k3-b6"}, "NEARDUP_TABLES auto there, k3-b6 here"),
    ({"minhash": False}, "NEARDUP_MINHASH True there, False here"),
    ({"bands": 16}, "NEARDUP_BANDS 20 there, 16 here"),
    ({"rows": 5}, "NEARDUP_ROWS 4 there, 5 here"),
    ({"jaccard": 0.8}, "NEARDUP_JACCARD 0.75 there, 0.8 here"),
    ({"shingle_size": 3}, "NEARDUP_SHINGLE_SIZE is 2 in the state, 3 here"),
    ({"min_features": 4}, "NEARDUP_MIN_FEATURES is 8 in the state, 4 here"),
])
def test_a_setting_that_changes_the_index_or_the_fingerprints_is_refused(changed: dict[str, Any],
                                                                          named: str) -> None:
    refused = line(Settings(app_id="crawl"), Settings(app_id="crawl", **changed))
    assert refused is not None and named in refused, refused
    assert refused.startswith("refusing to start: app id 'crawl' holds a state built with other settings: ")
    assert "NEARDUP_APP_ID" in refused and "\n" not in refused


def test_k_is_named_with_the_design_it_changes() -> None:
    refused = line(Settings(), Settings(k=4))
    assert refused is not None and "NEARDUP_K is 3 in the state, 4 here" in refused


@pytest.mark.parametrize("free", [
    {"web_port": 7077}, {"data_dir": Path("/elsewhere")}, {"extract_processes": 7}, {"index_processes": 0},
    {"extract_nice": 0}, {"scan_nice": 5}, {"index_cache_mb": 256}, {"batch_max": 2000}, {"batch_wait_s": 1.0},
    {"hop_wait_s": 0.5},
    {"tick_interval_s": 1.0}, {"session_timeout_s": 20.0}, {"group_instance_id": "pod-3"}, {"partitions": 16},
    {"max_body_bytes": 1000}, {"decision_timeout_s": 120.0}, {"retention_days": 30.0}, {"host_window_s": 60},
    {"broker": "kafka.example:9093"}, {"topic_prefix": "crawl1."},
    {"expected_pages": 2_000_000},  # the same design (k3-b5-t10) as the default 10^6
])
def test_what_only_acts_on_the_pages_as_they_come_is_free_to_differ(free: dict[str, Any]) -> None:
    assert line(Settings(), Settings(**free)) is None
    assert state_settings(Settings(**free).core) == state_settings(Settings().core)


def test_the_same_settings_agree() -> None:
    assert line(Settings(k=4, bands=10), Settings(k=4, bands=10)) is None


def test_every_difference_is_named_on_one_line() -> None:
    refused = line(Settings(), Settings(shingle_size=3, min_features=4, jaccard=0.8))
    assert refused is not None
    assert [part.split(" ")[0] for part in refused.split(": ", 2)[2].split("; ")] == [
        "the", "NEARDUP_SHINGLE_SIZE", "NEARDUP_MIN_FEATURES"]


def test_a_setting_the_record_lacks_is_not_compared() -> None:
    own = state_settings(CoreSettings(shingle_size=3))
    assert state_differences({"k": 3, "design": own["design"]}, own) == []
    assert state_differences({"k": 3, "design": "k3-b4-t4"}, own) == [Difference("design", "k3-b4-t4", own["design"])]


def record(app_id: str, k: int) -> bytes:
    return json.dumps(own_record(Settings(app_id=app_id, k=k))).encode()


def test_the_first_record_of_the_app_id_is_the_state_s() -> None:
    records = [(b"other", record("other", 5)), (b"crawl", b"not json"), (b"crawl", b'{"settings": 3}'),
               (None, record("crawl", 6)), (b"crawl", None), (b"crawl", record("crawl", 4)),
               (b"crawl", record("crawl", 3))]
    first = first_record(records, "crawl")
    assert first is not None and first["settings"]["k"] == 4
    assert first_record(records[:5], "crawl") is None
    assert first_record([], "crawl") is None


def test_scan_refuses_a_state_dir_of_other_settings(tmp_path: Path) -> None:
    for store in open_state(tmp_path, CoreSettings()):
        store.close()  # type: ignore[attr-defined]
    assert json.loads((tmp_path / META_FILE).read_text()) == state_settings(CoreSettings())
    with pytest.raises(StateMismatch) as raised:
        open_state(tmp_path, CoreSettings(shingle_size=3))
    assert raised.value.differences == [Difference("shingle_size", 2, 3)]
    assert "shingle_size 2 there, 3 here" in str(raised.value)
    for store in open_state(tmp_path, CoreSettings(retention_ms=1000, decision_timeout_ms=5)):
        store.close()  # type: ignore[attr-defined]


def test_scan_continues_a_state_dir_that_recorded_only_k_and_the_design(tmp_path: Path) -> None:
    (tmp_path / META_FILE).write_text(json.dumps({"k": 3, "design": CoreSettings().design.name}))
    for store in open_state(tmp_path, CoreSettings(min_features=4)):
        store.close()  # type: ignore[attr-defined]
    with pytest.raises(StateMismatch):
        open_state(tmp_path, CoreSettings(k=4))
