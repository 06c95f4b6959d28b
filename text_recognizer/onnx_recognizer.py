"""Read lines with an exported ONNX model through ONNX Runtime, the same way ``LineRecognizer`` does.

Why: it is the reference for how an exported file is used (the stem, padding, decoding from the
file's own metadata), it checks exports against PyTorch on real lines, and it is what
``benchmarks/onnx_bench.py`` times. Only the network runs in ONNX Runtime; decoding is the same
``LineDecoder`` as PyTorch's, with the same decoder bundle (``text_recognizer.decoding.bundle``: language model,
tuned beam settings, confidence calibration), so texts, word and character positions and calibrated
confidences match ``LineRecognizer``'s, greedy or beam. ``training/export_model.py --format onnx``
writes the bundle beside the file (``model.onnx`` -> ``model.decoder.pt``). ``onnxruntime`` is an
optional dependency (``pip install -r requirements-onnx.txt``); PyTorch stays the default everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch
from PIL import Image

from text_recognizer.codec import Codec
from text_recognizer.data.folder import open_image
from text_recognizer.decoding.bundle import bundle_path, choose_bundle, load_bundle
from text_recognizer.decoding.decoder import DECODERS, Geometry, LineDecoder
from text_recognizer.decoding.greedy import DecodedLine, ctc_decode
from text_recognizer.decoding.readings import bundle_for_readings
from text_recognizer.export import METADATA_KEY
from text_recognizer.line_batches import LineReader, read_in_batches
from text_recognizer.stem import preprocess


class OnnxLineRecognizer(LineReader):
    """``predict``/``predict_lines`` over an ONNX file written by ``text_recognizer.export``.

    ``decoder``, ``decoder_bundle``, ``use_lm``, ``beam_options`` and ``readings`` mean what they mean
    for ``LineRecognizer``; the default bundle is the one exported beside the file, if any.
    """

    def __init__(self, path: str | Path, batch_size: int = 16, threads: int | None = None, decoder: str = "greedy",
                 decoder_bundle: str | Path | bool | None = None, use_lm: bool = True,
                 beam_options: dict | None = None, readings: int = 1):
        try:
            import onnxruntime
        except ImportError as error:
            raise ImportError("OnnxLineRecognizer needs onnxruntime: pip install -r requirements-onnx.txt") from error
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
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
        self.window_stride = int(self.metadata["window_stride"])
        self.deslant = bool(self.metadata.get("deslant", False))  # files exported before the option: off
        self.is_ctc = bool(self.metadata.get("collapse_repeats", True))
        self.batch_size = batch_size
        if decoder == "beam" and not self.is_ctc:
            raise ValueError(f"decoder='beam' needs a CTC model; {self.path} is a per-window (NLL) model")
        beside = bundle_path(self.path)
        exported = lambda: load_bundle(beside, self.codec) if beside.is_file() else None  # noqa: E731
        self.bundle = choose_bundle(decoder_bundle, exported, self.codec, lambda: self.metadata.get("model_sha256"),
                                    str(self.path))
        decode_with, self.shift = bundle_for_readings(self.bundle, readings, str(self.path))  # shift 0: one reading
        self.decoder = LineDecoder(self.codec, decoder, decode_with, use_lm=use_lm, **(beam_options or {}))

    def preprocess(self, image: Image.Image | str | Path) -> torch.Tensor:
        """The shared stem at this model's height: ``(1, H, W)``."""
        if isinstance(image, (str, Path)):
            image = open_image(Path(image))
        return preprocess(image, self.height, deslant=self.deslant)

    def predict_tensors(self, lines: Sequence[torch.Tensor],
                        image_sizes: Sequence[tuple[int, int]] | None = None) -> list[DecodedLine]:
        """Decode preprocessed ``(1, H, W)`` lines, batched by similar width, results in input order.

        ``image_sizes`` (original ``(width, height)`` per line) puts positions in the original images' pixels.
        """
        def log_probs_of(batch: torch.Tensor, widths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            log_probs, frames = self.session.run(None, {"images": batch.numpy(), "widths": widths.numpy()})
            return torch.from_numpy(log_probs), torch.from_numpy(frames)  # (N, T, C), (N,)

        def decode(log_probs: torch.Tensor, stem_width: int, size: tuple[int, int] | None) -> DecodedLine:
            if not self.is_ctc:  # per-window (NLL) baseline: every frame is a character
                return ctc_decode(log_probs[None], self.codec, collapse_repeats=False)[0]
            geometry = Geometry.for_line(self.height, self.window_width, self.window_stride, stem_width, size,
                                         centred=self.deslant)
            return self.decoder.decode(log_probs, geometry)

        return read_in_batches(lines, image_sizes, self.batch_size, log_probs_of, decode,
                               self.shift if self.is_ctc else 0, min_width=self.window_width)
