"""Collections of pages read and corrected through the service (``api.collections``): create a collection,
upload pages (each read at once by the page reader), correct a line's text or delete a false line (saved at
once), mark a page done, and export the collection (a ``labels.tsv`` folder of its corrected lines, or PAGE-XML
/ ALTO pages) as a zip.

Behind the same API keys and rate limit as the recognition routes; with keys, a key sees only the collections
made with it (another key's ids answer 404, as unknown ones do).
"""

from __future__ import annotations

import io
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, Response
from pydantic import BaseModel, Field

from api.collections.exports import FORMATS, labels_zip, layout_zip
from api.collections.jobs import MAX_MINUTES, AdaptJobs, JobBusy, JobsUnavailable
from api.collections.store import CollectionStore, NotFound, ReadLine, StoreLimit
from api.errors import APIError
from api.imaging import ALLOWED_TEXT
from api.inference import run_in_pool, run_page_job
from api.inputs import batch_images
from api.schemas import ErrorResponse
from api.serving import ServingDep
from text_recognizer.pdf import is_pdf

router = APIRouter(prefix="/v1/collections", tags=["collections"])

_ERRORS = {
    400: {"model": ErrorResponse, "description": "not an image, a corrupt image, a malformed body"},
    401: {"model": ErrorResponse, "description": "API keys are configured and the request has no valid key"},
    404: {"model": ErrorResponse, "description": "no such collection, page or line (for this key)"},
    409: {"model": ErrorResponse, "description": "a limit of the store (pages per collection, collections per key); "
                                                  "job_running: another adaptation runs"},
    413: {"model": ErrorResponse, "description": "body or image over the server's limits, too many files"},
    415: {"model": ErrorResponse, "description": f"an image format other than {ALLOWED_TEXT}, or a PDF"},
    422: {"model": ErrorResponse, "description": "a malformed name, correction or format; too few corrected lines "
                                                  "to adapt"},
    501: {"model": ErrorResponse, "description": "adapt_unavailable: this server cannot train (no training package)"},
}


class CollectionCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200, description="what the collection holds, for people")


class LineCorrection(BaseModel):
    text: str = Field(max_length=2000, description="the line's text as it is written on the page")


class AdaptRequest(BaseModel):
    minutes: float = Field(default=10.0, gt=0, le=MAX_MINUTES, description="the fine-tuning's time budget")


class RereadRequest(BaseModel):
    job: str = Field(description="a finished adaptation job whose model reads the collection's lines better")


class PageUpdate(BaseModel):
    done: bool = Field(description="the page is fully corrected")


def get_store(request: Request) -> CollectionStore:
    """The app's store, opened on first use in ``TEXT_RECOGNIZER_DATA_DIR``."""
    store = getattr(request.app.state, "collections", None)
    if store is None:
        settings = request.app.state.settings
        try:
            store = CollectionStore(settings.data_dir, max_pages=settings.max_collection_pages)
        except OSError as error:
            raise APIError(503, "store_unavailable", f"the collection store in {settings.data_dir} cannot be "
                                                     f"opened: {error}") from None
        request.app.state.collections = store
    return store


StoreDep = Annotated[CollectionStore, Depends(get_store)]


def open_collections(app) -> None:
    """At startup, when the data directory holds a store: open it and its jobs, so that a job the last server
    left running is marked failed (and its process stopped) before anyone asks."""
    settings = app.state.settings
    if (settings.data_dir / "collections.sqlite3").is_file():
        from text_recognizer.recognizer import DEFAULT_CHECKPOINT

        app.state.collections = CollectionStore(settings.data_dir, max_pages=settings.max_collection_pages)
        app.state.jobs = AdaptJobs(app.state.collections, settings.checkpoint or DEFAULT_CHECKPOINT)


def get_jobs(request: Request, store: StoreDep) -> AdaptJobs:
    """The app's adaptation jobs, on the store; their parent is the served checkpoint."""
    jobs = getattr(request.app.state, "jobs", None)
    if jobs is None:
        from text_recognizer.recognizer import DEFAULT_CHECKPOINT

        jobs = AdaptJobs(store, request.app.state.settings.checkpoint or DEFAULT_CHECKPOINT)
        request.app.state.jobs = jobs
    return jobs


JobsDep = Annotated[AdaptJobs, Depends(get_jobs)]


def owner_of(request: Request) -> str:
    """The short hash of the request's API key (``""`` when keys are off): whose collections these are."""
    return getattr(request.state, "key_id", None) or ""


OwnerDep = Annotated[str, Depends(owner_of)]


