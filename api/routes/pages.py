"""The web pages (one line at ``/``, a whole page at ``/page``, collections at ``/collections``), Swagger UI from
the locally installed swagger-ui-bundle (no CDN), and Prometheus metrics."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, Response

STATIC = Path(__file__).resolve().parents[1] / "static"
SWAGGER = "/static/swagger"

_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


@router.get("/")
async def index() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers=_PAGE_HEADERS)


@router.get("/page")
async def page_reader() -> FileResponse:
    """The page reader: upload a page, see its lines drawn over it and their text."""
    return FileResponse(STATIC / "page.html", headers=_PAGE_HEADERS)


@router.get("/collections")
async def collections_page() -> FileResponse:
    """Collections: upload pages, correct their lines in place, export them."""
    return FileResponse(STATIC / "collections.html", headers=_PAGE_HEADERS)


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    app = request.app
    return get_swagger_ui_html(
        openapi_url=app.openapi_url,
        title=f"{app.title} - API docs",
        swagger_js_url=f"{SWAGGER}/swagger-ui-bundle.js",
        swagger_css_url=f"{SWAGGER}/swagger-ui.css",
        swagger_favicon_url=f"{SWAGGER}/favicon-32x32.png",
    )


@router.get("/metrics")
async def prometheus(request: Request) -> Response:
    metrics = request.app.state.metrics
    return Response(metrics.render(), media_type=metrics.content_type)
