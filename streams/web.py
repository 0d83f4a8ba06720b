"""The worker's web views: `/metrics` (Prometheus) and `/health` (what the worker runs and holds)."""

from __future__ import annotations

import faust
from faust.web import Request, Response, View
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from streams import metrics
from streams.settings import Settings


def add_pages(app: faust.App, settings: Settings, partitions: int) -> None:
    """Register the pages on the app's web server (its port is NEARDUP_WEB_PORT)."""

    @app.page("/metrics")
    async def metrics_page(view: View, request: Request) -> Response:
        return view.bytes(generate_latest(metrics.REGISTRY), content_type=CONTENT_TYPE_LATEST.split(";")[0])

    @app.page("/health")
    async def health_page(view: View, request: Request) -> Response:
        assigned = sorted(f"{tp.topic}:{tp.partition}" for tp in app.consumer.assignment()) if app.consumer else []
        return view.json({"status": "ok", "app_id": settings.app_id, "design": settings.core.design.name,
                          "k": settings.k, "partitions": partitions, "assigned": assigned})
