"""An OCRmyPDF engine plugin: OCRmyPDF does the PDF work (rasterising, grafting the text layer, PDF/A, optimising),
this reads the handwriting.

    pip install ".[ocrmypdf]"        # OCRmyPDF 17; it still wants the tesseract program installed (apt install
                                     # tesseract-ocr), although this plugin does the reading
    ocrmypdf --plugin text_recognizer.ocrmypdf --output-type pdf letters.pdf letters.searchable.pdf

Why a plugin rather than our own ``--format pdf`` only: OCRmyPDF users keep their pipeline (its options, PDF/A,
optimisation, sidecar text) and swap the engine. Only OCRmyPDF's public plugin interface is used
(``ocrmypdf.hookimpl``, ``ocrmypdf.pluginspec.OcrEngine``): for each page image it renders, the engine writes hOCR
(``generate_hocr``) from our page reader, and OCRmyPDF's default renderer (fpdf2) lays the text over the page. The
"sandwich" renderer is refused with a message: it grafts text-only PDFs whose fonts it rewrites on the assumption
that their character ids are Unicode code points (Tesseract's), which garbles any other engine's text (tried).

The reader is the bundled model with the bundled segmenter, greedy by default; ``TEXT_RECOGNIZER_DECODER`` (greedy
or beam) and ``TEXT_RECOGNIZER_LANGUAGE`` (a code, or auto) choose otherwise, as they do for the API. OCRmyPDF's
``-l`` languages are checked against the languages the model has decoders for (``eng``, ``fra``, ...).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from ocrmypdf import hookimpl
from ocrmypdf.pluginspec import OcrEngine, OrientationConfidence
from PIL import Image

from text_recognizer import __version__

#: ISO 639-1 (our decoder bundles) -> ISO 639-2/T (OCRmyPDF's and Tesseract's language names).
_THREE_LETTERS = {"en": "eng", "fr": "fra", "de": "deu", "it": "ita", "es": "spa", "la": "lat", "nl": "nld"}


@lru_cache(maxsize=1)
def _reader():
    """One page reader per process (OCRmyPDF runs engines in worker processes or threads); the model loads once."""
    from text_recognizer.page_reader import PageReader
    from text_recognizer.recognizer import LineRecognizer

    decoder = os.environ.get("TEXT_RECOGNIZER_DECODER", "greedy")
    language = os.environ.get("TEXT_RECOGNIZER_LANGUAGE") or None
    return PageReader(LineRecognizer(decoder=decoder, language=language))


def _read(input_file: Path):
    with Image.open(input_file) as image:
        image.load()
        return _reader().read(image, name=Path(input_file).name)


class HandwritingEngine(OcrEngine):
    """text_recognizer as OCRmyPDF's OCR engine."""

    @staticmethod
    def version() -> str:
        return __version__

    @staticmethod
    def creator_tag(options) -> str:
        return f"text_recognizer {__version__} (handwriting)"

    def __str__(self) -> str:
        return f"text_recognizer {__version__}"

    @staticmethod
    def languages(options) -> set[str]:
        recognizer = _reader().recognizer
        codes = set(getattr(recognizer, "languages", ()) or ("en",))
        return {_THREE_LETTERS.get(code, code) for code in codes} | {"eng"}

    @staticmethod
    def get_orientation(input_file: Path, options) -> OrientationConfidence:
        return OrientationConfidence(angle=0, confidence=0.0)  # pages are read as they come

    @staticmethod
    def get_deskew(input_file: Path, options) -> float:
        return 0.0  # the page reader levels each line by its own baseline

    @staticmethod
    def generate_hocr(input_file: Path, output_hocr: Path, output_text: Path, options) -> None:
        from text_recognizer.hocr import hocr

        result = _read(input_file)
        Path(output_hocr).write_bytes(hocr([(result, None)]))
        Path(output_text).write_text(result.text, encoding="utf-8")

    @staticmethod
    def generate_pdf(input_file: Path, output_pdf: Path, output_text: Path, options) -> None:
        raise NotImplementedError("text_recognizer writes hOCR for OCRmyPDF: use --pdf-renderer auto (fpdf2) or hocr, "
                                  "not sandwich")


@hookimpl
def get_ocr_engine(options=None):
    return HandwritingEngine()