def _call(function, *args):
    try:
        return function(*args)
    except NotFound as error:
        raise APIError(404, "not_found", str(error)) from None
    except StoreLimit as error:
        raise APIError(409, "limit_reached", str(error)) from None
    except JobBusy as error:
        raise APIError(409, "job_running", str(error)) from None
    except JobsUnavailable as error:
        raise APIError(501, "adapt_unavailable", str(error)) from None
    except ValueError as error:
        raise APIError(422, "bad_request", str(error)) from None


@router.post("", status_code=201, responses=_ERRORS, summary="Create a collection")
def create_collection(body: CollectionCreate, store: StoreDep, owner: OwnerDep) -> dict:
    return _call(store.create_collection, owner, body.name)


@router.get("", responses=_ERRORS, summary="List the collections")
def list_collections(store: StoreDep, owner: OwnerDep) -> list[dict]:
    return store.collections(owner)


@router.get("/{collection_id}", responses=_ERRORS, summary="A collection and its pages")
def get_collection(collection_id: str, store: StoreDep, owner: OwnerDep) -> dict:
    return _call(store.collection, owner, collection_id)


@router.delete("/{collection_id}", status_code=204, responses=_ERRORS, summary="Delete a collection")
def delete_collection(collection_id: str, store: StoreDep, owner: OwnerDep) -> Response:
    _call(store.delete_collection, owner, collection_id)
    return Response(status_code=204)


@router.post("/{collection_id}/pages", status_code=201, responses=_ERRORS,
             summary="Upload pages: each is read at once and stored with its lines")
async def add_pages(collection_id: str, request: Request, serving: ServingDep, store: StoreDep,
                    owner: OwnerDep) -> dict:
    """Multipart ``files`` (one or more page images). Each page is read with the server's decoder settings and
    stored; a file that cannot be read is listed in ``errors`` and the others are kept. All failing: the first
    file's error."""
    _call(store.collection, owner, collection_id)  # 404 before reading anything
    items = await batch_images(request, serving.settings.max_batch)
    pages, errors = [], []
    for item in items:
        try:
            if item.error is not None:
                raise item.error
            if is_pdf(item.data or b""):
                raise APIError(415, "unsupported_media_type", f"{item.what}: a PDF; upload its pages as images")
            result = await run_page_job(request, serving, item, serving.settings.decoder, serving.settings.readings,
                                        "json", serving.settings.language)
            body = result["body"]
            lines = [ReadLine(line["polygon"], line.get("baseline"), line.get("text", ""), line.get("confidence"))
                     for line in body["lines"] if not line.get("error")]
            media = _media_type(item.data or b"")
            pages.append(_call(store.add_page, owner, collection_id, item.data, item.filename or f"page{item.index}",
                               media, (body["width"], body["height"]), lines))
        except APIError as error:
            if error.status == 409:  # the collection is full: no later page fits either
                raise
            errors.append({"file": item.what, **error.as_item()})
    if not pages and errors:
        first = errors[0]
        raise APIError(first["status"], first["code"], first["detail"])
    return {"pages": pages, "errors": errors}


def _media_type(data: bytes) -> str:
    """The stored page's media type, from its header (the page reader has decoded it already)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            return Image.MIME.get(image.format or "", "application/octet-stream")
    except (UnidentifiedImageError, OSError):
        return "application/octet-stream"


@router.get("/{collection_id}/pages/{page_id}", responses=_ERRORS, summary="A page and its lines")
def get_page(collection_id: str, page_id: str, store: StoreDep, owner: OwnerDep) -> dict:
    return _call(store.page, owner, collection_id, page_id)


@router.get("/{collection_id}/pages/{page_id}/image", responses=_ERRORS, response_class=FileResponse,
            summary="The page image as uploaded")
def get_page_image(collection_id: str, page_id: str, store: StoreDep, owner: OwnerDep) -> FileResponse:
    path, media_type = _call(store.page_image, owner, collection_id, page_id)
    return FileResponse(path, media_type=media_type)


@router.patch("/{collection_id}/pages/{page_id}", responses=_ERRORS, summary="Mark a page done (or not)")
def update_page(collection_id: str, page_id: str, body: PageUpdate, store: StoreDep, owner: OwnerDep) -> dict:
    return _call(store.mark_done, owner, collection_id, page_id, body.done)


@router.put("/{collection_id}/lines/{line_id}", responses=_ERRORS, summary="Correct a line's text")
def correct_line(collection_id: str, line_id: str, body: LineCorrection, store: StoreDep, owner: OwnerDep) -> dict:
    """Saved (on disk) before the answer comes back."""
    return _call(store.correct_line, owner, collection_id, line_id, body.text)


@router.delete("/{collection_id}/lines/{line_id}", status_code=204, responses=_ERRORS,
               summary="Delete a false line (a seal, a letterhead)")
def delete_line(collection_id: str, line_id: str, store: StoreDep, owner: OwnerDep) -> Response:
    _call(store.delete_line, owner, collection_id, line_id)
    return Response(status_code=204)


@router.get("/{collection_id}/export", responses={**_ERRORS, 200: {"content": {"application/zip": {}}}},
            response_class=Response, summary="The collection as a zip: corrected lines or PAGE-XML / ALTO pages")
def export(collection_id: str, store: StoreDep, owner: OwnerDep,
           format: Annotated[str, Query(description="labels: a labels.tsv folder of the corrected lines (to "
                                                    "fine-tune on); page / alto: PAGE-XML / ALTO beside each image")]
           = "labels") -> Response:
    if format not in FORMATS:
        raise APIError(422, "bad_format", f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if format == "labels":
        body = _call(labels_zip, store, owner, collection_id)
    else:
        body = _call(layout_zip, store, owner, collection_id, format)
    return Response(body, media_type="application/zip",
                    headers={"Content-Disposition": f'attachment; filename="{collection_id}-{format}.zip"'})


@router.post("/{collection_id}/adapt", status_code=202, responses=_ERRORS,
             summary="Adapt the model to the collection's corrected lines, in the background")
def adapt(collection_id: str, body: AdaptRequest, jobs: JobsDep, owner: OwnerDep) -> dict:
    """Fine-tunes the served model on the collection's corrected lines (at least 10) in its own process, one job at
    a time per server (409 ``job_running`` otherwise); poll the job for its progress and, when it is done, which
    model reads the user's held-out lines better (``verdict``) and the adapted checkpoint."""
    return _call(jobs.start, owner, collection_id, body.minutes)


