"""The worker's web views: `/metrics` (Prometheus), `/health` (ready or recovering, and what the
worker runs and holds), `/live` (the process answers) and `/debug/tasks` (where every asyncio task
of the worker waits, for a worker that seems stuck)."""

from __future__ import annotations

import asyncio
import io
from typing import Any, cast

import faust
from faust.tables.manager import TableManager
from faust.web import Request, Response, View
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from streams import metrics
from streams.settings import Settings


def is_ready(app: faust.App) -> bool:
    """Whether the worker has recovered its tables since the last rebalance and processes its partitions."""
    recovery = cast(TableManager, app.tables).recovery  # TableManagerT does not declare it
    return bool(recovery.completed.is_set() and not app.in_recovery and not app.rebalancing)


def add_pages(app: faust.App, settings: Settings, partitions: int) -> None:
    """Register the pages on the app's web server (its port is NEARDUP_WEB_PORT)."""

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
        """Plain text: every asyncio task of the worker's event loop with the stack it waits in."""
        return view.text(tasks_report())


def tasks_report() -> str:
    """Each task of the running loop, named, with its stack (innermost frame last)."""
    out = io.StringIO()
    tasks = sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    out.write(f"{len(tasks)} tasks\n")
    for task in tasks:
        out.write(f"\n--- {task.get_name()}: {task.get_coro()!r}\n")
        task.print_stack(limit=12, file=out)
    return out.getvalue()
