"""Searchable PDFs: the page as it was (a PDF's page kept as it is, an image embedded as it is) and an invisible text
layer in which every word read lies on its measured position, so that selecting, searching and copying work.

How: PDFium imports the original page into a new document (its content streams and images are copied, not
re-encoded) or embeds the image file (JPEG bytes as they are; lossy WebP, which PDF cannot hold, as a JPEG at
quality 92; other formats losslessly); then each word becomes a
text object in render mode 3 (invisible) in the :mod:`glyphless <text_recognizer.pdf.glyphless>` font, stretched so
that its characters fill the word's box: its baseline along the box's lower edge, its em from the box's bottom to its
top. A space follows every word but the last of a line (outside the word's box) and lines follow each other in
reading order, so a viewer's copy gives the reading's words and lines (one space between words: spaces at a line's
ends are not kept). Positions go from page pixels to PDF points
through PDFium's own device-to-page mapping, so rotated and cropped pages come out right.
"""

from __future__ import annotations

import ctypes
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps

from text_recognizer.page_result import PageResult
from text_recognizer.pdf import PDFIUM_LOCK
from text_recognizer.pdf.glyphless import ADVANCE, ASCENT, DESCENT, UNITS_PER_EM, glyphless_font
from text_recognizer.pdf.pages import DEFAULT_DPI, open_pdf

Point = tuple[float, float]


@dataclass(frozen=True)
class PageSource:
    """Where a read page came from: an image file, or page ``pdf_page`` (0-based) of a PDF file; ``file`` is its
    path or its bytes (an upload)."""

    file: Path | bytes
    pdf_page: int | None = None

    @property
    def key(self) -> Path | int:
        """What tells two sources apart: the path, or the bytes' identity."""
        return self.file if isinstance(self.file, Path) else id(self.file)

    @property
    def name(self) -> str:
        return str(self.file) if isinstance(self.file, Path) else "the uploaded file"


