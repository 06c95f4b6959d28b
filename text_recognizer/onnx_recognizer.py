"""Read lines with an exported ONNX model through ONNX Runtime, the same way ``LineRecognizer`` does.

Why: it is the reference for how an exported file is used (the stem, padding, greedy decoding in
NumPy from the file's own metadata), it checks exports against PyTorch on real lines, and it is what
``benchmarks/onnx_bench.py`` times. ``onnxruntime`` is an optional dependency
(``pip install -r requirements-onnx.txt``); PyTorch stays the default everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from text_recognizer.codec import Codec
from text_recognizer.ctc.decode import DecodedLine, collapse
from text_recognizer.data.folder import open_image
from text_recognizer.data.lines import pad_lines, width_sorted_chunks
from text_recognizer.export import METADATA_KEY
from text_recognizer.stem import preprocess


def greedy_decode(log_probs: np.ndarray, frames: np.ndarray, codec: Codec,
                  collapse_repeats: bool = True) -> list[DecodedLine]:
    """NumPy greedy CTC decoding of ``(B, T, C)`` log-probabilities, as ``text_recognizer.ctc.decode``."""
    best = log_probs.argmax(-1)  # (B, T)
    best_log_prob = log_probs.max(-1)  # (B, T)
    lines = []
    for b in range(log_probs.shape[0]):
        n = int(frames[b])
        ids = best[b, :n].tolist()
        ids = collapse(ids) if collapse_repeats else [i for i in ids if i != 0]
        confidence = float(np.exp(best_log_prob[b, :n].astype(np.float64).mean())) if n > 0 else 0.0
        lines.append(DecodedLine(codec.decode(ids), confidence))
    return lines


class OnnxLineRecognizer:
    """``predict``/``predict_lines`` over an ONNX file written by ``text_recognizer.export``."""

    def __init__(self, path: str | Path, batch_size: int = 16, threads: int | None = None):
        try:
            import onnxruntime
        except ImportError as error:
            raise ImportError("OnnxLineRecognizer needs onnxruntime: pip install -r requirements-onnx.txt") from error
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.path = Path(path)
        if not self.path.is_file():
            raise ValueError(f"ONNX model {self.path} does not exist")
        options = onnxruntime.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        props = self.session.get_modelmeta().custom_metadata_map
        if METADATA_KEY not in props:
            raise ValueError(f"{self.path} has no {METADATA_KEY!r} metadata: not exported by text_recognizer.export")
        self.metadata = json.loads(props[METADATA_KEY])
        self.codec = Codec(self.metadata["charset"])
        self.height = int(self.metadata["height"])
        self.window_width = int(self.metadata["window_width"])
        self.batch_size = batch_size

    def preprocess(self, image: Image.Image | str | Path) -> torch.Tensor:
        if isinstance(image, (str, Path)):
            image = open_image(Path(image))
        return preprocess(image, self.height)

    def predict_tensors(self, lines: Sequence[torch.Tensor]) -> list[DecodedLine]:
        """Decode preprocessed ``(1, H, W)`` lines, batched by similar width, results in input order."""
        results: list[DecodedLine | None] = [None] * len(lines)
        for chunk in width_sorted_chunks([line.shape[-1] for line in lines], self.batch_size):
            batch, widths = pad_lines([lines[i] for i in chunk], min_width=self.window_width)  # (B, 1, H, W), (B,)
            feeds = {"images": batch.numpy(), "widths": widths.numpy().astype(np.int64)}
            log_probs, frames = self.session.run(None, feeds)
            decoded = greedy_decode(log_probs, frames, self.codec, self.metadata.get("collapse_repeats", True))
            for i, line in zip(chunk, decoded):
                results[i] = line
        return results  # type: ignore[return-value]

    def predict_lines(self, images: Sequence[Image.Image | str | Path]) -> list[DecodedLine]:
        return self.predict_tensors([self.preprocess(image) for image in images])

    def predict(self, images: Sequence[Image.Image | str | Path] | Image.Image) -> list[str]:
        if isinstance(images, (Image.Image, str, Path)):
            images = [images]
        return [line.text for line in self.predict_lines(images)]
