"""Settings are checked when built: every invalid NEARDUP_* value is refused with the variable's name, its
value and what is allowed; the defaults are valid; the settings reference (docs/settings.md) lists every variable with
the code's default."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from neardup_core.settings import CoreSettings, SettingError
from streams.settings import Settings, env_name, is_set, load

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("NEARDUP_"):
            monkeypatch.delenv(name)


def test_the_defaults_are_valid() -> None:
    settings = load()
    assert settings.core == CoreSettings()
    assert settings.shingle_size == 2 and settings.k == 3 and settings.batch_max == 256
    CoreSettings(k=0)
    CoreSettings(k=32)


def test_an_empty_variable_means_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NEARDUP_SHINGLE_SIZE", "NEARDUP_BROKER", "NEARDUP_BATCH_WAIT_S", "NEARDUP_APP_ID"):
        monkeypatch.setenv(name, "")
    assert load() == Settings()


def test_a_retired_variable_is_refused_with_what_replaced_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUP_INDEX_PROCESS", "0")
    with pytest.raises(SettingError) as caught:
        load()
    assert caught.value.name == "NEARDUP_INDEX_PROCESS" and "NEARDUP_INDEX_PROCESSES" in str(caught.value)


VALID = [
    ("NEARDUP_SHINGLE_SIZE", "1"), ("NEARDUP_SHINGLE_SIZE", "16"), ("NEARDUP_K", "0"), ("NEARDUP_K", "7"),
    ("NEARDUP_EXTRACT_PROCESSES", "0"), ("NEARDUP_PARTITIONS", "0"), ("NEARDUP_EXTRACT_NICE", "0"),
    ("NEARDUP_EXTRACT_NICE", "19"), ("NEARDUP_SCAN_NICE", "0"), ("NEARDUP_SCAN_NICE", "19"),
    ("NEARDUP_INDEX_PROCESSES", "0"), ("NEARDUP_INDEX_PROCESSES", "4"),
    ("NEARDUP_BATCH_WAIT_S", "0.01"),
    ("NEARDUP_SESSION_TIMEOUT_S", "6"), ("NEARDUP_STALL_CHECK_S", "0"), ("NEARDUP_STALL_CHECK_S", "1"),
    ("NEARDUP_FAULT_DROP_FETCHED", "pages.fetched:1:37,x:0:0"), ("NEARDUP_BROKER", "a:1,b.example:9092,[::1]:9093"),
    ("NEARDUP_TABLES", "k3-b6"), ("NEARDUP_TOPIC_PREFIX", "crawl1."), ("NEARDUP_DECISION_TIMEOUT_S", "0.5"),
    ("NEARDUP_SECURITY_PROTOCOL", "sasl_ssl"), ("NEARDUP_SASL_MECHANISM", "SCRAM-SHA-512"),
    ("NEARDUP_MAX_URL_BYTES", "256"), ("NEARDUP_MAX_URL_BYTES", "122952"),
    ("NEARDUP_MAX_MESSAGE_BYTES", "65536"), ("NEARDUP_MAX_MESSAGE_BYTES", "983616"),
]


@pytest.mark.parametrize(("name", "value"), VALID)
def test_values_in_range_are_accepted(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    load()


INVALID = [
    ("NEARDUP_SHINGLE_SIZE", "0"), ("NEARDUP_SHINGLE_SIZE", "-2"), ("NEARDUP_SHINGLE_SIZE", "17"),
    ("NEARDUP_SHINGLE_SIZE", "two"), ("NEARDUP_SHINGLE_SIZE", "2.5"),
    ("NEARDUP_K", "-1"), ("NEARDUP_K", "33"), ("NEARDUP_K", "x"),
    ("NEARDUP_TABLES", "k4-b6"), ("NEARDUP_TABLES", "fast"), ("NEARDUP_TABLES", "k3-b99"),
    ("NEARDUP_EXPECTED_PAGES", "0"),
    ("NEARDUP_MIN_FEATURES", "0"), ("NEARDUP_MIN_FEATURES", "-8"),
    ("NEARDUP_MAX_BODY_BYTES", "0"), ("NEARDUP_MAX_BODY_BYTES", "-1"), ("NEARDUP_MAX_BODY_BYTES", "5MB"),
    ("NEARDUP_MAX_BODY_BYTES", str(2 << 30)),
    ("NEARDUP_MAX_URL_BYTES", "255"), ("NEARDUP_MAX_URL_BYTES", "0"), ("NEARDUP_MAX_URL_BYTES", "-1"),
    ("NEARDUP_MAX_URL_BYTES", "8k"), ("NEARDUP_MAX_URL_BYTES", "122953"), ("NEARDUP_MAX_URL_BYTES", str(1 << 20)),
    ("NEARDUP_MAX_MESSAGE_BYTES", "65535"), ("NEARDUP_MAX_MESSAGE_BYTES", "1000000"),
    ("NEARDUP_MAX_MESSAGE_BYTES", "1e6"), ("NEARDUP_MAX_MESSAGE_BYTES", "0"),
    ("NEARDUP_DECISION_TIMEOUT_S", "0"), ("NEARDUP_DECISION_TIMEOUT_S", "-5"), ("NEARDUP_DECISION_TIMEOUT_S", "nan"),
    ("NEARDUP_DECISION_TIMEOUT_S", "inf"), ("NEARDUP_DECISION_TIMEOUT_S", "1e9"), ("NEARDUP_DECISION_TIMEOUT_S", "30s"),
    ("NEARDUP_HOST_WINDOW_S", "0"), ("NEARDUP_HOST_WINDOW_S", "-3600"),
    ("NEARDUP_TICK_INTERVAL_S", "0"), ("NEARDUP_TICK_INTERVAL_S", "-1"),
    ("NEARDUP_BATCH_MAX", "0"), ("NEARDUP_BATCH_MAX", "-256"), ("NEARDUP_BATCH_MAX", "1000000"),
    ("NEARDUP_BATCH_WAIT_S", "0"), ("NEARDUP_BATCH_WAIT_S", "-0.2"), ("NEARDUP_BATCH_WAIT_S", "61"),
    ("NEARDUP_EXTRACT_PROCESSES", "-1"), ("NEARDUP_EXTRACT_PROCESSES", "1000"),
    ("NEARDUP_EXTRACT_NICE", "-1"), ("NEARDUP_EXTRACT_NICE", "20"), ("NEARDUP_SCAN_NICE", "-1"),
    ("NEARDUP_SCAN_NICE", "20"), ("NEARDUP_SCAN_NICE", "low"), ("NEARDUP_INDEX_PROCESSES", "-1"),
    ("NEARDUP_INDEX_PROCESSES", "65"), ("NEARDUP_INDEX_PROCESSES", "on"),
    ("NEARDUP_SESSION_TIMEOUT_S", "0"), ("NEARDUP_SESSION_TIMEOUT_S", "5"), ("NEARDUP_SESSION_TIMEOUT_S", "3600"),
    ("NEARDUP_STALL_CHECK_S", "0.5"), ("NEARDUP_STALL_CHECK_S", "-1"),
    ("NEARDUP_FAULT_DROP_FETCHED", "pages.fetched:1"),
    ("NEARDUP_WEB_PORT", "0"), ("NEARDUP_WEB_PORT", "65536"), ("NEARDUP_WEB_PORT", "http"),
    ("NEARDUP_PARTITIONS", "-1"), ("NEARDUP_PARTITIONS", "100000"),
    ("NEARDUP_INDEX_CACHE_MB", "0"), ("NEARDUP_INDEX_CACHE_MB", "-32"),
    ("NEARDUP_BROKER", "localhost"), ("NEARDUP_BROKER", "a:9092,,b:9092"), ("NEARDUP_BROKER", "a:0"),
    ("NEARDUP_BROKER", "kafka://a:9092"), ("NEARDUP_BROKER", "a:99999"),
    ("NEARDUP_TOPIC_PREFIX", "crawl 1/"), ("NEARDUP_APP_ID", "my app"),
    ("NEARDUP_GROUP_INSTANCE_ID", "pod 0"),
    ("NEARDUP_SECURITY_PROTOCOL", "TLS"), ("NEARDUP_SASL_MECHANISM", "KERBEROS"),
    ("NEARDUP_SSL_CAFILE", "/nonexistent/ca.pem"),
]


@pytest.mark.parametrize(("name", "value"), INVALID)
def test_an_invalid_value_is_refused_with_the_variable_its_value_and_the_rule(
        monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingError) as caught:
        load()
    message = str(caught.value)
    assert caught.value.name == name
    assert message.startswith(f"{name}=")
    assert value in message  # the value as given (or as parsed: "0" for 0, "0.0" for 0.0 contain it)
    assert re.search(r"must|design|k=", message), message  # says what is allowed


def test_every_setting_has_one_variable() -> None:
    names = [env_name(f.name) for f in dataclasses.fields(Settings)]
    assert len(set(names)) == len(names)
    assert all(n.startswith("NEARDUP_") for n in names)


CORE_INVALID = [
    ("k", -1), ("k", 33), ("k", "3"), ("k", True), ("shingle_size", 0), ("shingle_size", -1), ("shingle_size", 2.0),
    ("min_features", 0), ("expected_pages", 0), ("max_body_bytes", 0), ("decision_timeout_ms", 0),
    ("host_window_s", 0), ("tables", "nope"), ("tables", "k4-b6"), ("tables", None),
    ("max_url_bytes", 255), ("max_url_bytes", 122_953), ("max_url_bytes", 8192.0), ("max_url_bytes", True),
    ("max_message_bytes", 65_535), ("max_message_bytes", 1_000_000), ("max_message_bytes", "983616"),
]


@pytest.mark.parametrize(("name", "value"), CORE_INVALID)
def test_core_settings_refuse_invalid_values_naming_the_field(name: str, value: object) -> None:
    with pytest.raises(SettingError) as caught:
        CoreSettings(**{name: value})  # type: ignore[arg-type]
    assert caught.value.name == name
    assert isinstance(caught.value, ValueError)  # what callers catching ValueError before still catch


def test_the_url_cap_is_at_most_an_eighth_of_the_message_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decision holds its URL four times: a URL cap the message limit cannot carry is refused,
    naming the URL variable, its value, the bound the message limit sets and why."""
    monkeypatch.setenv("NEARDUP_MAX_MESSAGE_BYTES", "65536")
    assert load().core.max_url_bytes == 8192
    monkeypatch.setenv("NEARDUP_MAX_URL_BYTES", "8193")
    with pytest.raises(SettingError) as caught:
        load()
    assert str(caught.value) == ("NEARDUP_MAX_URL_BYTES=8193: must be an integer from 256 to 8192, an eighth of the "
                                 "message limit (NEARDUP_MAX_MESSAGE_BYTES): a decision holds its URL four times")


