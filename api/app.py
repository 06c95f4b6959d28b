"""FastAPI app: ``uvicorn api.app:app`` (or ``python -m api.serve``); see ``docs/api.md``.

``create_app`` only assembles parts: the lifespan loads the model in the background
(``api/serving.py``), middleware adds request ids, access logs, CORS, body limits and metrics,
``api/errors.py`` gives every error one JSON shape, and the routers in ``api/routes/`` answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import asynccontextmanager

import swagger_ui_bundle
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from api.access_log import AccessLogMiddleware
from api.errors import install_error_handlers
from api.metrics import Metrics
from api.middleware import LimitsAndMetricsMiddleware
from api.routes import collections, health, pages, predict
from api.routes.pages import STATIC, SWAGGER
from api.security import guards
from api.serving import ModelState, Serving, load_serving
from api.settings import Settings
from text_recognizer import __version__

__all__ = ["STATIC", "app", "create_app"]


def create_app(settings: Settings | None = None, load: Callable[[Settings], Serving] = load_serving) -> FastAPI:
    """The app; ``settings`` default to the ``TEXT_RECOGNIZER_*`` environment variables, ``load``
    builds the model (in a thread, after the server is up)."""
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        loading = asyncio.create_task(app.state.model.load(settings, load))
        collections.open_collections(app)
        try:
            yield
        finally:
            loading.cancel()
            app.state.model.close()
            if getattr(app.state, "jobs", None) is not None:
                app.state.jobs.close()  # adaptation processes stop with the server

    app = FastAPI(
        title="Handwritten text-line recognizer",
        version=__version__,
        lifespan=lifespan,
        description="POST an image of one handwritten text line, or of a whole page, get its text back (a page: its "
        "lines with polygons, as JSON, PAGE-XML or ALTO). CRNN + CTC; see docs/api.md.",
        docs_url=None,  # /docs is served from the installed swagger-ui-bundle (routes/pages.py), not a CDN
    )
    app.state.settings, app.state.metrics, app.state.model = settings, Metrics(), ModelState()
    install_error_handlers(app, app.state.metrics)
    app.add_middleware(LimitsAndMetricsMiddleware, max_body_bytes=settings.max_body_bytes, metrics=app.state.metrics)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "X-API-Key", "X-Request-ID", "Content-Type"],
            expose_headers=["X-Request-ID", "Retry-After"],
        )
    app.add_middleware(AccessLogMiddleware, enabled=settings.access_log)  # added last: outermost
    app.include_router(health.router)
    access = guards(settings.load_api_keys(), settings.rate_limit)
    app.include_router(predict.router, dependencies=access)
    app.include_router(collections.router, dependencies=access)
    app.include_router(pages.router)
    app.mount(SWAGGER, StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="swagger")
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


app = create_app()
