"""A kill point for tests/reliability/test_host_signals_crash.py, loaded by the workers it starts (this
directory is first on their PYTHONPATH, and Python imports `sitecustomize` at start).

With `KILLPOINT_HOST` set, a worker SIGKILLs itself the first time it is about to send a signal of
that host to `frontier.host-signals` whose reason contains `KILLPOINT_REASON`: after the hosts agent
wrote the host's state (the record's one write), before the send left the process. That is the lost
send, at a moment the test chooses rather than by luck. `KILLPOINT_MARKER` (a file) is created just
before, so it happens once: the restarted worker sends normally.

A take's outputs leave the worker through `streams.state.commit.produce_batches` (step 2 of the commit
protocol, one call per topic partition), so that is the function wrapped: the kill comes before the
batch holding the signal is handed to the producer. The test fails (the worker does not die) if
outputs ever take another path, which is the point of hooking the real one."""

from __future__ import annotations

import os

HOST = os.environ.get("KILLPOINT_HOST", "")


def _install() -> None:
    import signal
    from pathlib import Path
    from typing import Any

    import streams.state.commit

    reason = os.environ.get("KILLPOINT_REASON", "").encode()
    marker = Path(os.environ["KILLPOINT_MARKER"])
    produce_batches = streams.state.commit.produce_batches

    async def produce_or_die(client: Any, topic: str, partition: int, items: list[tuple[bytes | None, bytes | None]],
                             headers: list[tuple[str, bytes]]) -> Any:
        if topic.endswith("frontier.host-signals") and not marker.exists():
            for key, value in items:
                if key == HOST.encode() and value is not None and reason in value:
                    marker.write_bytes(value)
                    os.kill(os.getpid(), signal.SIGKILL)
        return await produce_batches(client, topic, partition, items, headers)

    streams.state.commit.produce_batches = produce_or_die  # type: ignore[assignment]


if HOST:
    _install()
