"""The Scrapy loop's settings (`NEARDUP_MODE`, `NEARDUP_DUPLICATE_ITEMS`, ...) and the names it puts in
`request.meta`, `response.meta` and items."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streams.settings import SettingError

if TYPE_CHECKING:  # scrapy is an optional extra: imported where it is used
    from scrapy.settings import BaseSettings


log = logging.getLogger(__name__)

MODES = ("embedded", "kafka")
ITEM_ACTIONS = ("drop", "mark", "keep")
ITEM_HOLD_S = {"embedded": 2.0, "kafka": 3.0}
"""NEARDUP_ITEM_HOLD_S's default: kafka's longer, a better copy's decision comes back through the workers."""
META_DECISION = "neardup"
"""`response.meta` key: the page's decision (`verdict`, `duplicate_of`, `canonical`)."""
META_REQUEUED = "neardup_requeued"
"""`request.meta` key: the frontier scheduled this request again already (lowered priority)."""
META_REWRITTEN = "neardup_rewritten_from"
"""`request.meta` key: the URL the frontier rewrote this request from."""
CANONICAL_FIELD = "neardup_canonical"


@dataclass(frozen=True)
class LoopOptions:
    """The loop's settings (Scrapy names in brackets)."""

    mode: str = "embedded"
    """[NEARDUP_MODE] `embedded` or `kafka`."""
    state_dir: str | None = None
    """[NEARDUP_STATE_DIR] embedded: the index's directory (RocksDB), None for memory."""
    apply_rules: bool = True
    """[NEARDUP_APPLY_RULES] rewrite by learned URL rules and drop normal forms seen before."""
    apply_budget: bool = True
    """[NEARDUP_APPLY_BUDGET] lower penalised hosts' priority and fetch only a `budget_factor` share."""
    priority_step: int = 10
    """[NEARDUP_PRIORITY_STEP] a request's priority is lowered by penalty times this."""
    trap_penalty: float = 0.5
    """[NEARDUP_TRAP_PENALTY] the penalty from which a host's priority and budget are cut (the workers flag a
    host at 0.5: below it, print versions and URL variants of a sound host, which the rules handle)."""
    duplicate_items: str = "drop"
    """[NEARDUP_DUPLICATE_ITEMS] `drop`, `mark` (a `neardup_canonical` field) or `keep`."""
    follow_duplicates: bool = False
    """[NEARDUP_FOLLOW_DUPLICATES] follow the links of duplicate pages (a mirror's, a copy's)."""
    decision_wait_s: float = 30.0
    """[NEARDUP_DECISION_WAIT_S] kafka: how long an item waits for its page's decision."""
    item_hold_s: float = ITEM_HOLD_S["embedded"]
    """[NEARDUP_ITEM_HOLD_S] how long a unique page's items wait for a better copy to revise it (the mode's
    `ITEM_HOLD_S` when unset)."""


def seconds_setting(settings: BaseSettings, name: str, default: float) -> float:
    """A Scrapy setting of seconds, from 0 to 3600."""
    try:
        value = settings.getfloat(name, default)
    except ValueError:
        raise SettingError(name, settings.get(name), "must be a number of seconds") from None
    if not (math.isfinite(value) and 0 <= value <= 3600):
        raise SettingError(name, value, "must be a number from 0 to 3600")
    return float(value)


def read_loop_settings(settings: BaseSettings) -> LoopOptions:
    """The loop's settings from Scrapy's; `SettingError` for the first that breaks its rule."""
    mode = settings.get("NEARDUP_MODE", "embedded")
    if mode not in MODES:
        raise SettingError("NEARDUP_MODE", mode, f"must be one of {', '.join(MODES)}")
    state_dir = settings.get("NEARDUP_STATE_DIR") or None
    if state_dir is not None and not isinstance(state_dir, str):
        raise SettingError("NEARDUP_STATE_DIR", state_dir, "must be a directory path")
    if state_dir is not None and mode == "kafka":
        raise SettingError("NEARDUP_STATE_DIR", state_dir, "is for NEARDUP_MODE=embedded (the workers keep the "
                           "state in kafka mode)")
    flags = {}
    for name, default in (("NEARDUP_APPLY_RULES", True), ("NEARDUP_APPLY_BUDGET", True),
                          ("NEARDUP_FOLLOW_DUPLICATES", False)):
        try:
            flags[name] = settings.getbool(name, default)
        except ValueError:
            raise SettingError(name, settings.get(name), "must be True or False") from None
    try:
        step = settings.getint("NEARDUP_PRIORITY_STEP", 10)
    except ValueError:
        raise SettingError("NEARDUP_PRIORITY_STEP", settings.get("NEARDUP_PRIORITY_STEP"),
                           "must be an integer") from None
    if not 0 <= step <= 1000:
        raise SettingError("NEARDUP_PRIORITY_STEP", step, "must be from 0 to 1000")
    try:
        trap_penalty = settings.getfloat("NEARDUP_TRAP_PENALTY", 0.5)
    except ValueError:
        raise SettingError("NEARDUP_TRAP_PENALTY", settings.get("NEARDUP_TRAP_PENALTY"), "must be a number") from None
    if not 0 <= trap_penalty <= 1:
        raise SettingError("NEARDUP_TRAP_PENALTY", trap_penalty, "must be from 0 to 1")
    items = settings.get("NEARDUP_DUPLICATE_ITEMS", "drop")
    if items not in ITEM_ACTIONS:
        raise SettingError("NEARDUP_DUPLICATE_ITEMS", items, f"must be one of {', '.join(ITEM_ACTIONS)}")
    wait_s = seconds_setting(settings, "NEARDUP_DECISION_WAIT_S", 30.0)
    hold_s = seconds_setting(settings, "NEARDUP_ITEM_HOLD_S", ITEM_HOLD_S[mode])
    return LoopOptions(mode, state_dir, flags["NEARDUP_APPLY_RULES"], flags["NEARDUP_APPLY_BUDGET"], step,
                       trap_penalty, items, flags["NEARDUP_FOLLOW_DUPLICATES"], wait_s, hold_s)
