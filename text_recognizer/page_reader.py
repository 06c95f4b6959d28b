"""Read a whole page: find its text lines, cut each one out, read them together, put every word back on the page.

Why one module: the CLI (``python -m text_recognizer.recognizer --page``), the API and the evaluation
all read pages, and they must agree on what a page result is. ``PageReader(recognizer).read(image)``
is that one call (``LineRecognizer.read_page`` is a short cut to it):

1. the page is opened (a path: its size is read from the header first, and a page of more than
   ``max_pixels`` pixels is refused with a ``ValueError`` before a pixel is decoded);
2. the segmenter finds the text lines, each with a polygon and a baseline in page pixels, in reading
   order (default: the bundled learned segmenter, ``text_recognizer.segmentation.learned``, or the
   classical one where the package holds no weights; both need scipy: the ``page`` extra);
3. every line is cut out by its polygon and levelled by its baseline with the same cutter as
   ``--page-xml`` and training (``text_recognizer.data.linecut``), and all lines of the page are read
   in width-sorted batches by the recognizer (greedy or beam, one or three readings, as it is set up; beam
   search in ``language="auto"`` chooses one language for the whole page, from all its lines together:
   ``text_recognizer.decoding.language``);
4. each word's span in its cut line (x from the decoder; y from the rows of ink under it) becomes a
   four-point polygon on the page through the cut's ``LineFrame`` (the crop offset and the levelling
   rotation undone).

A line that cannot be cut or read is kept with an ``error`` (and no text); it never fails the page. A line
read with a confidence under ``min_confidence`` (``MIN_LINE_CONFIDENCE``) and under half the page's median
line confidence is left out and counted (``PageResult.dropped``, ``"dropped_lines"`` in JSON): most are marks
on the paper, not writing; so is a found line that reads as nothing (blank text).
A page without writing (blank paper, a photo of a wall, a 1x1 image) gives zero lines.

Memory: at most ``max_pixels`` (default 50 million: an A4 page at 600 dpi is 35 million) decoded
pixels, then grey copies of the page (4 bytes a pixel; the segmenter's is freed once it has scaled
the page down to its working size) beside the decoded image (1-4 bytes a pixel): about 600 MB
at the limit, 250 MB for a 20-megapixel photo. The lines are cut from the full-resolution page.
Larger images are refused, not downscaled: say ``max_pixels=`` (CLI ``--max-page-pixels``) to allow
them, or scale them down first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from text_recognizer.data.folder import image_size, open_image
from text_recognizer.data.linecut import LineFrame, cut_line_framed, page_gray
from text_recognizer.page_options import MAX_PAGE_PIXELS, MIN_LINE_CONFIDENCE, add_page_reader_arguments
from text_recognizer.page_result import PageLine, PageResult, PageWord, Point
from text_recognizer.stem import oriented_size

__all__ = ["MAX_PAGE_PIXELS", "MIN_LINE_CONFIDENCE", "PageLine", "PageReader", "PageResult", "PageWord", "Point",
           "Segmenter", "add_page_reader_arguments", "default_segmenter"]

#: ...and below this share of the page's median line confidence (so a page read poorly throughout keeps its lines).
RELATIVE_CONFIDENCE = 0.5

#: A page (PIL image) -> its lines in reading order; each has ``polygon`` and ``baseline`` in page pixels.
Segmenter = Callable[[Image.Image], Sequence[Any]]


def default_segmenter() -> Segmenter:
    """The bundled learned segmenter (``text_recognizer.segmentation.learned``), or the classical one where the
    package holds no weights (``segmentation.choose.load_segmenter``); both need scipy."""
    from text_recognizer.segmentation.choose import load_segmenter

    return load_segmenter()


class PageReader:
    """``read(image)`` -> ``PageResult`` with a line recognizer (``LineRecognizer`` or ``OnnxLineRecognizer``:
    anything with ``preprocess`` and ``predict_tensors(lines, image_sizes)``) and a segmenter
    (default: ``default_segmenter()``).

    ``max_pixels``: larger pages are refused with a ``ValueError`` (see the module's docstring).
    """

    def __init__(self, recognizer, segmenter: Segmenter | None = None, max_pixels: int = MAX_PAGE_PIXELS,
                 min_confidence: float = MIN_LINE_CONFIDENCE):
        if isinstance(max_pixels, bool) or not isinstance(max_pixels, int) or max_pixels < 1:
            raise ValueError(f"max_pixels must be a positive integer, got {max_pixels!r}")
        if not 0.0 <= min_confidence < 1.0:
            raise ValueError(f"min_confidence must be in [0, 1), got {min_confidence!r}")
        self.recognizer = recognizer
        self.segmenter = segmenter if segmenter is not None else default_segmenter()
        self.max_pixels = max_pixels
        self.min_confidence = min_confidence

    def open(self, image: Image.Image | str | Path) -> tuple[Image.Image, str]:
        """The page as a decoded PIL image and its name; ``ValueError`` for an unreadable or too large one."""
        if isinstance(image, Image.Image):
            self._check_size(image.size, "image")
            return image, str(getattr(image, "filename", "") or "image")
        path = Path(image)
        self._check_size(image_size(path), str(image))  # the header only: nothing decoded yet
        return open_image(path), str(image)

    def _check_size(self, size: tuple[int, int], name: str) -> None:
        width, height = size
        if width * height > self.max_pixels:
            raise ValueError(f"{name}: {width}x{height} = {width * height:,} pixels is more than the page limit of "
                             f"{self.max_pixels:,} pixels; scale it down (300 dpi is plenty) or raise the limit "
                             "(--max-page-pixels, PageReader(max_pixels=...))")

    def read(self, image: Image.Image | str | Path, decoder: str | None = None, readings: int | None = None,
             name: str | None = None, language: str | None = None) -> PageResult:
        """Read the page ``image`` (a PIL image or a path); see the module's docstring.

        ``name`` is the result's ``image`` (default: the path as given, or a PIL image's file name).

        ``decoder`` (``"greedy"``/``"beam"``), ``readings`` (1 or 3) and ``language`` (a code or ``"auto"``)
        override the recognizer's own for this page. Raises ``ValueError`` for an image that cannot be opened
        or is too large, and ``LanguageError`` (a ``ValueError``) for a language the recognizer cannot read
        with, before the page is opened; problems with single lines are reported in those lines.
        """
        options = {key: value for key, value in (("decoder", decoder), ("readings", readings),
                                                 ("language", language)) if value is not None}
        language_for = getattr(self.recognizer, "language_for", None)
        if language_for is not None:
            language_for(decoder, language)  # an unavailable language fails before any work
        page, opened_as = self.open(image)
        name = opened_as if name is None else name
        width, height = oriented_size(page)
        found = list(self.segmenter(page))
        if not found:
            return PageResult(name, width, height)
        gray = page_gray(page)  # (H, W) in [0, 1], EXIF orientation applied: the segmenter's pixels too
        lines: list[PageLine] = []
        cuts: list[tuple[int, Image.Image, LineFrame]] = []  # (index in lines, cut line, its frame)
        for number, item in enumerate(found, start=1):
            polygon = tuple((float(x), float(y)) for x, y in item.polygon)
            baseline = tuple((float(x), float(y)) for x, y in item.baseline)
            line = PageLine(f"line_{number}", polygon, baseline)
            try:
                crop, frame = cut_line_framed(gray, polygon, baseline)
            except ValueError as error:
                line = PageLine(line.id, polygon, baseline, error=f"cannot cut the line: {error}")
            else:
                cuts.append((len(lines), crop, frame))
            lines.append(line)
        for index, decoded, problem in self._read_cuts([crop for _, crop, _ in cuts], options):
            at, crop, frame = cuts[index]
            line = lines[at]
            if problem is not None:
                lines[at] = PageLine(line.id, line.polygon, line.baseline, error=f"cannot read the line: {problem}")
                continue
            ink = _ink(crop)
            words = tuple(_page_word(word, ink, frame, (width, height)) for word in decoded.words)
            lines[at] = PageLine(line.id, line.polygon, line.baseline, decoded.text, float(decoded.confidence), words,
                                 language=getattr(decoded, "language", None))
        kept = _confident(lines, self.min_confidence)
        kept = [replace(line, id=f"line_{number}") for number, line in enumerate(kept, start=1)]
        return PageResult(name, width, height, tuple(kept), _page_language(kept), dropped=len(lines) - len(kept))

    def _read_cuts(self, crops: list[Image.Image], options: dict):
        """Yield ``(index, decoded line or None, problem or None)`` for every cut line: all together in
        width-sorted batches (one language for all of them), or one by one (to find the culprit) if reading
        them together fails."""
        tensors: dict[int, Any] = {}
        for index, crop in enumerate(crops):
            try:
                tensors[index] = self.recognizer.preprocess(crop)
            except ValueError as error:
                yield index, None, str(error)
        order = sorted(tensors)
        if not order:
            return
        try:
            # positions come back in each cut line's own pixels (its size given)
            decoded = self.recognizer.predict_tensors([tensors[i] for i in order], [crops[i].size for i in order],
                                                      together=True, **options)
        except ValueError:
            raise  # a bad decoder or readings option: the caller's mistake, not the lines'
        except Exception:  # noqa: BLE001 - one bad line must not fail the page: read them one by one
            for index in order:
                try:
                    line = self.recognizer.predict_tensors([tensors[index]], [crops[index].size], **options)[0]
                except Exception as error:  # noqa: BLE001 - reported in the line
                    yield index, None, f"{type(error).__name__}: {error}"
                else:
                    yield index, line, None
            return
        for index, line in zip(order, decoded):
            yield index, line, None


def _confident(lines: list[PageLine], floor: float) -> list[PageLine]:
    """``lines`` less those that read as nothing (blank text: specks, rulings, a stamp's rim) and those read below
    ``floor`` *and* below half the page's median confidence: on a page the model reads poorly throughout (a hard
    hand, the wrong language) nothing that holds text is dropped, only what reads worse than the page's own writing.
    Lines with an error are kept; ``floor`` 0 keeps every line."""
    if floor <= 0:
        return list(lines)
    lines = [line for line in lines if line.error is not None or line.text.strip()]
    confidences = [line.confidence for line in lines if line.error is None and line.confidence is not None]
    if not confidences:
        return list(lines)
    cut = min(floor, RELATIVE_CONFIDENCE * float(np.median(confidences)))
    return [line for line in lines if line.error is not None or line.confidence >= cut]


def _page_language(lines: Sequence[PageLine]) -> str | None:
    """The language of a page's lines (one when they were read together), the most common should they differ."""
    counts = Counter(line.language for line in lines if line.language is not None)
    return counts.most_common(1)[0][0] if counts else None


