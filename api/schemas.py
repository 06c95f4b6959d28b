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
    language: str | None = Field(
        default=None, examples=["en"],
        description="ISO 639-1 code of the language models the line was beam-decoded with (chosen per line with "
        "language=auto); null when none read it (greedy decoding reads alike in every language)",
    )


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
                    "model_version": "crnn-latin-2026.12.07a",
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
    languages: list[str] = Field(description="ISO 639-1 codes of the languages the model has decoder bundles (language "
                                 "models) for: the values of ?language= with decoder=beam, besides auto")
    language: str | None = Field(description="the server's default ?language= (TEXT_RECOGNIZER_LANGUAGE, else the "
                                 "model's own language; null: no language models)")
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


Points = list[list[float]]


class PageWord(BaseModel):
    text: str
    confidence: float = Field(ge=0.0, le=1.0, description="the decoder's confidence in this word")
    polygon: Points = Field(description="the word's four corners [[x, y], ...] in page pixels: top left, top right, "
                            "bottom right, bottom left (on a sloping line the box slopes with it)")


class PageLine(BaseModel):
    id: str = Field(description="line_1, line_2, ... in reading order", examples=["line_1"])
    polygon: Points = Field(description="the line's outline [[x, y], ...] in page pixels")
    baseline: Points = Field(description="the line's baseline [[x, y], ...] from left to right, in page pixels")
    text: str = Field(description="the text read in the line; empty when `error` is set")
    confidence: float | None = Field(ge=0.0, le=1.0, description="the line's confidence; null when `error` is set")
    words: list[PageWord] = Field(description="the line's words with their confidences and polygons")
    language: str | None = Field(default=None, description="ISO 639-1 code of the language models the line was "
                                 "beam-decoded with; null with greedy decoding")
    error: str | None = Field(default=None, description="why this line could not be cut or read (the page is "
                              "still answered; the other lines are read); null when it was read")


class PagePrediction(BaseModel):
    image: str = Field(description="the uploaded file's name (multipart), else \"image\"")
    width: int = Field(description="page width in pixels after EXIF orientation: the pixels every polygon is in")
    height: int = Field(description="page height in pixels after EXIF orientation")
    language: str | None = Field(default=None, examples=["fr"],
                                 description="ISO 639-1 code of the language models the page was beam-decoded "
                                 "with (language=auto: one choice for the whole page, from all its lines); null "
                                 "with greedy decoding")
    lines: list[PageLine] = Field(description="the lines found, in reading order (empty for a page without writing)")
    text: str = Field(description="the texts of the lines that were read, in reading order, joined by \\n")
    model_version: str = Field(description="the checkpoint's version (see /v1/model)")
    elapsed_ms: float = Field(description="server time for the whole request, from its first byte to the response")
    segment_ms: float = Field(description="time finding the lines")
    inference_ms: float = Field(description="time cutting the lines out and reading them (model and decoding)")
    preprocess_ms: float = Field(description="time decoding the image")
    queue_ms: float = Field(description="time waiting for a free inference worker")

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "image": "letter.jpg",
                    "width": 1400,
                    "height": 620,
                    "lines": [
                        {
                            "id": "line_1",
                            "polygon": [[78.0, 60.0], [470.0, 60.0], [470.0, 118.0], [78.0, 118.0]],
                            "baseline": [[78.0, 104.0], [470.0, 104.0]],
                            "text": "hello world",
                            "confidence": 0.93,
                            "words": [
                                {"text": "hello", "confidence": 0.97,
                                 "polygon": [[84.0, 66.0], [250.0, 66.0], [250.0, 112.0], [84.0, 112.0]]},
                                {"text": "world", "confidence": 0.41,
                                 "polygon": [[276.0, 64.0], [462.0, 64.0], [462.0, 114.0], [276.0, 114.0]]},
                            ],
                        }
                    ],
                    "text": "hello world",
                    "model_version": "crnn-latin-2026.12.07a",
                    "elapsed_ms": 412.5,
                    "segment_ms": 96.3,
                    "inference_ms": 288.1,
                    "preprocess_ms": 11.0,
                    "queue_ms": 0.02,
                }
            ]
        }
    )


class DocumentPage(BaseModel):
    page: int = Field(description="the page's number in the PDF, from 1")
    width: int | None = Field(description="page width in pixels as rendered (null when the page was not read)")
    height: int | None = Field(description="page height in pixels as rendered")
    language: str | None = Field(default=None, description="as on a page: the language models it was read with")
    dropped_lines: int | None = Field(default=None, description="found lines left out for reading below the "
                                      "confidence floor")
    lines: list[PageLine] = Field(description="the lines found, in reading order")
    text: str = Field(description="the page's text, its lines joined by \\n")
    error: str | None = Field(default=None, description="why this page was not read (e.g. it would be larger than "
                              "the pixel limit at this dpi); the other pages are")


class DocumentPrediction(BaseModel):
    """The answer of the page route for an uploaded PDF: every page, in order."""

    image: str = Field(description="the uploaded file's name (multipart), else \"document.pdf\"")
    pages: list[DocumentPage] = Field(description="every page of the PDF, in order")
    text: str = Field(description="the pages' texts joined by form feeds (\\f), as pdftotext does")
    model_version: str
    elapsed_ms: float
    segment_ms: float = Field(description="time finding the lines, all pages")
    inference_ms: float = Field(description="time cutting the lines out and reading them, all pages")
    preprocess_ms: float = Field(description="time rendering the PDF's pages")
    queue_ms: float
