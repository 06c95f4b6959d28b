"""Pydantic models for requests, responses and errors (they make up the OpenAPI schema)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Base64ImageRequest(BaseModel):
    image: str = Field(description="the image as base64, or a data URL such as data:image/png;base64,iVBOR...")


class Base64BatchRequest(BaseModel):
    images: list[str] = Field(description="images as base64 strings or data URLs, one text line each", min_length=1)


class Span(BaseModel):
    text: str = Field(description="the word (or character)")
    confidence: float = Field(ge=0.0, le=1.0, description="calibrated probability that it is exactly right")
    start: float = Field(description="left edge, x in pixels of the uploaded image (after EXIF orientation)")
    end: float = Field(description="right edge, x in pixels of the uploaded image")


_LINE_CONFIDENCE = ("calibrated estimate of the fraction of the line's characters read right (1 - CER); "
                    "uncalibrated models: geometric mean over frames of the best class probability")
_WORDS = "the line's words with calibrated confidences and x positions"
_CHARS = "the line's characters (spaces excluded) with calibrated confidences and x positions"


class Prediction(BaseModel):
    text: str = Field(description="the recognised text of the line")
    confidence: float = Field(ge=0.0, le=1.0, description=_LINE_CONFIDENCE)
    words: list[Span] = Field(default_factory=list, description=_WORDS)
    chars: list[Span] = Field(default_factory=list, description=_CHARS)
    decoder: str = Field(default="greedy", description="greedy or beam (beam search with the model's language model)")
    model_version: str = Field(description="checkpoint name and the first 12 hex digits of its sha256")
    image_width: int = Field(description="image width in pixels (after EXIF orientation)")
    image_height: int = Field(description="image height in pixels (after EXIF orientation)")
    elapsed_ms: float = Field(description="server time for the whole request, from its first byte to the response")
    inference_ms: float = Field(description="time in the model (forward pass and decoding)")
    preprocess_ms: float = Field(description="time decoding the image and running the stem")
    queue_ms: float = Field(description="time waiting for a free inference worker")


class LineResult(BaseModel):
    text: str
    confidence: float = Field(ge=0.0, le=1.0, description=_LINE_CONFIDENCE)
    words: list[Span] = Field(default_factory=list, description=_WORDS)
    chars: list[Span] = Field(default_factory=list, description=_CHARS)
    image_width: int
    image_height: int


class BatchPrediction(BaseModel):
    results: list[LineResult] = Field(description="one result per image, in request order")
    decoder: str = Field(default="greedy", description="greedy or beam")
    model_version: str
    elapsed_ms: float
    inference_ms: float = Field(description="time in the model for the whole padded batch")
    preprocess_ms: float
    queue_ms: float


class ModelInfo(BaseModel):
    model_version: str
    checkpoint: str = Field(description="checkpoint file name")
    sha256: str
    library_version: str | None = Field(description="text_recognizer version that wrote the checkpoint")
    kind: str = Field(description="model architecture")
    input_height: int = Field(description="line height the stem resizes to")
    num_parameters: int
    charset: str = Field(description="the characters the model can output (the CTC blank is not included)")
    num_classes: int
    loss: str
    training_data: str | None = Field(description="what the model was trained on")
    val_cer: float | None = Field(description="character error rate reported on the validation split at training time")
    epoch: int | None
    step: int | None
    config: dict = Field(description="the full model configuration")


class Health(BaseModel):
    status: str = Field(examples=["ok"])
    model_loaded: bool
    model_version: str
    device: str
    workers: int
    torch_threads: int


class ErrorResponse(BaseModel):
    error: str = Field(description="machine-readable error code", examples=["not_an_image"])
    detail: str = Field(description="what was wrong, for people")