def searchable_pdf(pages: Sequence[tuple[PageSource, PageResult | None]]) -> bytes:
    """One PDF holding every page of ``pages`` in order, each with its reading as an invisible text layer (a PDF's
    page whose result is ``None``, one that could not be read, is kept without text)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    if not pages:
        raise ValueError("a searchable PDF needs at least one page")
    with PDFIUM_LOCK:
        output = pdfium.PdfDocument.new()
        sources: dict[Path | int, object] = {}
        try:
            font = _load_font(output)
            for index, (source, result) in enumerate(pages):
                page = _add_page(output, index, source, sources)
                if result is None and source.pdf_page is None:
                    raise ValueError(f"{source.name}: an image page needs its reading")
                for words in _line_words(result) if result is not None else []:
                    for text, corners in words:
                        _add_word(output, page, font, text, corners, result)
                page.gen_content()
                page.close()
            raw.FPDFFont_Close(font)
            return _saved(output)
        finally:
            output.close()
            for document in sources.values():
                document.close()


def _load_font(output):
    """The glyphless font, embedded in ``output`` (PDFium makes it a CID font with a ToUnicode map)."""
    import pypdfium2.raw as raw

    font_data = glyphless_font()
    buffer = (ctypes.c_uint8 * len(font_data)).from_buffer_copy(font_data)
    font = raw.FPDFText_LoadFont(output, buffer, len(font_data), raw.FPDF_FONT_TRUETYPE, True)
    if not font:
        raise RuntimeError("PDFium could not load the text layer's font")
    return font


def _add_page(output, index: int, source: PageSource, sources: dict):
    """Append the original page (imported from its PDF, or a new page with the image on it) and return it."""
    if source.pdf_page is not None:
        if source.key not in sources:
            sources[source.key] = open_pdf(source.file, source.name)
        output.import_pages(sources[source.key], [source.pdf_page], index)
        return output[index]
    return _image_page(output, index, source.file)


def _image_page(output, index: int, file: Path | bytes):
    """A page the size of the image at its own resolution (300 dpi when it says none) with the image on it."""
    import pypdfium2 as pdfium

    with Image.open(io.BytesIO(file) if isinstance(file, bytes) else file) as image:
        dpi = image.info.get("dpi", (DEFAULT_DPI, DEFAULT_DPI))
        dpi_x, dpi_y = (round(float(d), 1) if d and float(d) > 1 else DEFAULT_DPI for d in dpi)  # PNG: px/m
        upright = image.getexif().get(0x0112, 1) in (0, 1)  # EXIF orientation: 1 (or none) is as stored
        oriented = image if upright else ImageOps.exif_transpose(image)
        width_px, height_px = oriented.size
        width, height = width_px * 72.0 / dpi_x, height_px * 72.0 / dpi_y
        page = output.new_page(width, height, index=index)
        picture = pdfium.PdfImage.new(output)
        if image.format == "JPEG" and upright and image.mode in ("L", "RGB", "CMYK"):
            # the file's bytes, not re-encoded
            picture.load_jpeg(io.BytesIO(file) if isinstance(file, bytes) else str(file), inline=True)
        elif image.format == "WEBP" and not image.info.get("lossless"):
            # PDF cannot hold WebP; a lossy photo stays lossy (JPEG at quality 92) rather than growing fivefold
            buffer = io.BytesIO()
            oriented.convert("RGB").save(buffer, "JPEG", quality=92)
            buffer.seek(0)
            picture.load_jpeg(buffer, inline=True)
        else:
            rgb = oriented.convert("RGB" if oriented.mode not in ("L", "1") else "L")
            bitmap = pdfium.PdfBitmap.from_pil(rgb)
            picture.set_bitmap(bitmap)
            bitmap.close()
    picture.set_matrix(pdfium.PdfMatrix().scale(width, height))
    page.insert_obj(picture)
    return page


def _line_words(result: PageResult) -> list[list[tuple[str, tuple[Point, Point, Point]]]]:
    """Per read line, its words as ``(text, (bottom left, bottom right, top left))`` of their em boxes in page
    pixels; a line read without word positions is one word over the line's box. Each word but a line's last is
    followed by a space.

    The em box of a word is its measured span along x, and along y its line's baseline (at the word's middle) with
    :data:`ASCENT` above and :data:`DESCENT` below, its height the word box's but at most 0.7 of the page's median
    distance between baselines: neighbouring lines' boxes overlap (ascenders and descenders), and a viewer that sees
    two overlapping runs of text takes them for one line.
    """
    read = [line for line in result.lines if line.error is None and line.text.strip()]
    limit = _em_limit(read)
    lines = []
    for line in read:
        if line.words:
            boxes = [(word.text, word.box) for word in line.words if word.text]
        else:
            boxes = [(line.text.strip(), line.box)]
        words = []
        for number, (text, (left, top, right, bottom)) in enumerate(boxes):
            em = min(bottom - top, limit) if limit else bottom - top
            base = _baseline_y(line, (left + right) / 2, bottom)
            below, above = em * -DESCENT / (ASCENT - DESCENT), em * ASCENT / (ASCENT - DESCENT)
            spaced = text if number == len(boxes) - 1 else text + " "
            words.append((spaced, ((left, base + below), (right, base + below), (left, base - above))))
        lines.append(words)
    return lines


def _baseline_y(line, x: float, fallback: float) -> float:
    """The y of ``line``'s baseline at ``x`` (linear between its points, flat beyond its ends)."""
    points = sorted(line.baseline)
    if not points:
        return fallback
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def _em_limit(lines) -> float | None:
    """0.7 of the median vertical distance between successive lines' baselines, or None for fewer than two."""
    heights = sorted(line.baseline[0][1] for line in lines if line.baseline)
    gaps = sorted(b - a for a, b in zip(heights, heights[1:]) if b - a > 0)
    return 0.7 * gaps[len(gaps) // 2] if gaps else None


def _add_word(output, page, font, text: str, corners: tuple[Point, Point, Point], result: PageResult) -> None:
    """One invisible text object: ``text``'s characters (a trailing space aside) span the word's box."""
    import pypdfium2.raw as raw

    bottom_left, bottom_right, top_left = (_to_page(page, point, result) for point in corners)
    letters = len(text.rstrip(" ")) or 1
    natural = letters * ADVANCE / UNITS_PER_EM  # the letters' width at font size 1
    em = (ASCENT - DESCENT) / UNITS_PER_EM  # the em's height at font size 1
    a, b = ((bottom_right[0] - bottom_left[0]) / natural, (bottom_right[1] - bottom_left[1]) / natural)
    c, d = ((top_left[0] - bottom_left[0]) / em, (top_left[1] - bottom_left[1]) / em)
    descent = -DESCENT / UNITS_PER_EM  # the baseline sits this far above the box's bottom, in em
    origin = (bottom_left[0] + c * descent, bottom_left[1] + d * descent)
    item = raw.FPDFPageObj_CreateTextObj(output, font, 1.0)
    encoded = (text + "\0").encode("utf-16-le")
    raw.FPDFText_SetText(item, ctypes.cast(ctypes.c_char_p(encoded), ctypes.POINTER(raw.FPDF_WCHAR)))
    raw.FPDFTextObj_SetTextRenderMode(item, raw.FPDF_TEXTRENDERMODE_INVISIBLE)
    raw.FPDFPageObj_Transform(item, a, b, c, d, origin[0], origin[1])
    raw.FPDFPage_InsertObject(page, item)


def _to_page(page, point: Point, result: PageResult) -> Point:
    """Page pixels of ``result`` (the page as rendered or as the image) -> PDF user space, as PDFium maps them."""
    import pypdfium2.raw as raw

    x, y = ctypes.c_double(), ctypes.c_double()
    ok = raw.FPDF_DeviceToPage(page, 0, 0, result.width, result.height, 0, int(round(point[0])),
                               int(round(point[1])), ctypes.byref(x), ctypes.byref(y))
    if not ok:
        raise RuntimeError("PDFium could not map a position onto the page")
    return x.value, y.value


def _saved(document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()
