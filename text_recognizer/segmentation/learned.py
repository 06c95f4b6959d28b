"""The learned line segmenter: ``LineUNet``'s two maps, vectorised into lines, in page pixels.

A page is seen at ``work_side`` px on its long side (the network's answer is at half of that), so a
phone photo of 4,000 px and a 150-dpi scan cost the same; the lines' coordinates are scaled back to the
page as given. Large pages are shrunk by PIL's integer ``reduce`` before anything else is allocated, so
memory stays bounded by the working size, not the page's.

The weights travel in one file (``save_segmenter`` / ``LearnedSegmenter.load``) with everything needed to
rebuild the network and read a page the way it was trained (working size, threshold) and a ``card``
(provenance, training data, licence). The package ships one: ``default_segmenter_path()``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageOps
from torch.nn import functional as F

from text_recognizer.segmentation.classical import ink_map
from text_recognizer.segmentation.lines import FoundLine, reading_order
from text_recognizer.segmentation.unet import LineUNet, UNetConfig
from text_recognizer.segmentation.vectorize import THRESHOLD, vectorize
from text_recognizer.stem import to_grayscale

#: The page's long side, in pixels, as the network sees it.
WORK_SIDE = 1024
FORMAT = "text-recognizer-segmenter"
FORMAT_VERSION = 1
_ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


def default_segmenter_path() -> Path:
    """Where the bundled segmenter lives (``text_recognizer/artifacts/segmenter.pt``)."""
    return _ARTIFACTS / "segmenter.pt"


def working_page(page: Image.Image, work_side: int = WORK_SIDE) -> tuple[np.ndarray, tuple[int, int]]:
    """``page`` as a float32 ``(h, w)`` grey array in [0, 1] (1 = paper) with its long side ``work_side``, and
    the page's own ``(width, height)`` after its EXIF orientation (the frame found lines are given in)."""
    oriented = ImageOps.exif_transpose(page)
    size = oriented.size
    factor = max(size) // (2 * work_side)
    if factor >= 2 and oriented.mode in ("1", "L", "RGB", "RGBA", "LA", "CMYK", "I;16", "I", "F"):
        oriented = oriented.reduce(factor)  # cheap, bounded memory for huge photos
    gray = to_grayscale(oriented)
    scale = work_side / max(size)
    target = (max(1, round(size[0] * scale)), max(1, round(size[1] * scale)))
    if (gray.shape[1], gray.shape[0]) != target:
        gray = np.asarray(Image.fromarray(gray, mode="F").resize(target, Image.Resampling.BILINEAR), dtype=np.float32)
    return gray, size


def page_batch(gray: np.ndarray, stride: int) -> torch.Tensor:
    """``(h, w)`` grey page (1 = paper) -> ``(1, 1, H, W)`` ink-high tensor, zero-padded (paper) to multiples of
    ``stride``."""
    ink = torch.from_numpy(1.0 - np.clip(gray, 0.0, 1.0)).float()[None, None]  # (1, 1, h, w)
    h, w = gray.shape
    return F.pad(ink, (0, -w % stride, 0, -h % stride))  # (1, 1, H, W)


