"""Read many preprocessed lines with one network: width-sorted batches, optional three readings, one
decoded line per input, in input order.

Why one loop: ``LineRecognizer`` (PyTorch) and ``OnnxLineRecognizer`` (ONNX Runtime) differ only in how
the network runs; batching by width (little padding), the three-readings copies and their mean, and
the frame -> image-pixel geometry of every line must be the same for both, so they live here once.
Positions come out in the original image's pixels whenever the caller gives the line's original size
(``text_recognizer.decoding.decoder.Geometry.for_line`` is the one place that maps frames to pixels).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from PIL import Image

from text_recognizer.data.folder import open_image
from text_recognizer.data.lines import pad_lines, width_sorted_chunks
from text_recognizer.decoding.greedy import DecodedLine
from text_recognizer.decoding.readings import mean_of_readings, with_shifted_copies
from text_recognizer.stem import oriented_size

#: ``(batch (N, 1, H, W), widths (N,)) -> (log-probabilities (N, T, C) on the CPU, valid frames (N,))``
LogProbsFn = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
#: ``(one line's valid log-probabilities (T, C), its stem width, its original (width, height) or None)``
DecodeFn = Callable[[torch.Tensor, int, "tuple[int, int] | None"], DecodedLine]


def read_in_batches(lines: Sequence[torch.Tensor], image_sizes: Sequence[tuple[int, int]] | None,
                    batch_size: int, log_probs_of: LogProbsFn, decode: DecodeFn, shift: int = 0,
                    min_width: int = 1) -> list[DecodedLine]:
    """Decode ``(1, H, W_i)`` stem outputs ``batch_size`` at a time in order of width.

    ``shift`` > 0 reads each line three times (as it is, moved ``shift`` px up and down) and decodes the
    mean of the three posteriors (``text_recognizer.decoding.readings``). ``min_width`` widens batches
    for networks that need at least one whole window.
    """
    if image_sizes is not None and len(image_sizes) != len(lines):
        raise ValueError(f"image_sizes has {len(image_sizes)} entries for {len(lines)} lines")
    results: list[DecodedLine | None] = [None] * len(lines)
    for chunk in width_sorted_chunks([line.shape[-1] for line in lines], batch_size):
        batch, widths = pad_lines([lines[i] for i in chunk], min_width=min_width)  # (B, 1, H, W), (B,)
        if shift:
            copies = with_shifted_copies(batch, shift)  # (3B, 1, H, W)
            log_probs, frames = log_probs_of(copies, widths.repeat(3))  # (3B, T, C), (3B,)
            log_probs, frames = mean_of_readings(log_probs, 3), frames[: len(chunk)]  # (B, T, C), (B,)
        else:
            log_probs, frames = log_probs_of(batch, widths)  # (B, T, C), (B,)
        for row, i in enumerate(chunk):
            size = image_sizes[i] if image_sizes is not None else None
            results[i] = decode(log_probs[row, : int(frames[row])], lines[i].shape[-1], size)
    return results  # type: ignore[return-value]


class LineReader:
    """What ``LineRecognizer`` and ``OnnxLineRecognizer`` share on top of their own ``preprocess`` (image ->
    ``(1, H, W)``) and ``predict_tensors(lines, image_sizes)``: reading images, with positions in their pixels."""

    def preprocess(self, image: Image.Image | str | Path) -> torch.Tensor:
        raise NotImplementedError

    def predict_tensors(self, lines: Sequence[torch.Tensor],
                        image_sizes: Sequence[tuple[int, int]] | None = None) -> list[DecodedLine]:
        raise NotImplementedError

    def predict_lines(self, images: Sequence[Image.Image | str | Path]) -> list[DecodedLine]:
        """Images (PIL or paths) -> decoded lines with confidences, words and characters, in input order;
        positions in each image's own pixels."""
        opened = [open_image(Path(image)) if isinstance(image, (str, Path)) else image for image in images]
        return self.predict_tensors([self.preprocess(image) for image in opened], [oriented_size(i) for i in opened])

    def predict(self, images: Sequence[Image.Image | str | Path] | Image.Image) -> list[str]:
        """Images -> texts, in input order (a single image gives a one-element list)."""
        if isinstance(images, (Image.Image, str, Path)):
            images = [images]
        return [line.text for line in self.predict_lines(images)]
