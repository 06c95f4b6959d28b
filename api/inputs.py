"""Request bodies -> images: multipart uploads, JSON with base64 (or data URLs), or a raw image body.

Starlette parses multipart forms and Pydantic the JSON; this module only says which fields hold
the images. A request that is malformed as a whole (wrong content type, missing field, too many
images) raises ``APIError``; in a batch, a problem with one image (a text value instead of a file,
invalid base64) is recorded on that image alone so the others are still recognised.
"""

from __future__ import annotations

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.datastructures import UploadFile

from api.errors import APIError, describe_validation
from api.imaging import decode_base64
from api.schemas import Base64BatchRequest, Base64ImageRequest
from api.serving import ImageInput

_SINGLE_SHAPE = '{"image": "<base64 or data URL>"}'
_BATCH_SHAPE = '{"images": ["<base64 or data URL>" or {"id": "...", "image": "<base64>"}, ...]}'


async def single_image(request: Request, pdf: bool = False) -> ImageInput:
    """The one image of ``POST /v1/predict`` (and, with ``pdf``, the page route's image or PDF)."""
    kind = content_type(request)
    if kind == "multipart/form-data":
        form = await request.form(max_files=4, max_fields=8)
        try:
            item = form.get("file")
            if item is None:
                raise APIError(
                    422,
                    "missing_field",
                    f"multipart field 'file' is missing (got fields {sorted(form.keys())}); "
                    "send the image as form field 'file'",
                )
            if not isinstance(item, UploadFile):
                raise APIError(422, "missing_field", "multipart field 'file' must be a file upload, not a text value")
            what = f"file {item.filename!r}" if item.filename else "file"
            return ImageInput(0, what, await item.read(), filename=item.filename or None)
        finally:
            await form.close()
    if kind == "application/json":
        body = _parse_json(await request.body(), Base64ImageRequest, _SINGLE_SHAPE)
        return ImageInput(0, "image", decode_base64(body.image, "image"))
    if kind.startswith("image/") or (kind == "application/pdf" and pdf):
        return ImageInput(0, "body", await request.body())
    raise APIError(
        415,
        "unsupported_media_type",
        f"Content-Type {kind or '(none)'} is not accepted; send "
        'multipart/form-data with a \'file\' field, application/json {"image": "<base64>"}, '
        f"or the raw image with an image/* type{' (or a PDF as application/pdf)' if pdf else ''}",
    )


async def batch_images(request: Request, max_batch: int) -> list[ImageInput]:
    """The images of ``POST /v1/predict/batch``, in request order."""
    kind = content_type(request)
    if kind == "multipart/form-data":
        form = await request.form(max_files=max_batch + 1, max_fields=max_batch + 8)
        try:
            items = form.getlist("files")
            if not items:
                raise APIError(
                    422,
                    "missing_field",
                    f"multipart field 'files' is missing (got fields "
                    f"{sorted(form.keys())}); send each image as a 'files' field",
                )
            _check_count(len(items), max_batch)
            return [await _upload(i, item) for i, item in enumerate(items)]
        finally:
            await form.close()
    if kind == "application/json":
        body = _parse_json(await request.body(), Base64BatchRequest, _BATCH_SHAPE)
        _check_count(len(body.images), max_batch)
        return [_base64_item(i, entry) for i, entry in enumerate(body.images)]
    raise APIError(
        415,
        "unsupported_media_type",
        f"Content-Type {kind or '(none)'} is not accepted; send "
        "multipart/form-data with 'files' fields or application/json " + _BATCH_SHAPE,
    )


async def _upload(index: int, item) -> ImageInput:
    what = f"files[{index}]"
    if not isinstance(item, UploadFile):
        return ImageInput(index, what, error=APIError(422, "not_a_file", f"{what} is a text value, not a file upload"))
    name = item.filename or None
    return ImageInput(index, what + (f" {name!r}" if name else ""), await item.read(), filename=name)


def _base64_item(index: int, entry) -> ImageInput:
    text, item_id = (entry, None) if isinstance(entry, str) else (entry.image, entry.id)
    what = f"images[{index}]" + (f" (id {item_id!r})" if item_id is not None else "")
    try:
        return ImageInput(index, what, decode_base64(text, what), id=item_id)
    except APIError as error:
        return ImageInput(index, what, id=item_id, error=error)


def _check_count(count: int, max_batch: int) -> None:
    if count > max_batch:
        raise APIError(413, "too_many_images", f"{count} images in one batch; the limit is {max_batch}")


def content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _parse_json(raw: bytes, model: type[BaseModel], shape: str):
    if not raw.strip():
        raise APIError(422, "missing_field", f"empty JSON body; expected {shape}")
    try:
        return model.model_validate_json(raw)
    except ValidationError as error:
        if any(e["type"] == "json_invalid" for e in error.errors()):
            raise APIError(400, "invalid_json", f"the body is not valid JSON: {error.errors()[0]['msg']}") from None
        raise APIError(422, "missing_field", f"{describe_validation(error.errors())}; expected {shape}") from None
