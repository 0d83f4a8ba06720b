"""The layout's rules, checked on the source: no import circle between the modules of `streams` and
`neardup_core`, `neardup_core` free of Kafka and Faust, no module of `streams` over 500 lines, and the
deprecated `streams.scrapy_loop` path still giving the middlewares (with a warning)."""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("streams", "neardup_core")
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported(path: Path, name: str, known: set[str]) -> set[str]:
    """The project modules `path` imports anywhere in its code (functions too: a late import still closes a
    circle), but not under `if TYPE_CHECKING:`. `from a.b import c` is the module `a.b.c` when there is one."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imported(path, name, known) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    edges = graph()
    assert len(edges) > 100, "the project's modules were not found"
    assert "streams.state.commit" in edges["streams.agents.base"]
    assert cycles(edges) == []


def test_the_core_imports_no_stream_engine() -> None:
    for name, path in modules().items():
        if not name.startswith("neardup_core"):
            continue
        roots = {alias.split(".")[0] for alias in imported_names(path)}
        assert not roots & {"faust", "aiokafka", "confluent_kafka", "streams"}, name


def imported_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_stream_module_over_500_lines() -> None:
    long = {name: n for name, path in modules().items() if name.startswith("streams")
            and (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_old_scrapy_loop_path_warns_and_gives_the_same_middlewares() -> None:
    pytest.importorskip("scrapy")
    import streams.scrapy as scrapy_package

    sys.modules.pop("streams.scrapy_loop", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = importlib.import_module("streams.scrapy_loop")
    assert any(issubclass(w.category, DeprecationWarning) and "streams.scrapy.NeardupFrontier" in str(w.message)
               for w in caught)
    assert old.NeardupFrontier is scrapy_package.NeardupFrontier
    assert old.NeardupItems is scrapy_package.NeardupItems
