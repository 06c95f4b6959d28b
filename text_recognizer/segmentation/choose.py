"""Pick a segmenter by name: ``learned`` (the bundled weights), ``classical``, or a path to segmenter weights.

Why one place: the CLI (``--segmenter``), the API, ``PageReader``'s default and the page evaluation all name
segmenters the same way, and each of them must fail with the same clear message when one is missing.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

NAMES = ("learned", "classical")


def default_name() -> str:
    """``learned`` when the package holds the bundled segmenter's weights, else ``classical``."""
    from text_recognizer.segmentation.learned import default_segmenter_path

    return "learned" if default_segmenter_path().is_file() else "classical"


@lru_cache(maxsize=4)
def _learned(path: str):
    from text_recognizer.segmentation.learned import LearnedSegmenter

    return LearnedSegmenter.load(path)


def load_segmenter(name: str | Path | None = None):
    """A callable ``page -> list[FoundLine]`` for ``name`` (``None``: ``default_name()``). The learned segmenter
    needs scipy and torch, the classical one scipy; ``ImportError`` says how to install them,
    ``FileNotFoundError``/``ValueError`` name a missing or foreign weights file. Loaded weights are cached."""
    try:
        name = default_name() if name is None else name
        if name == "classical":
            from text_recognizer.segmentation.classical import segment_page

            return segment_page
        if name == "learned":
            from text_recognizer.segmentation.learned import default_segmenter_path

            name = str(default_segmenter_path())
        path = Path(name)
        if not path.is_file():
            raise FileNotFoundError(f"segmenter {name!r} is neither one of {', '.join(NAMES)} nor a weights file")
        return _learned(str(path.resolve()))
    except ImportError as error:
        raise ImportError(f"reading pages needs scipy ({error}); install it with: "
                          "pip install 'text-recognizer[page]'") from error
