"""EMNIST Lines: text lines built from EMNIST character images (as in the FSDL labs).

Each line's text comes from the built-in sentence sampler (``text_recognizer.data.synthetic.
sample_text``, real English word frequencies); characters EMNIST has no images for (punctuation)
are dropped, because pasting a blank for them would teach the model to hallucinate invisible
commas. Every character is a random EMNIST sample of its class; consecutive 28x28 images overlap
by a random share of their width (``0 .. max_overlap``, one value per line, as FSDL did) and are
merged with ``max`` (ink high), a space is an empty cell. The 28 px strip gets a 2 px margin top
and bottom, is scaled to ``height`` and inverted to dark ink on white.

Lines of ``train`` use EMNIST's training characters; ``val`` and ``test`` use its test characters
(different seeds). Everything is deterministic in ``EmnistLinesConfig`` (including ``seed``) and is
written once, in the folder format, to ``<cache>/emnist_lines/<digest of the config>/{train,val,test}``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from text_recognizer.data.download import cache_dir
from text_recognizer.data.emnist import EMNIST, load_emnist
from text_recognizer.data.synthetic import sample_text
from text_recognizer.metadata import LINE_HEIGHT

__all__ = ["EmnistLinesConfig", "render_emnist_line", "sample_emnist_text", "build_emnist_lines",
           "prepare_emnist_lines"]

_MARKER = ".complete"
_SPLIT_SEED = {"train": 0, "val": 1, "test": 2}


@dataclass(frozen=True)
class EmnistLinesConfig:
    num_train: int = 10_000
    num_val: int = 1_000
    num_test: int = 1_000
    max_overlap: float = 0.33  # largest overlap of neighbouring characters, share of 28 px
    max_chars: int = 40  # longest line, in characters
    height: int = LINE_HEIGHT
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_overlap < 1.0:
            raise ValueError(f"max_overlap must be in [0, 1), got {self.max_overlap}")
        if self.max_chars < 1 or self.height < 8:
            raise ValueError(f"max_chars must be >= 1 and height >= 8, got {self.max_chars} and {self.height}")

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(dataclasses.asdict(self), sort_keys=True).encode()).hexdigest()[:12]


def sample_emnist_text(rng: np.random.Generator, charset: str, max_chars: int) -> str:
    """A sentence from the built-in sampler, reduced to ``charset`` + spaces (never empty)."""
    allowed = set(charset)
    for _ in range(100):
        raw = sample_text(rng, max_chars=max_chars)
        text = " ".join("".join(c for c in word if c in allowed) for word in raw.split())
        text = " ".join(text.split())[:max_chars].strip()
        if text:
            return text
    raise ValueError(f"could not sample a text from the characters {charset!r}")


def render_emnist_line(
    text: str, emnist: EMNIST, by_char: dict[str, np.ndarray], rng: np.random.Generator,
    max_overlap: float = 0.33, height: int = LINE_HEIGHT,
) -> Image.Image:
    """``text`` drawn with random EMNIST samples: mode "L", dark ink on white, ``height`` px high."""
    overlap = rng.uniform(0.0, max_overlap)
    step = max(1, int(round(28 * (1.0 - overlap))))
    canvas = np.zeros((32, step * (len(text) - 1) + 28 + 4), dtype=np.uint8)
    for i, ch in enumerate(text):
        if ch == " ":
            continue
        pool = by_char.get(ch)
        if pool is None or len(pool) == 0:
            raise ValueError(f"EMNIST has no image for {ch!r} (text {text!r})")
        glyph = emnist.images[int(pool[rng.integers(len(pool))])]
        x = 2 + i * step
        np.maximum(canvas[2:30, x : x + 28], glyph, out=canvas[2:30, x : x + 28])
    image = Image.fromarray(255 - canvas, mode="L")
    width = max(1, round(image.width * height / image.height))
    return image.resize((width, height), Image.Resampling.BILINEAR)


def build_emnist_lines(train_chars: EMNIST, test_chars: EMNIST, config: EmnistLinesConfig, out_dir: Path,
                       progress: bool = True) -> dict[str, Path]:
    """Render all three splits into ``out_dir`` (via a temporary folder renamed at the end)."""
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    sizes = {"train": config.num_train, "val": config.num_val, "test": config.num_test}
    for split, n in sizes.items():
        chars = train_chars if split == "train" else test_chars
        by_char = {c: idx for c, idx in chars.indices_by_char().items() if len(idx)}
        charset = "".join(sorted(by_char))
        rng = np.random.default_rng([config.seed, _SPLIT_SEED[split]])
        folder = tmp / split
        folder.mkdir(parents=True)
        rows = ["file\ttext\twidth\theight\n"]
        for i in range(n):
            text = sample_emnist_text(rng, charset, config.max_chars)
            image = render_emnist_line(text, chars, by_char, rng, config.max_overlap, config.height)
            file = f"{split}-{i:06d}.png"
            image.save(folder / file)
            rows.append(f"{file}\t{text}\t{image.width}\t{image.height}\n")
        (folder / "labels.tsv").write_text("".join(rows), encoding="utf-8")
        if progress:
            print(f"  EMNIST Lines: {split} {n} lines", file=sys.stderr)
    (tmp / _MARKER).write_text(json.dumps(dataclasses.asdict(config)) + "\n", encoding="utf-8")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return {split: out_dir / split for split in sizes}


def prepare_emnist_lines(config: EmnistLinesConfig = EmnistLinesConfig(), archive: str | Path | None = None,
                         progress: bool = True) -> dict[str, Path]:
    """Folders ``{train, val, test}`` of EMNIST Lines for ``config`` (built on first use, then cached)."""
    out_dir = cache_dir("emnist_lines", config.digest())
    if (out_dir / _MARKER).is_file():
        return {split: out_dir / split for split in _SPLIT_SEED}
    return build_emnist_lines(load_emnist("train", archive), load_emnist("test", archive), config, out_dir, progress)
