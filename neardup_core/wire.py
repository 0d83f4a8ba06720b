"""One positional codec for every message that crosses partitions and every record of state built from them.

A dataclass deriving from `Positional` (a NamedTuple: marked `@positional()`) gets `to_list()` and
`from_list(data)` made from its own fields, in their order: the class is the schema, and its encoding
is written once, here, for all of them. A value is the list of its fields' values; fields at the end
that hold their default are left out (a reader that knows a later field takes its default when it is
absent), so a message of an older format, which lacked the later fields, is read as it is, and the
format version that every record carries (`streams.kafka.records.VERSION`) tells the formats apart.
`keep` fields at the start are always written (the format fixed their places before a later field had
a default). A field is encoded by its type:

- a positional class, optional or not, or a tuple or list of one: their lists;
- a tuple of plain values: a list (read back as a tuple);
- a field named in `base64`: its bytes as base64 text (the format of the JSON-era `Fetch`);
- anything else (str, int, float, bool, bytes, None, a list of plain values) as it is, for msgpack or JSON.

The two methods are generated once per class, on first use, as plain code (no loop over fields per
call): the index step encodes and decodes tens of them per page.
"""

from __future__ import annotations

import base64 as b64
import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, Self, TypeVar

T = TypeVar("T")

POSITIONAL = "__positional__"
_MISSING = object()


class _Factory:
    """A field's default made by a factory (a dataclass's `default_factory`)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


class Positional:
    """A dataclass that is a positional message (the module's docstring): `class Fetch(Positional, keep=8,
    base64=("minhash", "minima"))`. Its `to_list` and `from_list` are made on first use."""

    __slots__ = ()

    def __init_subclass__(cls, *, keep: int = 0, base64: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if POSITIONAL not in cls.__dict__ or keep or base64:  # `dataclass(slots=True)` makes the class again
            setattr(cls, POSITIONAL, (keep, base64))

    def to_list(self) -> list[Any]:
        _compile(type(self))
        return self.to_list()

    @classmethod
    def from_list(cls, data: list[Any]) -> Self:
        _compile(cls)
        return cls.from_list(data)


def positional(*, keep: int = 0, base64: tuple[str, ...] = ()) -> Callable[[type[T]], type[T]]:
    """`Positional` for a NamedTuple, which can have no other base: its body defines `to_list` and
    `from_list` as `positional_to_list(self)` and `positional_from_list(cls, data)`, which the code made
    here replaces on first use."""

    def mark(cls: type[T]) -> type[T]:
        setattr(cls, POSITIONAL, (keep, base64))
        return cls

    return mark


def positional_to_list(message: Any) -> list[Any]:
    _compile(type(message))
    return message.to_list()  # type: ignore[no-any-return]


def positional_from_list(cls: type[T], data: list[Any]) -> T:
    _compile(cls)
    return cls.from_list(data)  # type: ignore[attr-defined,no-any-return]


def is_positional(cls: Any) -> bool:
    return isinstance(cls, type) and hasattr(cls, POSITIONAL)


def _fields(cls: type[Any]) -> list[tuple[str, Any]]:
    """The class's fields and their defaults (`_MISSING`: none; a `_Factory`: made by it)."""
    if dataclasses.is_dataclass(cls):
        out: list[tuple[str, Any]] = []
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out.append((f.name, f.default))
            elif f.default_factory is not dataclasses.MISSING:
                out.append((f.name, _Factory(f.default_factory)))
            else:
                out.append((f.name, _MISSING))
        return out
    defaults: dict[str, Any] = getattr(cls, "_field_defaults", {})
    return [(name, defaults.get(name, _MISSING)) for name in cls._fields]  # type: ignore[attr-defined]


def _inner(hint: Any) -> tuple[str, Any]:
    """What a field's type asks of the codec: ("plain", None), ("one", C), ("many", (C, as_tuple)) or
    ("tuple", None) for a tuple of plain values."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _inner(args[0]) if len(args) == 1 else ("plain", None)
    if is_positional(hint):
        return "one", hint
    if origin in (tuple, list) and args and is_positional(args[0]):
        return "many", (args[0], origin is tuple)
    if origin is tuple:
        return "tuple", None
    return "plain", None


def _compile(cls: type[Any]) -> None:
    """Generate and install the class's `to_list` and `from_list` (the module's docstring)."""
    keep, base64_fields = getattr(cls, POSITIONAL)
    hints = typing.get_type_hints(cls)
    fields = _fields(cls)
    env: dict[str, Any] = {"b64encode": b64.b64encode, "b64decode": b64.b64decode}
    encode: list[str] = []
    decode: list[str] = []
    plain = True
    for i, (name, default) in enumerate(fields):
        value, raw = f"self.{name}", f"data[{i}]"
        kind, what = _inner(hints[name])
        optional = type(None) in typing.get_args(hints[name])
        if name in base64_fields:
            enc = f"(None if {value} is None else b64encode({value}).decode('ascii'))"
            dec = f"(None if {raw} is None else b64decode({raw}))"
        elif kind == "one":
            env[f"C{i}"] = what
            enc = f"(None if {value} is None else {value}.to_list())" if optional else f"{value}.to_list()"
            dec = f"(C{i}.from_list({raw}) if {raw} else None)" if optional else f"C{i}.from_list({raw})"
        elif kind == "many":
            env[f"C{i}"], as_tuple = what
            enc = f"[x.to_list() for x in {value}]"
            dec = f"{'tuple' if as_tuple else 'list'}(C{i}.from_list(x) for x in {raw})"
        elif kind == "tuple":
            enc, dec = f"list({value})", f"tuple({raw})"
        else:
            enc, dec = value, raw
        plain = plain and kind == "plain" and name not in base64_fields
        if default is not _MISSING:
            env[f"D{i}"] = default.make if isinstance(default, _Factory) else default
            if i >= keep:
                dec = f"({dec} if n > {i} else {_default(default, i)})"
        encode.append(enc)
        decode.append(dec)
    # to_list: the longest prefix whose last field is not at its default, never shorter than `keep` and
    # the fields without a default
    required = max([keep, *[i + 1 for i, (_, d) in enumerate(fields) if d is _MISSING]])
    lines = ["def to_list(self):"]
    for last in range(len(fields) - 1, required - 1, -1):
        name, default = fields[last]
        lines.append(f"    if self.{name} != {_default(default, last)}:")
        lines.append(f"        return [{', '.join(encode[:last + 1])}]")
    lines.append(f"    return [{', '.join(encode[:required])}]")
    lines.append("def from_list(cls, data):")
    if plain:  # every field as it is: the absent ones take the class's own defaults
        lines.append("    return cls(*data)")
    else:
        lines.append("    n = len(data)")
        lines.append(f"    return cls({', '.join(decode)})")
    exec("\n".join(lines), env)  # noqa: S102 (code made here from the class's own field names)
    cls.to_list = env["to_list"]
    cls.from_list = classmethod(env["from_list"])


def _default(default: Any, i: int) -> str:
    """The generated code's expression for field `i`'s default (`D{i}` in its namespace)."""
    return f"D{i}()" if isinstance(default, _Factory) else f"D{i}"
