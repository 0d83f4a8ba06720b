"""The worker's web views: `/metrics` (Prometheus), `/health` (ready or recovering, and what the
worker runs and holds) and `/live` (the process answers)."""

from __future__ import annotations

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
