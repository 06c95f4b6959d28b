"""Read lines with an exported ONNX model through ONNX Runtime, the same way ``LineRecognizer`` does.

Why: it is the reference for how an exported file is used (the stem, padding, decoding from the
file's own metadata), it checks exports against PyTorch on real lines, and it is what
``benchmarks/onnx_bench.py`` times. Only the network runs in ONNX Runtime; decoding is the same
``LineDecoder`` as PyTorch's, with the same decoder bundle (``text_recognizer.decoding.bundle``: language model,
tuned beam settings, confidence calibration), so texts, word and character positions and calibrated
confidences match ``LineRecognizer``'s, greedy or beam. ``training/release/export_model.py --format onnx``
writes the bundle beside the file (``model.onnx`` -> ``model.decoder.pt``). ``onnxruntime`` is an
optional dependency (``pip install -r requirements-onnx.txt``); PyTorch stays the default everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from PIL import Image

from text_recognizer.codec import Codec
from text_recognizer.data.folder import open_image
from text_recognizer.decoding.bundle_set import BundleSet
from text_recognizer.decoding.decoder import Geometry
from text_recognizer.decoding.line_decoders import LanguageDecoders
from text_recognizer.decoding.names import DECODERS
from text_recognizer.export import METADATA_KEY
from text_recognizer.line_batches import LineReader
from text_recognizer.stem import preprocess


class OnnxLineRecognizer(LineReader):
    """``predict``/``predict_lines`` over an ONNX file written by ``text_recognizer.export``.

    ``decoder``, ``decoder_bundle``, ``use_lm``, ``beam_options``, ``readings`` and ``language`` mean what they
    mean for ``LineRecognizer``; the default bundles are those exported beside the file (``model.decoder.pt``,
    ``model.<xx>.decoder.pt``), if any.
    """

    def __init__(self, path: str | Path, batch_size: int = 16, threads: int | None = None, decoder: str = "greedy",
                 decoder_bundle: str | Path | bool | None = None, use_lm: bool = True,
                 beam_options: dict | None = None, readings: int = 1, language: str | None = None):
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
        self.min_width = self.window_width
        bundles = BundleSet.for_model(decoder_bundle, self.path, None, self.codec,
                                      lambda: self.metadata.get("model_sha256"))
        self.decoders = LanguageDecoders(self.codec, bundles, decoder, readings, language, use_lm, beam_options)
        self.bundle = bundles.primary
        self.decoder = self.decoders.default
        self.shift = self.decoders.view(readings, self.decoders.language)[1]  # 0: one reading

    def preprocess(self, image: Image.Image | str | Path) -> torch.Tensor:
        """The shared stem at this model's height: ``(1, H, W)``."""
        if isinstance(image, (str, Path)):
            image = open_image(Path(image))
        return preprocess(image, self.height, deslant=self.deslant)

    def log_probs_of(self, batch: torch.Tensor, widths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The exported network on a padded ``(N, 1, H, W)`` batch: ``(N, T, C)`` log-probabilities, frames ``(N,)``."""
        log_probs, frames = self.session.run(None, {"images": batch.numpy(), "widths": widths.numpy()})
        return torch.from_numpy(log_probs), torch.from_numpy(frames)  # (N, T, C), (N,)

    def geometry(self, stem_width: int, image_size: tuple[int, int] | None = None) -> Geometry:
        """Frame -> pixel mapping for a line; ``image_size`` (original width, height) scales it back."""
        return Geometry.for_line(self.height, self.window_width, self.window_stride, stem_width, image_size,
                                 centred=self.deslant)
