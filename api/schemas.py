"""Pydantic models for requests, responses and errors (they make up the OpenAPI schema)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Base64ImageRequest(BaseModel):
    image: str = Field(description="the image as base64, or a data URL such as data:image/png;base64,iVBOR...")


class Base64Item(BaseModel):
    id: str = Field(max_length=200, description="the client's name for this image, echoed in its result")
    image: str = Field(description="the image as base64 or a data URL")


class Base64BatchRequest(BaseModel):
    images: list[str | Base64Item] = Field(
        min_length=1, description="images as base64 strings or data URLs, or {id, image} objects, one text line each"
    )

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"images": ["iVBORw0KGgo...", {"id": "page3-line7", "image": "data:image/png;base64,iVBORw0KGgo..."}]}
            ]
        }
    )


class Word(BaseModel):
    """One word of a line with its confidence, as the decoder gives it (extra fields pass through)."""

    model_config = ConfigDict(extra="allow")

    text: str
    confidence: float = Field(ge=0.0, le=1.0)
    start: int | float | None = Field(default=None, description="where the word starts in the line (decoder units)")
    end: int | float | None = Field(default=None, description="where the word ends in the line")


class LinePrediction(BaseModel):
    text: str = Field(description="the recognised text of the line")
    confidence: float = Field(ge=0.0, le=1.0, description="geometric mean over frames of the best class probability")
    image_width: int = Field(description="image width in pixels (after EXIF orientation)")
    image_height: int = Field(description="image height in pixels (after EXIF orientation)")
    words: list[Word] | None = Field(
        default=None, description="the line's words: calibrated confidence, start/end in x pixels of the uploaded image"
    )
    chars: list[Word] | None = Field(default=None, description="the line's characters (spaces excluded), like words")


class Prediction(LinePrediction):
    model_version: str = Field(description="the checkpoint's version (see /v1/model)")
    elapsed_ms: float = Field(description="server time for the whole request, from its first byte to the response")
    inference_ms: float = Field(description="time in the model (forward pass and decoding)")
    preprocess_ms: float = Field(description="time decoding the image and running the stem")
    queue_ms: float = Field(description="time waiting for a free inference worker")


class ItemError(BaseModel):
    code: str = Field(
        description="machine-readable error code, as in the whole-request errors", examples=["not_an_image"]
    )
    detail: str = Field(description="what was wrong with this image")
    status: int = Field(description="the HTTP status this error would have had as a single request", examples=[400])


class BatchItem(BaseModel):
    index: int = Field(description="position in the request, from 0")
    filename: str | None = Field(default=None, description="the uploaded file's name (multipart)")
    id: str | None = Field(default=None, description="the item's id (JSON input with {id, image} objects)")
    prediction: LinePrediction | None = Field(default=None, description="the result, or null when `error` is set")
    error: ItemError | None = Field(default=None, description="why this image was not recognised, or null")


class BatchPrediction(BaseModel):
    results: list[BatchItem] = Field(description="one result per image, in request order")
    model_version: str
    elapsed_ms: float
    inference_ms: float = Field(description="time in the model for the whole padded batch")
    preprocess_ms: float
    queue_ms: float

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "results": [
                        {
                            "index": 0,
                            "filename": "line1.png",
                            "id": None,
                            "error": None,
                            "prediction": {
                                "text": "hello world",
                                "confidence": 0.97,
                                "image_width": 384,
                                "image_height": 64,
                            },
                        },
                        {
                            "index": 1,
                            "filename": "broken.png",
                            "id": None,
                            "prediction": None,
                            "error": {
                                "code": "corrupt_image",
                                "detail": "files[1] 'broken.png': the PNG data is truncated or corrupt",
                                "status": 400,
                            },
                        },
                    ],
                    "model_version": "crnn-iam-2026.12.05b",
                    "elapsed_ms": 31.2,
                    "inference_ms": 18.0,
                    "preprocess_ms": 4.1,
                    "queue_ms": 0.02,
                }
            ]
        }
    )


class ModelInfo(BaseModel):
    model_version: str = Field(description="the checkpoint's declared version, else <file stem>-<sha256[:12]>")
    checkpoint: str = Field(description="checkpoint file name")
    sha256: str
    library_version: str | None = Field(description="text_recognizer version that wrote the checkpoint")
    licence: str | None = Field(description="terms of use of the weights (from the model card when there is one)")
    training_data: str | None = Field(
        description="what the model was trained on (from the model card when there is one)"
    )
    model_card: str | None = Field(description="the model card the licence and data description come from")
    kind: str = Field(description="model architecture")
    input_height: int = Field(description="line height the stem resizes to")
    num_parameters: int
    charset: str = Field(description="the characters the model can output (the CTC blank is not included)")
    num_classes: int
    loss: str
    val_cer: float | None = Field(description="character error rate reported on the validation split at training time")
    epoch: int | None
    step: int | None
    config: dict = Field(description="the full model configuration")


class Health(BaseModel):
    status: str = Field(examples=["ok"])
    model_loaded: bool
    model_version: str | None
    device: str
    workers: int
    torch_threads: int


class Readiness(BaseModel):
    ready: bool = Field(description="true once the model is loaded and warmed up")
    model_version: str | None = None
    detail: str = Field(examples=["the model is loaded and warmed up"])


class ErrorResponse(BaseModel):
    error: str = Field(description="machine-readable error code", examples=["not_an_image"])
    detail: str = Field(description="what was wrong, for people")
