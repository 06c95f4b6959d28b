"""Pages for training the line segmenter: PAGE/ALTO folders (checked and cached) and random crops of them.

Why crops of rescaled, rotated pages: there are few real pages (a few hundred), each seen at one scale and
angle; a crop at a random scale (line heights from half to twice the page's own), a small rotation and a
random tone makes every step a new example, and a fixed crop size keeps batches cheap on a CPU.

Data checks: an XML file that is not PAGE/ALTO, or whose image is missing or unreadable, is reported and
skipped; lines without a usable polygon are reported and left out of the targets (their ink then teaches
"not a line", so a page with many of them is reported too); lines without a baseline are drawn as region
only. ``--bad-samples error`` stops on any of these.

Cache: each page is decoded, made grey and shrunk to ``CACHE_SIDE`` px on its long side once, and stored
under ``cache_dir("segmentation")`` as a PNG plus a JSON of its lines, named by the SHA-256 of the XML file,
the image and ``CACHE_VERSION``: later runs load the small PNGs, and an edited page is cached again.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageFilter

from text_recognizer.data.download import cache_dir
from text_recognizer.data.layout import LayoutError, read_layout
from text_recognizer.segmentation.learned import WORK_SIDE
from text_recognizer.segmentation.targets import rasterize
from text_recognizer.stem import to_grayscale

CACHE_SIDE = 1600
CACHE_VERSION = 1

Point = tuple[float, float]


@dataclass
class TrainingPage:
    """A page as training sees it: grey ``(h, w)`` uint8 (255 = paper) and its lines in those pixels."""

    name: str
    image: np.ndarray
    lines: list[tuple[list[Point], list[Point]]]


@dataclass
class PageReport:
    """What loading a folder found: pages kept, problems per file, lines left out."""

    pages: int = 0
    lines: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)

    def lines_text(self) -> list[str]:
        return [f"{name}: {reason}" for name, reason in self.problems]


def _sha256(*paths: Path) -> str:
    digest = hashlib.sha256(f"segmentation-cache-{CACHE_VERSION}".encode())
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _page_from_xml(xml: Path, report: PageReport) -> TrainingPage | None:
    try:
        layout = read_layout(xml)
    except (LayoutError, OSError) as error:
        report.problems.append((xml.name, f"not a PAGE/ALTO file ({error})"))
        return None
    image_path = layout.find_image()
    if image_path is None:
        report.problems.append((xml.name, "page image missing"))
        return None
    key = _sha256(xml, image_path)
    cache = cache_dir("segmentation", key[:2])
    png, meta = cache / f"{key}.png", cache / f"{key}.json"
    if png.is_file() and meta.is_file():
        record = json.loads(meta.read_text())
        lines = [(list(map(tuple, a)), list(map(tuple, b))) for a, b in record["lines"]]
        for problem in record["problems"]:
            report.problems.append((xml.name, problem))
        return TrainingPage(xml.stem, np.asarray(Image.open(png).convert("L")), lines)
    try:
        with Image.open(image_path) as opened:
            gray = to_grayscale(opened)
    except (OSError, ValueError) as error:
        report.problems.append((xml.name, f"page image {image_path.name} unreadable ({error})"))
        return None
    lines, problems = [], []
    for line in layout.lines:
        if not line.polygon or len(line.polygon) < 3:
            problems.append(f"line {line.id}: {line.polygon_error or 'no polygon'}; left out")
            continue
        if len(line.baseline or []) < 2:
            problems.append(f"line {line.id}: no baseline; region only")
        lines.append((list(line.polygon), list(line.baseline or [])))
    page = shrunk(xml.stem, Image.fromarray(np.round(gray * 255).astype(np.uint8)), lines)
    cache.mkdir(parents=True, exist_ok=True)
    Image.fromarray(page.image).save(png)
    meta.write_text(json.dumps({"lines": page.lines, "problems": problems}))
    report.problems += [(xml.name, problem) for problem in problems]
    return page


def shrunk(name: str, image: Image.Image, lines: list[tuple[list[Point], list[Point]]]) -> TrainingPage:
    """A grey page and its lines (``(polygon, baseline)`` in its pixels) as a ``TrainingPage`` no larger than
    ``CACHE_SIDE`` on its long side, the lines scaled with it."""
    scale = min(1.0, CACHE_SIDE / max(image.size))
    if scale < 1.0:
        image = image.resize((round(image.width * scale), round(image.height * scale)), Image.Resampling.LANCZOS)
    scaled = [([(x * scale, y * scale) for x, y in polygon], [(x * scale, y * scale) for x, y in baseline])
              for polygon, baseline in lines]
    return TrainingPage(name, np.asarray(image.convert("L")), scaled)


def load_pages(folders: list[str | Path]) -> tuple[list[TrainingPage], PageReport]:
    """Every PAGE/ALTO page of ``folders`` (their ``*.xml``), with a report of what was left out."""
    report, pages = PageReport(), []
    for folder in folders:
        folder = Path(folder)
        xmls = sorted(folder.glob("*.xml"))
        if not folder.is_dir() or not xmls:
            raise ValueError(f"--data {folder}: not a folder of PAGE/ALTO files (no *.xml in it)")
        for xml in xmls:
            page = _page_from_xml(xml, report)
            if page is not None:
                pages.append(page)
                report.pages += 1
                report.lines += len(page.lines)
    return pages, report


def _rotation(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


@dataclass(frozen=True)
class CropSettings:
    """How crops are made: size (input px), relative scale range, rotation (degrees), tone changes."""

    crop: int = 512
    work_side: int = WORK_SIDE
    scale_low: float = 0.6
    scale_high: float = 2.0
    max_degrees: float = 4.0
    on_line: float = 0.75  # share of crops centred on a random line


def random_crop(page: TrainingPage, rng: np.random.Generator, settings: CropSettings = CropSettings()
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """``((1, crop, crop) ink-high float, (2, crop/2, crop/2) float targets)`` from ``page``."""
    height, width = page.image.shape
    relative = math.exp(rng.uniform(math.log(settings.scale_low), math.log(settings.scale_high)))
    factor = settings.work_side * relative / max(width, height)  # cached px -> crop px
    rotation = _rotation(math.radians(rng.uniform(-settings.max_degrees, settings.max_degrees)))
    forward = factor * rotation  # page -> crop frame, before the offset
    if page.lines and rng.random() < settings.on_line:
        polygon, _ = page.lines[rng.integers(len(page.lines))]
        centre = np.asarray(polygon[rng.integers(len(polygon))], dtype=np.float64)
    else:
        centre = np.array([rng.uniform(0, width), rng.uniform(0, height)])
    jitter = rng.uniform(-0.3, 0.3, 2) * settings.crop
    offset = forward @ centre - settings.crop / 2 + jitter
    inverse = rotation.T / factor  # crop frame -> page
    shift = inverse @ offset
    paper = int(rng.choice([255, int(rng.integers(0, 256))], p=[0.7, 0.3]))
    image = Image.fromarray(page.image).transform(
        (settings.crop, settings.crop), Image.Transform.AFFINE,
        (inverse[0, 0], inverse[0, 1], shift[0], inverse[1, 0], inverse[1, 1], shift[1]),
        resample=Image.Resampling.BILINEAR, fillcolor=paper)
    if rng.random() < 0.3:
        image = image.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.2)))

    def to_crop(points):
        return [tuple(forward @ np.asarray(p, dtype=np.float64) - offset) for p in points]

    lines = [(to_crop(polygon), to_crop(baseline)) for polygon, baseline in page.lines]
    targets = rasterize(lines, (settings.crop // 2, settings.crop // 2), scale=0.5)
    gray = np.asarray(image, dtype=np.float32) / 255.0
    gray = _tone(gray, rng)
    return torch.from_numpy(1.0 - gray)[None], torch.from_numpy(targets.astype(np.float32))


def _tone(gray: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random contrast, brightness, gamma, a light gradient and noise: scans, photos and pencil."""
    contrast = rng.uniform(0.5, 1.2)
    gray = 1.0 - (1.0 - gray) * contrast
    gray = np.clip(gray * rng.uniform(0.75, 1.05) + rng.uniform(-0.05, 0.05), 0, 1) ** rng.uniform(0.7, 1.4)
    if rng.random() < 0.4:
        h, w = gray.shape
        ys, xs = np.mgrid[0:h, 0:w] / max(h, w)
        gray = gray * (1 - rng.uniform(0, 0.35) * np.clip(rng.uniform(-1, 1) * xs + rng.uniform(-1, 1) * ys, 0, 1))
    gray = gray + rng.normal(0, rng.uniform(0, 0.04), gray.shape)
    return np.clip(gray, 0, 1).astype(np.float32)


class CropDataset(torch.utils.data.Dataset):
    """Item ``i`` is a random crop drawn with a generator seeded by ``(seed, i)``: the sequence of batches is the
    same after a resume. ``synthetic`` pages (if any) are drawn with probability ``synthetic_share``."""

    def __init__(self, pages: list[TrainingPage], length: int, seed: int = 0, settings: CropSettings = CropSettings(),
                 synthetic: list[TrainingPage] | None = None, synthetic_share: float = 0.0):
        if not pages and not synthetic:
            raise ValueError("no training pages")
        self.pages, self.synthetic = pages, list(synthetic or [])
        self.length, self.seed, self.settings = length, seed, settings
        self.synthetic_share = synthetic_share if self.synthetic else 0.0
        if not pages:
            self.synthetic_share = 1.0

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        rng = np.random.default_rng((self.seed, index))
        pool = self.synthetic if rng.random() < self.synthetic_share else self.pages
        return random_crop(pool[rng.integers(len(pool))], rng, self.settings)
