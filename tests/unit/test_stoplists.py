"""The stoplist word index and its disk cache: built and saved when missing, loaded when valid,
rebuilt when damaged or unwritable, and always the index the stoplists themselves give."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import msgpack
import pytest

from neardup_core.extract import stoplists
from neardup_core.extract.stoplists import build_word_index, stoplist, stoplist_names

Index = dict[str, tuple[str, ...]]


@pytest.fixture(scope="module")
def expected() -> Index:
    return build_word_index()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The index's cache file, in an empty cache directory; the per-process copies start cold."""
    monkeypatch.setenv("NEARDUP_CACHE_DIR", str(tmp_path / "cache"))
    stoplists._word_index.cache_clear()
    stoplists.union_stoplist.cache_clear()
    yield stoplists.index_cache_path()
    stoplists._word_index.cache_clear()
    stoplists.union_stoplist.cache_clear()


def test_the_index_holds_every_list_and_english_words_count_for_english_only(expected: Index) -> None:
    names = stoplist_names()
    english = stoplist("English")
    assert set(expected) == set().union(*(stoplist(name) for name in names))
    assert expected["the"] == ("English",)
    assert "German" in expected["und"]
    for word, holders in list(expected.items())[::997]:
        assert holders == tuple(name for name in names if word in stoplist(name)
                                and (name == "English" or word not in english))


def test_missing_cache_is_built_and_saved(cache: Path, expected: Index) -> None:
    assert not cache.exists()
    assert stoplists._word_index() == expected
    assert stoplists._load_index(cache) == expected
    assert [p.name for p in cache.parent.iterdir()] == [cache.name]  # no temporary file left


def test_valid_cache_is_loaded_not_rebuilt(cache: Path, expected: Index,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    stoplists._word_index()
    stoplists._word_index.cache_clear()

    def fail() -> Index:
        raise AssertionError("rebuilt despite a valid cache")

    monkeypatch.setattr(stoplists, "build_word_index", fail)
    assert stoplists._word_index() == expected
    assert stoplists.union_stoplist() == frozenset(expected)


def _other_names(data: bytes) -> bytes:
    saved = msgpack.unpackb(data)
    saved["names"] = saved["names"][:-1]
    return bytes(msgpack.packb(saved))


def _ids_out_of_range(data: bytes) -> bytes:
    saved = msgpack.unpackb(data)
    saved["holders"] = saved["holders"][:1]
    return bytes(msgpack.packb(saved))


@pytest.mark.parametrize("damage", [
    lambda data: b"",
    lambda data: data[: len(data) // 2],
    lambda data: b"\x00garbage" + data,
    lambda data: bytes(msgpack.packb([1, 2, 3])),
    _other_names,
    _ids_out_of_range,
], ids=["empty", "truncated", "garbage", "not-an-index", "other-stoplists", "ids-out-of-range"])
def test_damaged_cache_is_rebuilt(cache: Path, expected: Index, damage: Callable[[bytes], bytes]) -> None:
    stoplists._word_index()
    stoplists._word_index.cache_clear()
    cache.write_bytes(damage(cache.read_bytes()))
    assert stoplists._load_index(cache) is None
    assert stoplists._word_index() == expected
    assert stoplists._load_index(cache) == expected  # and saved again


def test_unwritable_cache_dir_only_costs_a_rebuild(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     expected: Index) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NEARDUP_CACHE_DIR", str(blocker / "cache"))
    stoplists._word_index.cache_clear()
    try:
        assert stoplists._word_index() == expected
        assert not stoplists.index_cache_path().exists()
    finally:
        stoplists._word_index.cache_clear()


def test_cache_location_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NEARDUP_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert stoplists.cache_dir() == tmp_path / "neardup"
    assert stoplists.index_cache_path().parent == tmp_path / "neardup"
    monkeypatch.setenv("NEARDUP_CACHE_DIR", str(tmp_path / "mine"))
    assert stoplists.cache_dir() == tmp_path / "mine"
