"""Learning URL normalisation rules per host from dedup decisions.

A rule says "this part of a URL does not change the content on this host", e.g. the query parameter
`sid`. It is learned from pairs of URLs of one host (exact hostname):

- duplicate evidence: pairs known to have the same content, namely a duplicate and the page it
  duplicates (`duplicate_of`), and two duplicates of the same page (siblings, from a bounded sample);
- distinct evidence: pairs of unique pages that the rule would merge, from a bounded sample of unique
  pages grouped by a coarse form of their path.

For a pair, every part that differs and that a rule kind would erase gets the evidence:

- `ignore_query_param` (param = name): the parameter's values differ, or it is present in one URL only.
  Duplicate pairs count for every differing parameter, whatever their paths; distinct pairs only when
  both pages have the same path, each of the k differing parameters getting 1/k (one of them, not all,
  changes the content).
- path kinds, when the two paths become equal under all path normalisations and differ without this
  one: `strip_path_param` (param = a matrix parameter such as `jsessionid`), `strip_index_file`
  (param = the file, e.g. `index.html`), `lowercase_path`, `ignore_path_segment` (param = a path template
  such as `/calendar/{date}`: segments that differ are of one noise class, `{date}`, `{hex}`, `{num}` or
  `{token}`; word-like segments such as article slugs never qualify) and `trailing_slash`. Distinct pairs
  count here only when their queries are equal, split 1/k the same way.

A rule's support is its number of duplicate pairs; its confidence is smoothed towards doubt by a prior
of one distinct pair: `confidence = dup / (dup + distinct + prior)`, prior 1. `rules_for` returns the
rules with support >= 3 and confidence >= 0.8.

Decisions are a changelog, so `learn` takes the URL's previous decision too and first takes back what
that one contributed (a page revised from unique to duplicate leaves the unique sample and its distinct
evidence against the pages still sampled is subtracted). Memory per host is bounded: at most
`max_candidates` rule candidates (the weakest evicted), `max_groups` sample groups (least recently used
evicted) of `group_size` URLs each (oldest replaced). Evidence against evicted samples is not taken back,
so after evictions the counts are approximate; they stay non-negative.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from neardup_core.hosts.urls import host_of, path_segments, query_params, split_matrix, without_query_params
from neardup_core.messages import Decision, UrlRule

INDEX_FILES = ("index.html", "index.htm", "index.php", "index.asp", "index.aspx", "default.aspx",
               "default.asp", "index.jsp")

_HEX = re.compile(r"[0-9a-fA-F]{12,}")
_DIGITS = re.compile(r"[0-9]+")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,}")
_DATE = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})")
_PLACEHOLDER = re.compile(r"\{(date|hex|num|token)\}")


@dataclass(frozen=True, slots=True)
class RulePolicy:
    """The knobs of rule learning."""

    min_support: int = 3
    min_confidence: float = 0.8
    prior: float = 1.0
    """Pseudo-count of distinct evidence in the confidence."""
    max_candidates: int = 64
    max_groups: int = 128
    group_size: int = 4


DEFAULT_RULE_POLICY = RulePolicy()


@dataclass(frozen=True, slots=True)
class RuleState:
    """What was learned about one host. Serialisable; treat as immutable (`learn` returns a new one).

    `candidates` maps "kind param" to [duplicate evidence, distinct evidence, example URL];
    `groups` maps a sample-group key to URLs: "u <coarse path>" holds unique pages,
    "d <url>" holds duplicates of that URL.
    """

    host: str
    candidates: dict[str, list[Any]] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "candidates": self.candidates, "groups": self.groups}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RuleState:
        return cls(host=data["host"], candidates={k: list(v) for k, v in data["candidates"].items()},
                   groups={k: list(v) for k, v in data["groups"].items()})

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_bytes(cls, raw: bytes) -> RuleState:
        return cls.from_dict(orjson.loads(raw))


def learn(state: RuleState | None, previous: Decision | None, new: Decision,
          policy: RulePolicy = DEFAULT_RULE_POLICY) -> RuleState:
    """The host's rule state after `new`, given the URL's previous decision (or None)."""
    state = state if state is not None else RuleState(host=new.host)
    if previous is not None and (new.revision < previous.revision or _same_evidence(previous, new)):
        return state
    work = RuleState(state.host, {k: list(v) for k, v in state.candidates.items()},
                     {k: list(v) for k, v in state.groups.items()})
    if previous is not None:
        _record(work, previous, -1, policy)
    _record(work, new, +1, policy)
    return work


def evidence(state: RuleState, kind: str, param: str | None = None) -> tuple[float, float]:
    """(duplicate evidence, distinct evidence) gathered so far for one candidate rule."""
    entry = state.candidates.get(f"{kind} {param or ''}")
    return (entry[0], entry[1]) if entry else (0.0, 0.0)


def rules_for(state: RuleState | None, policy: RulePolicy = DEFAULT_RULE_POLICY) -> list[UrlRule]:
    """The rules the evidence supports, strongest first."""
    if state is None:
        return []
    rules = []
    for key, (dup, distinct, example) in state.candidates.items():
        support = round(dup)
        confidence = dup / (dup + distinct + policy.prior) if dup > 0 else 0.0
        if support >= policy.min_support and confidence >= policy.min_confidence:
            kind, _, param = key.partition(" ")
            rules.append(UrlRule(kind=kind, param=param or None, support=support, confidence=confidence,
                                 example=example or None))
    return sorted(rules, key=lambda r: (-r.support, r.kind, r.param or ""))


def apply_rules(url: str, rules: Iterable[UrlRule | dict[str, Any]]) -> str:
    """The URL normalised by the rules: a key for the frontier's seen-set, not always a fetchable URL
    (an ignored path segment becomes its placeholder, e.g. `/calendar/{date}`)."""
    by_kind: dict[str, set[str]] = {}
    for rule in rules:
        if isinstance(rule, UrlRule):
            kind, param = rule.kind, rule.param
        else:
            kind, param = rule["kind"], rule.get("param")
        by_kind.setdefault(kind, set()).add(param or "")
    url = without_query_params(url, by_kind.get("ignore_query_param", ()))
    parts = urlsplit(url)
    path = parts.path or "/"
    if "strip_path_param" in by_kind:
        path = _strip_matrix(path, by_kind["strip_path_param"])
    if "strip_index_file" in by_kind:
        path = _strip_index(path, by_kind["strip_index_file"])
    if "lowercase_path" in by_kind:
        path = path.lower()
    for template in sorted(by_kind.get("ignore_path_segment", ())):
        path = _fill_template(path, template)
    if "trailing_slash" in by_kind and len(path) > 1:
        path = path.rstrip("/") or "/"
    return urlunsplit(parts._replace(path=path))


def noise_class(segment: str) -> str | None:
    """The noise class of a path segment ("date", "hex", "num", "token") or None for a word-like one
    such as an article slug."""
    date = _DATE.fullmatch(segment)
    if date and 1990 <= int(date[1]) <= 2099 and 1 <= int(date[2]) <= 12 and 1 <= int(date[3]) <= 31:
        return "date"
    if _DIGITS.fullmatch(segment):
        return "num"
    if _HEX.fullmatch(segment) and any(c.isdigit() for c in segment):
        return "hex"
    if _TOKEN.fullmatch(segment) and sum(c.isdigit() for c in segment) >= 3 \
            and not any(part.isalpha() and len(part) >= 3 for part in re.split(r"[-_]", segment)):
        return "token"  # random-looking: digits among letters, no word-like part as in a slug
    return None


def _same_evidence(previous: Decision, new: Decision) -> bool:
    return (previous.url, previous.verdict, previous.duplicate_of) == (new.url, new.verdict, new.duplicate_of)


def _record(state: RuleState, decision: Decision, sign: int, policy: RulePolicy) -> None:
    """Adds (sign +1) or takes back (sign -1) the evidence of one decision, and its place in the samples."""
    url = decision.url
    if decision.verdict == "unique":
        key = "u " + _coarse_path(urlsplit(url).path)
        for other in _members(state, key, url, sign, policy):
            _credit(state, _pair_evidence(url, other, duplicate=False), sign, url, policy)
    elif decision.verdict in ("exact_duplicate", "near_duplicate") and decision.duplicate_of is not None:
        canonical = decision.duplicate_of
        if host_of(canonical) != host_of(url) or canonical == url:
            return
        _credit(state, _pair_evidence(url, canonical, duplicate=True), sign, url, policy)
        for other in _members(state, "d " + canonical, url, sign, policy):
            _credit(state, _pair_evidence(url, other, duplicate=True), sign, url, policy)


def _members(state: RuleState, key: str, url: str, sign: int, policy: RulePolicy) -> list[str]:
    """The other URLs of a sample group, after adding `url` to it (sign +1) or removing it (sign -1).
    Removing a URL that is no longer sampled returns none: its pairs with later members were never
    counted."""
    if sign < 0 and url not in state.groups.get(key, ()):
        return []
    others = [m for m in state.groups.pop(key, []) if m != url]
    members = [*others, url][-policy.group_size:] if sign > 0 else others
    if members:
        state.groups[key] = members  # re-inserted last: the dict order is least recently used first
        while len(state.groups) > policy.max_groups:
            del state.groups[next(iter(state.groups))]
    return others


def _credit(state: RuleState, evidence: list[tuple[str, float, bool]], sign: int, example: str,
            policy: RulePolicy) -> None:
    for key, weight, duplicate in evidence:
        entry = state.candidates.get(key)
        if entry is None:
            if sign < 0:
                continue
            entry = state.candidates[key] = [0.0, 0.0, ""]
            _evict(state, policy)
        slot = 0 if duplicate else 1
        entry[slot] = max(0.0, entry[slot] + sign * weight)
        if duplicate and sign > 0 and not entry[2]:
            entry[2] = example


def _evict(state: RuleState, policy: RulePolicy) -> None:
    while len(state.candidates) > policy.max_candidates:
        weakest = min(state.candidates, key=lambda k: state.candidates[k][0] + state.candidates[k][1])
        del state.candidates[weakest]


def _pair_evidence(a: str, b: str, *, duplicate: bool) -> list[tuple[str, float, bool]]:
    """(candidate key, weight, is duplicate evidence) for each rule that would erase a difference."""
    out: list[tuple[str, float, bool]] = []
    path_a, path_b = urlsplit(a).path or "/", urlsplit(b).path or "/"
    query_a, query_b = query_params(a), query_params(b)
    if duplicate or path_a == path_b:
        differing = sorted(n for n in query_a.keys() | query_b.keys() if query_a.get(n) != query_b.get(n))
        for name in differing:
            out.append((f"ignore_query_param {name}", 1.0 if duplicate else 1.0 / len(differing), duplicate))
    if path_a != path_b and (duplicate or query_a == query_b):
        needed = _path_rules(path_a, path_b)
        for key in needed:
            out.append((key, 1.0 if duplicate else 1.0 / len(needed), duplicate))
    return out


def _path_rules(a: str, b: str) -> list[str]:
    """Candidate keys of the path normalisations that are each needed to make two paths equal."""
    steps = ("matrix", "index", "lower", "segment", "slash")
    if _normal_path(a, steps) != _normal_path(b, steps):
        return []
    keys: list[str] = []
    for step in steps:
        rest = tuple(s for s in steps if s != step)
        if _normal_path(a, rest) == _normal_path(b, rest):
            continue
        if step == "matrix":
            params_a, params_b = _matrix_params(a), _matrix_params(b)
            keys += [f"strip_path_param {n}" for n in sorted(params_a.keys() | params_b.keys())
                     if params_a.get(n) != params_b.get(n)]
        elif step == "index":
            files = {_index_file(a) or "", _index_file(b) or ""} - {""}
            keys += [f"strip_index_file {f}" for f in sorted(files)]
        elif step == "lower":
            keys.append("lowercase_path ")
        elif step == "segment":
            keys.append("ignore_path_segment " + _template(a, b))
        else:
            keys.append("trailing_slash ")
    return keys


def _normal_path(path: str, steps: Sequence[str]) -> str:
    if "matrix" in steps:
        path = _strip_matrix(path, None)
    if "index" in steps:
        path = _strip_index(path, None)
    if "lower" in steps:
        path = path.lower()
    if "segment" in steps:
        path = "/".join(_placeholder(segment) for segment in path.split("/"))
    if "slash" in steps and len(path) > 1:
        path = path.rstrip("/") or "/"
    return path


def _placeholder(segment: str) -> str:
    kind = noise_class(segment) if segment else None
    return f"{{{kind}}}" if kind else segment


def _template(a: str, b: str) -> str:
    """The path template of a pair that differs only in noise segments: those become placeholders."""
    seg_a = path_segments(_normal_path(a, ("matrix", "index", "lower")))
    seg_b = path_segments(_normal_path(b, ("matrix", "index", "lower")))
    out = [s if s == t else f"{{{noise_class(s)}}}" for s, t in zip(seg_a, seg_b, strict=True)]
    return "/" + "/".join(out)


def _fill_template(path: str, template: str) -> str:
    """`path` with the segments that the template's placeholders match replaced by the placeholders."""
    wanted = path_segments(template)
    have = path_segments(path)
    if len(wanted) != len(have):
        return path
    out = []
    for want, seg in zip(wanted, have, strict=True):
        placeholder = _PLACEHOLDER.fullmatch(want)
        if placeholder and noise_class(seg) == placeholder[1]:
            out.append(want)
        elif want == seg:
            out.append(seg)
        else:
            return path
    return "/" + "/".join(out) + ("/" if path.endswith("/") else "")


def _coarse_path(path: str) -> str:
    """The path under every normalisation: unique pages are compared within one coarse path."""
    return _normal_path(path or "/", ("matrix", "index", "lower", "segment", "slash"))


def _strip_matrix(path: str, names: set[str] | None) -> str:
    """The path without matrix parameters (only the named ones when `names` is given)."""
    if ";" not in path:
        return path
    out = []
    for segment in path.split("/"):
        bare, params = split_matrix(segment)
        kept = [f"{n}={v}" for n, v in params.items() if names is not None and n not in names]
        out.append(";".join([bare, *kept]))
    return "/".join(out)


def _matrix_params(path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for segment in path.split("/"):
        out.update(split_matrix(segment)[1])
    return out


def _index_file(path: str) -> str | None:
    last = path.rsplit("/", 1)[-1].lower()
    return last if last in INDEX_FILES else None


def _strip_index(path: str, files: set[str] | None) -> str:
    """The path without a trailing index file ("/a/index.html" gives "/a/")."""
    last = _index_file(path)
    if last is None or (files is not None and last not in files):
        return path
    return path[: len(path) - len(last)]
