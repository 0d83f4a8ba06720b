"""A kill point for tests/reliability/test_host_signals_crash.py, loaded by the workers it starts (this
directory is first on their PYTHONPATH, and Python imports `sitecustomize` at start).

With `KILLPOINT_HOST` set, a worker SIGKILLs itself the first time it is about to send a signal of
that host to `frontier.host-signals` whose reason contains `KILLPOINT_REASON`: after the hosts agent
wrote the host's state (the record's one write), before the send left the process. That is the lost
send, at a moment the test chooses rather than by luck. `KILLPOINT_MARKER` (a file) is created just
before, so it happens once: the restarted worker sends normally."""

from __future__ import annotations

import os

HOST = os.environ.get("KILLPOINT_HOST", "")


def _install() -> None:
    import signal
    from pathlib import Path
    from typing import Any

    from faust.topics import Topic

    reason = os.environ.get("KILLPOINT_REASON", "").encode()
    marker = Path(os.environ["KILLPOINT_MARKER"])
    send = Topic.send

    async def send_or_die(self: Topic, *args: Any, **kwargs: Any) -> Any:
        value = kwargs.get("value") or b""
        if (self.get_topic_name().endswith("frontier.host-signals") and kwargs.get("key") == HOST.encode()
                and reason in value and not marker.exists()):
            marker.write_bytes(value)
            os.kill(os.getpid(), signal.SIGKILL)
        return await send(self, *args, **kwargs)

    Topic.send = send_or_die  # type: ignore[method-assign]


if HOST:
    _install()
