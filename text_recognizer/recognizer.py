"""``LineRecognizer``: the one inference wrapper used by the CLI, the evaluation, the API and tests.

Command line::

    python -m text_recognizer.recognizer --checkpoint PATH IMAGE... [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import torch
from PIL import Image

from text_recognizer.checkpoint import LOSS_OF_OUTPUT_KIND, CheckpointError, load_checkpoint
from text_recognizer.ctc.decode import DecodedLine, ctc_decode
from text_recognizer.data.folder import open_image
from text_recognizer.stem import preprocess

#: Where the bundled default model lives (shipped inside the package once trained).
DEFAULT_CHECKPOINT = Path(__file__).parent / "artifacts" / "default.pt"


def default_checkpoint() -> Path:
    """The bundled model, or a ``CheckpointError`` saying how to make one."""
    if not DEFAULT_CHECKPOINT.is_file():
        raise CheckpointError(
            f"no bundled model at {DEFAULT_CHECKPOINT}; train one with "
            "`python training/run_experiment.py` and pass --checkpoint training/logs/<run>/best.pt"
        )
    return DEFAULT_CHECKPOINT


class LineRecognizer:
    """Load a checkpoint once; ``predict`` images of single text lines.

    ``checkpoint`` holds the whole bundle (``text_recognizer.checkpoint.Checkpoint``: model config,
    codec, decoding, provenance, licence); ``config``, ``codec`` and ``metadata`` are short cuts into it.
    """

    def __init__(self, checkpoint: str | Path | None = None, device: str | torch.device = "cpu", batch_size: int = 16):
        self.path = Path(checkpoint) if checkpoint is not None else default_checkpoint()
        self.checkpoint = load_checkpoint(self.path, map_location="cpu")
        self.config = self.checkpoint.model_config
        self.codec = self.checkpoint.codec
        self.decoding = self.checkpoint.decoding
        self.metadata = self.checkpoint.metadata
        self.device = torch.device(device)
        self.model = self.checkpoint.build_model().to(self.device).eval()
        self.batch_size = batch_size

    @property
    def loss(self) -> str:
        """The training loss that matches this model's outputs (``ctc`` or ``nll``); see ``decoding.output_kind``."""
        return LOSS_OF_OUTPUT_KIND[self.decoding.output_kind]

    @property
    def height(self) -> int:
        return self.config.height

    def preprocess(self, image: Image.Image | str | Path) -> torch.Tensor:
        """The shared stem at this model's height: ``(1, H, W)``."""
        if isinstance(image, (str, Path)):
            image = open_image(Path(image))
        return preprocess(image, self.config.height)

    @torch.inference_mode()
    def predict_tensors(self, lines: Sequence[torch.Tensor]) -> list[DecodedLine]:
        """Decode preprocessed ``(1, H, W)`` lines, batched by similar width to limit padding."""
        results: list[DecodedLine | None] = [None] * len(lines)
        order = sorted(range(len(lines)), key=lambda i: lines[i].shape[-1])
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            widths = torch.tensor([lines[i].shape[-1] for i in chunk])
            batch = torch.zeros(len(chunk), 1, self.config.height, int(widths.max()))
            for row, i in enumerate(chunk):
                batch[row, :, :, : lines[i].shape[-1]] = lines[i]
            logits = self.model(batch.to(self.device), widths)  # (B, T, C)
            frames = self.model.output_lengths(widths)
            decoded = ctc_decode(logits, self.codec, frames, collapse_repeats=self.decoding.collapse_repeats)
            for i, line in zip(chunk, decoded):
                results[i] = line
        return results  # type: ignore[return-value]

    def predict_lines(self, images: Sequence[Image.Image | str | Path]) -> list[DecodedLine]:
        """Images (PIL or paths) -> decoded lines with confidences, in input order."""
        return self.predict_tensors([self.preprocess(image) for image in images])

    def predict(self, images: Sequence[Image.Image | str | Path] | Image.Image) -> list[str]:
        """Images -> texts, in input order (a single image gives a one-element list)."""
        if isinstance(images, (Image.Image, str, Path)):
            images = [images]
        return [line.text for line in self.predict_lines(images)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m text_recognizer.recognizer",
        description="Read the text of handwritten line images.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("images", nargs="+", type=Path, help="image files, one text line each")
    parser.add_argument("--checkpoint", type=Path, default=None, help="model checkpoint (default: the bundled model)")
    parser.add_argument("--json", action="store_true", help="print a JSON list of {image, text, confidence}")
    parser.add_argument("--device", default="cpu", help="torch device")
    args = parser.parse_args(argv)
    try:
        recognizer = LineRecognizer(args.checkpoint, device=args.device)
        lines = recognizer.predict_lines(args.images)
    except (CheckpointError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([
            {"image": str(p), "text": line.text, "confidence": round(line.confidence, 4)}
            for p, line in zip(args.images, lines)
        ], indent=2))
    else:
        for line in lines:
            print(line.text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