def _ink(crop: Image.Image) -> np.ndarray:
    """``(h, w)`` bool: the cut line's pixels darker than half way from its paper (median) to its ink (1st
    percentile), so dim photos and grey paper work too."""
    pixels = np.asarray(crop, dtype=np.float32)  # (h, w) 0-255
    paper, ink = np.percentile(pixels, [50, 1])
    return pixels < (paper + ink) / 2 if paper - ink > 16 else np.zeros(pixels.shape, dtype=bool)


def _page_word(word, ink: np.ndarray, frame: LineFrame, page_size: tuple[int, int]) -> PageWord:
    """A decoded word (``start``/``end`` in x pixels of the cut line) as a polygon on the page: its top and
    bottom are those of the ink (``_ink``) in its columns (the whole line's height if it has none)."""
    height, width = ink.shape
    start, end = max(0.0, float(word.start)), min(float(width), float(word.end))
    if end <= start:
        start, end = min(start, float(width)), min(float(width), start + 1.0)
    columns = ink[:, int(math.floor(start)) : max(int(math.ceil(end)), int(math.floor(start)) + 1)]
    rows = np.flatnonzero(columns.any(1))
    top, bottom = (float(rows[0]), float(rows[-1] + 1)) if len(rows) else (0.0, float(height))
    page_width, page_height = page_size
    corners = [frame.to_page(x, y) for x, y in ((start, top), (end, top), (end, bottom), (start, bottom))]
    polygon = tuple((min(max(x, 0.0), float(page_width)), min(max(y, 0.0), float(page_height))) for x, y in corners)
    return PageWord(word.text, float(word.confidence), polygon)
