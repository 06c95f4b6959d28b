"""What a read page is: its lines, their words, polygons and confidences, and their JSON form.

Why a module of its own: everything that writes or reads page results (JSON, PAGE-XML, ALTO, hOCR, the searchable
PDF's text layer, the batch command's driver, the collections store) needs these types but not the reader that
makes them; the reader needs torch, numpy and the segmenter, and the batch driver, which only plans pages and
assembles their saved results, should not pay for importing them. ``text_recognizer.page_reader`` re-exports them.
Plain dataclasses over the standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Point = tuple[float, float]


def _tuple_points(points) -> tuple[Point, ...]:
    return tuple((float(x), float(y)) for x, y in points)


def _points(points: Sequence[Point]) -> list[list[float]]:
    return [[round(float(x), 1), round(float(y), 1)] for x, y in points]


@dataclass(frozen=True)
class PageWord:
    """A word read on a page: its text, confidence in [0, 1] and a four-point polygon in page pixels
    (the word's corners on its line: top left, top right, bottom right, bottom left)."""

    text: str
    confidence: float
    polygon: tuple[Point, ...]

    @property
    def box(self) -> tuple[float, float, float, float]:
        """``(left, top, right, bottom)`` of the polygon."""
        xs, ys = [p[0] for p in self.polygon], [p[1] for p in self.polygon]
        return min(xs), min(ys), max(xs), max(ys)

    def to_dict(self) -> dict:
        return {"text": self.text, "confidence": round(self.confidence, 4), "polygon": _points(self.polygon)}

    @classmethod
    def from_dict(cls, record: dict) -> PageWord:
        return cls(record["text"], float(record["confidence"]), _tuple_points(record["polygon"]))


@dataclass(frozen=True)
class PageLine:
    """A found line: ``id``, polygon and baseline in page pixels, the text read in it with its confidence
    and words, or ``error`` (and no text, confidence ``None``) when it could not be cut or read; ``language``:
    the ISO 639-1 code of the language models it was beam-decoded with (``None``: none, as with greedy)."""

    id: str
    polygon: tuple[Point, ...]
    baseline: tuple[Point, ...]
    text: str = ""
    confidence: float | None = None
    words: tuple[PageWord, ...] = ()
    error: str | None = None
    language: str | None = None

    @property
    def box(self) -> tuple[float, float, float, float]:
        """``(left, top, right, bottom)`` of the polygon."""
        xs, ys = [p[0] for p in self.polygon], [p[1] for p in self.polygon]
        return min(xs), min(ys), max(xs), max(ys)

    def to_dict(self) -> dict:
        """``{id, polygon, baseline, text, confidence, words}`` (plain JSON types), and ``language`` and
        ``error`` when they are set."""
        record = {"id": self.id, "polygon": _points(self.polygon), "baseline": _points(self.baseline),
                  "text": self.text,
                  "confidence": None if self.confidence is None else round(self.confidence, 4),
                  "words": [word.to_dict() for word in self.words]}
        if self.language is not None:
            record["language"] = self.language
        if self.error is not None:
            record["error"] = self.error
        return record

    @classmethod
    def from_dict(cls, record: dict) -> PageLine:
        """The line back from :meth:`to_dict` (coordinates as rounded there)."""
        return cls(record["id"], _tuple_points(record["polygon"]), _tuple_points(record["baseline"]),
                   record.get("text", ""), record.get("confidence"),
                   tuple(PageWord.from_dict(word) for word in record.get("words", ())), record.get("error"),
                   record.get("language"))


@dataclass(frozen=True)
class PageResult:
    """A read page: ``image`` (the path as given, or a name), its size in pixels (after EXIF
    orientation: the pixels every polygon is in) and its lines in reading order. ``language``: the language
    its lines were beam-decoded in (``None`` for greedy), the most common one should they differ. ``dropped``: how
    many found lines were left out for reading below ``PageReader.min_confidence``. ``page``: its page number
    (from 1) when it is a page of a PDF, else ``None``."""

    image: str
    width: int
    height: int
    lines: tuple[PageLine, ...] = ()
    language: str | None = None
    dropped: int = 0
    page: int | None = None

    @property
    def text(self) -> str:
        """The texts of the lines that were read, in reading order, joined by line breaks."""
        return "\n".join(line.text for line in self.lines if line.error is None)

    def to_dict(self) -> dict:
        """``{image, width, height, lines: [...], text}``: the page's JSON object (and ``page``, ``language`` and
        ``dropped_lines`` when set)."""
        record = {"image": self.image, "width": self.width, "height": self.height}
        if self.page is not None:
            record["page"] = self.page
        if self.language is not None:
            record["language"] = self.language
        if self.dropped:
            record["dropped_lines"] = self.dropped
        return {**record, "lines": [line.to_dict() for line in self.lines], "text": self.text}

    @classmethod
    def from_dict(cls, record: dict) -> PageResult:
        """The page back from :meth:`to_dict` (e.g. a saved JSON result, to write it in another format later)."""
        return cls(record["image"], int(record["width"]), int(record["height"]),
                   tuple(PageLine.from_dict(line) for line in record.get("lines", ())), record.get("language"),
                   int(record.get("dropped_lines", 0)), record.get("page"))