@router.get("/{collection_id}/jobs", responses=_ERRORS, summary="The collection's adaptation jobs")
def list_jobs(collection_id: str, jobs: JobsDep, owner: OwnerDep) -> list[dict]:
    return _call(jobs.jobs, owner, collection_id)


@router.get("/{collection_id}/jobs/{job_id}", responses=_ERRORS, summary="An adaptation job: state and progress")
def get_job(collection_id: str, job_id: str, jobs: JobsDep, owner: OwnerDep) -> dict:
    return _call(jobs.job, owner, collection_id, job_id)


@router.delete("/{collection_id}/jobs/{job_id}", status_code=202, responses=_ERRORS,
               summary="Cancel a running adaptation job")
def cancel_job(collection_id: str, job_id: str, jobs: JobsDep, owner: OwnerDep) -> dict:
    return _call(jobs.cancel, owner, collection_id, job_id)


def _adapted_reader(request: Request, checkpoint: str):
    """The adapted model as a reader with the server's decoder settings, loaded once per checkpoint."""
    from text_recognizer.recognizer import LineRecognizer

    readers = getattr(request.app.state, "adapted_readers", None)
    if readers is None:
        readers = request.app.state.adapted_readers = {}
    if checkpoint not in readers:
        settings = request.app.state.settings
        readers[checkpoint] = LineRecognizer(checkpoint, decoder=settings.decoder, readings=settings.readings)
    return readers[checkpoint]


def _reread(store: CollectionStore, owner: str, collection_id: str, reader) -> list[dict]:
    """Every page's lines read again by ``reader`` through their stored polygons (the segmentation is kept)."""
    from PIL import Image

    from text_recognizer.data.linecut import cut_line

    pages = []
    for summary in store.collection(owner, collection_id)["pages"]:
        page = store.page(owner, collection_id, summary["id"])
        path, _ = store.page_image(owner, collection_id, summary["id"])
        with Image.open(path) as opened:
            gray = opened.convert("L")
        crops = [cut_line(gray, line["polygon"], line["baseline"]) for line in page["lines"]]
        read = reader.predict_lines(crops) if crops else []
        readings = [(line["id"], r.text, r.confidence) for line, r in zip(page["lines"], read)]
        pages.append(store.update_readings(owner, collection_id, summary["id"], readings))
    return pages


@router.post("/{collection_id}/reread", responses=_ERRORS,
             summary="Read the collection's pages again with an adapted model (corrections kept)")
async def reread(collection_id: str, body: RereadRequest, request: Request, serving: ServingDep, jobs: JobsDep,
                 store: StoreDep, owner: OwnerDep) -> dict:
    job = _call(jobs.job, owner, collection_id, body.job)
    if job["state"] != "done":
        raise APIError(409, "job_not_done", f"job {body.job} is {job['state']}: only a finished adaptation has a model")
    if job["checkpoint"] is None:
        raise APIError(409, "not_adapted", "the adapted model read the held-out lines no better than the served one "
                                           "(see the job's verdict): keep reading with the served model")
    reader = _adapted_reader(request, job["checkpoint"])
    _, pages = await run_in_pool(request, serving, _call, _reread, store, owner, collection_id, reader)
    return {"checkpoint": job["checkpoint"], "pages": pages}