class LearnedSegmenter:
    """``segmenter(page)`` -> ``list[FoundLine]`` in page pixels, in reading order.

    ``hug_ink``: polygons follow the ink of each line's pixels (``classical.ink_map`` of the working page), padded,
    rather than the whole predicted region. Why: the region the network learned from the Copiste pages fills the
    space between lines (kraken's convention there), while hand-corrected polygons, and the line cutter, want
    the writing; on Copiste val both score the same F1 (0.988), on the Stanford letters the ink-hugging ones
    match more true lines (F1 0.745 -> 0.789, ``benchmarks/results/page_segmentation.md``)."""

    def __init__(self, model: LineUNet, work_side: int = WORK_SIDE, threshold: float = THRESHOLD,
                 card: dict | None = None, hug_ink: bool = True):
        self.model = model.eval().to(memory_format=torch.channels_last)
        self.work_side = work_side
        self.threshold = threshold
        self.hug_ink = hug_ink
        self.card = dict(card or {})

    @classmethod
    def load(cls, path: str | Path | None = None) -> LearnedSegmenter:
        """Read a file written by ``save_segmenter`` (default: the bundled one)."""
        path = Path(path) if path is not None else default_segmenter_path()
        if not path.is_file():
            raise FileNotFoundError(f"segmenter weights {path} do not exist")
        bundle = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(bundle, dict) or bundle.get("format") != FORMAT:
            raise ValueError(f"{path} is not a segmenter file (expected format {FORMAT!r})")
        if bundle.get("version", 0) > FORMAT_VERSION:
            raise ValueError(f"{path} has segmenter format {bundle['version']}, newer than this package's "
                             f"{FORMAT_VERSION}: upgrade text-recognizer")
        model = LineUNet(UNetConfig.from_dict(bundle["config"]))
        model.load_state_dict(bundle["state_dict"])
        return cls(model, int(bundle.get("work_side", WORK_SIDE)), float(bundle.get("threshold", THRESHOLD)),
                   bundle.get("card"), bool(bundle.get("hug_ink", True)))

    @torch.inference_mode()
    def maps(self, gray: np.ndarray) -> np.ndarray:
        """``(2, h/2, w/2)`` float32 probabilities (region, core) of a working-size grey page."""
        batch = page_batch(gray, self.model.stride).to(memory_format=torch.channels_last)
        probabilities = torch.sigmoid(self.model(batch))[0]  # (2, H/2, W/2)
        h, w = (gray.shape[0] + 1) // 2, (gray.shape[1] + 1) // 2
        return probabilities[:, :h, :w].numpy()

    def __call__(self, page: Image.Image) -> list[FoundLine]:
        gray, (width, height) = working_page(page, self.work_side)
        if min(gray.shape) < 4:
            return []
        region, core = self.maps(gray)
        sx, sy = width / region.shape[1], height / region.shape[0]  # map pixel -> page pixels
        ink = map_ink(gray, region.shape) if self.hug_ink else None
        lines = []
        for polygon, baseline in vectorize(region, core, self.threshold, ink, map_darkness(gray, region.shape)):
            lines.append(FoundLine(tuple((x * sx, y * sy) for x, y in polygon),
                                   tuple((x * sx, y * sy) for x, y in baseline)))
        return reading_order(lines)


def map_ink(gray: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """The working page's ink (``classical.ink_map``) at the maps' half size: a map pixel is ink if any of its
    four page pixels is."""
    return _at_map_size(ink_map(gray), shape, False, np.any)


def map_darkness(gray: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``(h, w)`` float32: the working page's darkness (0 paper, 1 black) at the maps' half size, the darkest of
    each map pixel's four page pixels (a thin stroke keeps its darkness)."""
    return 1.0 - np.clip(_at_map_size(gray.astype(np.float32, copy=False), shape, 1.0, np.min), 0.0, 1.0)


def _at_map_size(values: np.ndarray, shape: tuple[int, int], fill, reduce) -> np.ndarray:
    """``values`` (the working page's size) reduced over 2 x 2 blocks to the maps' ``(h, w)``, padded with ``fill``."""
    h, w = shape
    padded = np.full((2 * h, 2 * w), fill, dtype=values.dtype)
    padded[: values.shape[0], : values.shape[1]] = values[: 2 * h, : 2 * w]
    return reduce(padded.reshape(h, 2, w, 2), axis=(1, 3))


def save_segmenter(path: str | Path, model: LineUNet, work_side: int = WORK_SIDE, threshold: float = THRESHOLD,
                   card: dict | None = None, hug_ink: bool = True) -> Path:
    """Write the weights and what reading a page needs to ``path`` (plain types: ``weights_only`` loads it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {key: value.detach().cpu().contiguous() for key, value in model.state_dict().items()}
    torch.save({"format": FORMAT, "version": FORMAT_VERSION, "config": model.config.to_dict(),
                "state_dict": state, "work_side": int(work_side), "threshold": float(threshold),
                "hug_ink": bool(hug_ink), "card": dict(card or {})}, path)
    return path