def test_the_message_limit_refuses_more_than_the_producer_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUP_MAX_MESSAGE_BYTES", "1000000")
    with pytest.raises(SettingError) as caught:
        load()
    assert str(caught.value) == "NEARDUP_MAX_MESSAGE_BYTES=1000000: must be an integer from 65536 to 983616"


def test_a_settings_object_built_in_code_is_checked_too() -> None:
    with pytest.raises(SettingError, match="NEARDUP_SHINGLE_SIZE=0"):
        Settings(shingle_size=0)
    with pytest.raises(SettingError, match="NEARDUP_BATCH_MAX"):
        dataclasses.replace(Settings(), batch_max=0)


def _readme_settings() -> dict[str, str]:
    """Each variable of the settings reference's table (`docs/settings.md`) and its default cell."""
    text = (ROOT / "docs" / "settings.md").read_text()
    section = text.split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        if line.startswith("| `NEARDUP_"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            for name in re.findall(r"`(NEARDUP_[A-Z_]+)`", cells[0]):
                rows[name] = cells[1]
    return rows


def test_the_readme_table_lists_every_variable_with_its_default() -> None:
    rows = _readme_settings()
    defaults = Settings()
    for f in dataclasses.fields(Settings):
        name = env_name(f.name)
        assert name in rows, f"{name} is missing from the settings table of docs/settings.md"
        cell = rows[name]
        value = getattr(defaults, f.name)
        if isinstance(value, int | float) and cell.startswith("`") and f.name != "extract_processes":
            assert float(cell.strip("`")) == value, f"docs/settings.md default of {name}: {cell}, code: {value}"
        elif isinstance(value, str) and value and cell.startswith("`"):
            assert cell.strip("`") == value, f"docs/settings.md default of {name}: {cell}, code: {value}"


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_cache_dir_that_can_never_be_a_directory_is_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    value = str(blocker if where == "a file" else blocker / "cache")
    monkeypatch.setenv("NEARDUP_CACHE_DIR", value)
    with pytest.raises(SettingError) as caught:
        load()
    assert caught.value.name == "NEARDUP_CACHE_DIR"
    assert str(caught.value).startswith(f"NEARDUP_CACHE_DIR={value}: must be a directory")


@pytest.mark.parametrize("where", ["a directory", "not there yet", "a symlink to a directory"])
def test_a_cache_dir_that_is_or_can_become_a_directory_is_accepted_and_not_created(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    path = {"a directory": tmp_path / "dir", "not there yet": tmp_path / "new" / "cache",
            "a symlink to a directory": tmp_path / "link"}[where]
    monkeypatch.setenv("NEARDUP_CACHE_DIR", str(path))
    load()
    assert not (tmp_path / "new").exists()  # checking it writes nothing; the stoplists cache creates it when it saves


_READS_ENV = re.compile(r"""(?:environ\.get|getenv)\(\s*["'](NEARDUP_[A-Z_]+)|environ\[\s*["'](NEARDUP_[A-Z_]+)"""
                        r"""|["'](NEARDUP_[A-Z_]+)["']\s+(?:not\s+)?in\s+os\.environ""")
# the one variable read elsewhere: every extraction process (and a program embedding the core) needs it
# without streams' settings; streams/settings.py checks it
_READ_ELSEWHERE = {("NEARDUP_CACHE_DIR", "neardup_core/extract/stoplists.py")}


def test_the_settings_of_the_readme_table_are_read_from_the_environment_only_by_the_settings_module() -> None:
    """Every NEARDUP_* variable of the settings table is read (and so checked) in streams/settings.py,
    not straight from os.environ elsewhere, where an invalid value would get past the checks."""
    documented = set(_readme_settings())
    readers = []
    for path in sorted([*(ROOT / "neardup_core").rglob("*.py"), *(ROOT / "streams").rglob("*.py")]):
        relative = path.relative_to(ROOT).as_posix()
        if relative == "streams/settings.py":
            continue
        for match in _READS_ENV.finditer(path.read_text()):
            name = next(group for group in match.groups() if group)
            if name in documented and (name, relative) not in _READ_ELSEWHERE:
                readers.append(f"{relative} reads {name}")
    assert readers == []


def test_is_set_tells_a_variable_set_from_one_left_to_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not is_set("broker")
    for blank in ("", "  "):
        monkeypatch.setenv("NEARDUP_BROKER", blank)
        assert not is_set("broker")
    monkeypatch.setenv("NEARDUP_BROKER", "kafka1:9092")
    assert is_set("broker") and load().broker == "kafka1:9092"
