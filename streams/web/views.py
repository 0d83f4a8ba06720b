"""The worker's web views: `/` (the status page, `streams.web.status_html`) and `/status.json` (its data,
`streams.web.status`), `/metrics` (Prometheus), `/health` (ready or recovering, and what the worker runs
and holds), `/live` (the process answers) and `/debug/tasks` (where every asyncio task of the worker
waits, for a worker that seems stuck). The debug views read private attributes of Faust's streams,
conductor and consumer, for diagnosis only: they change nothing, and a rename upstream breaks only them."""

from __future__ import annotations

import asyncio
import io
from typing import Any, cast

import faust
from faust.tables.manager import TableManager
from faust.web import Request, Response, View
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from streams.settings import Settings
from streams.web import metrics, status, status_html


def is_ready(app: faust.App) -> bool:
    """Whether the worker has recovered its tables since the last rebalance and processes its partitions."""
    recovery = cast(TableManager, app.tables).recovery  # TableManagerT does not declare it
    return bool(recovery.completed.is_set() and not app.in_recovery and not app.rebalancing)


def add_pages(app: faust.App, settings: Settings, partitions: int) -> None:
    """Register the pages on the app's web server (its port is NEARDUP_WEB_PORT)."""

    def worker() -> dict[str, Any]:
        return {"app_id": settings.app_id, "design": settings.core.design.name, "k": settings.k,
                "partitions": partitions, "ready": is_ready(app)}

    @app.page("/")
    async def status_page(view: View, request: Request) -> Response:
        """The status page: this worker's throughput, verdicts, latency, lag, hosts and rejections."""
        return view.html(status_html.render(await status.status(app, worker())))

    @app.page("/status.json")
    async def status_json(view: View, request: Request) -> Response:
        return view.json(await status.status(app, worker()))

    @app.page("/metrics")
    async def metrics_page(view: View, request: Request) -> Response:
        return view.bytes(generate_latest(metrics.REGISTRY), content_type=CONTENT_TYPE_LATEST.split(";")[0])

    @app.page("/health")
    async def health_page(view: View, request: Request) -> Response:
        """200 once the tables are recovered, 503 while they recover (a readiness probe)."""
        ready = is_ready(app)
        assigned = sorted(f"{tp.topic}:{tp.partition}" for tp in app.consumer.assignment()) if app.consumer else []
        body: dict[str, Any] = {"status": "ok" if ready else "recovering", "ready": ready, "app_id": settings.app_id,
                                "design": settings.core.design.name, "k": settings.k, "partitions": partitions,
                                "assigned": assigned}
        return view.json(body, status=200 if ready else 503)

    @app.page("/live")
    async def live_page(view: View, request: Request) -> Response:
        """200 while the web server answers, recovering or not (a liveness probe)."""
        return view.json({"status": "ok"})

    @app.page("/debug/tasks")
    async def tasks_page(view: View, request: Request) -> Response:
        """Plain text: every asyncio task of the worker's event loop with the stack it waits in, and
        which channels the consumer delivers each assigned partition to."""
        return view.text(tasks_report() + delivery_report(app))


def _awaiting(awaitable: Any) -> list[str]:
    """The frames a coroutine or async generator waits in, outermost first (`cr_await` chains)."""
    out = []
    while awaitable is not None:
        frame = next((getattr(awaitable, a) for a in ("cr_frame", "ag_frame", "gi_frame")
                      if getattr(awaitable, a, None) is not None), None)
        if frame is not None:
            out.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        awaitable = next((getattr(awaitable, a) for a in ("cr_await", "ag_await", "gi_yieldfrom")
                          if getattr(awaitable, a, None) is not None), None)
    return out


def tasks_report() -> str:
    """Each task of the running loop with the chain of frames it waits in; then every suspended async
    generator (a task awaiting one shows only `async_generator_asend`) and each Faust stream's state."""
    import gc

    from faust.streams import Stream

    out = io.StringIO()
    tasks = sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    out.write(f"{len(tasks)} tasks\n")
    for task in tasks:
        out.write(f"\n--- {task.get_name()}\n" + "\n".join(_awaiting(task.get_coro())) + "\n")
    objects = gc.get_objects()
    out.write("\n=== async generators\n")
    for obj in objects:
        if type(obj).__name__ == "async_generator" and getattr(obj, "ag_frame", None) is not None:
            out.write(f"\n--- {obj!r} running={obj.ag_running}\n" + "\n".join(_awaiting(obj)) + "\n")
    out.write("\n=== streams\n")
    for obj in objects:
        if isinstance(obj, Stream):
            queue = getattr(obj.channel, "queue", None)
            out.write(f"{obj!r}: passive={obj._passive} enable_acks={obj.enable_acks} "
                      f"should_stop={obj.should_stop} processors={len(obj._processors)} "
                      f"queued={queue.qsize() if queue is not None else None}\n")
    return out.getvalue()


def delivery_report(app: faust.App) -> str:
    """Per assigned partition: the channels Faust's conductor delivers its records to (by id), the
    consumer's fetch position and the offset it last handed on (a partition with no channel, or a
    position past what was handed on while its queue is empty, loses records)."""
    conductor: Any = app.topics
    consumer: Any = app.consumer
    out = io.StringIO()
    out.write("\n=== delivery\n")
    for tp in sorted(consumer.assignment()):
        if tp.topic.endswith("-changelog"):
            continue
        channels = conductor._tp_index.get(tp, set())
        out.write(f"{tp.topic}:{tp.partition}: channels {sorted(id(c) for c in channels)} "
                  f"callback {tp in conductor._tp_to_callback} read {consumer._read_offset.get(tp)} "
                  f"committed {consumer._committed_offset.get(tp)}\n")
    import gc

    from faust.streams import Stream

    for obj in gc.get_objects():
        if isinstance(obj, Stream):
            out.write(f"stream over channel {id(obj.channel)} ({obj.channel!r})\n")
    return out.getvalue()
