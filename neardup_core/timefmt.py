"""Timestamps: RFC 3339 strings and epoch milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime


def ms_to_rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def rfc3339_to_ms(text: str) -> int:
    """Epoch ms of an RFC 3339 / ISO 8601 time; a time without zone is taken as UTC."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp() * 1000)
