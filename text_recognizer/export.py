"""Export a recognizer for use without this package: TorchScript or ONNX, with a dynamic batch and width.

Why: people deploy models outside Python (ONNX Runtime in C++, C#, Java, the browser) or without our
code (TorchScript). The exported graph takes what the shared stem produces and returns what a greedy
decoder needs:

- input ``images``: ``(B, 1, H, W)`` float32, ink high (1 = ink, 0 = paper), ``H`` the model's
  height, zero-padded on the right to the widest line, ``W >= window_width`` (pad narrow lines);
- input ``widths``: ``(B,)`` int64, each line's unpadded width;
- output ``log_probs``: ``(B, T, C)`` log-softmax over the blank (id 0) and the characters;
- output ``frames``: ``(B,)`` int64, the valid frames of each line, ``T = (W - w) // s + 1``.

Greedy decoding: argmax per frame over the first ``frames[b]`` frames, merge repeats, drop blanks,
map id ``k`` to ``charset[k - 1]``. The charset, height and window geometry travel inside the file:
ONNX ``metadata_props`` / TorchScript extra file ``text_recognizer.json`` (see :func:`export_metadata`),
with the sha256 of the checkpoint it came from. The recognizer's decoder bundle (language model, beam
settings, confidence calibration) is written beside the file (``model.onnx`` -> ``model.decoder.pt``; those
of other languages as ``model.<xx>.decoder.pt``), where ``OnnxLineRecognizer`` finds it, so an exported model
reads and scores lines as the checkpoint does.

The graph is traced from the model's own layers; only the sliding window is written differently:
``Tensor.unfold`` over a dynamic width has no ONNX export, so the windows are stacked slices of the
feature map (the same numbers; checked against PyTorch in the tests).
"""

from __future__ import annotations

import copy
import hashlib
import json
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from text_recognizer.codec import Codec
from text_recognizer.decoding.bundle import bundle_path, save_bundle
from text_recognizer.models.blocks import length_mask
from text_recognizer.models.config import ModelConfig

FORMATS = ("torchscript", "onnx")
METADATA_KEY = "text_recognizer"
INPUT_NAMES = ("images", "widths")
OUTPUT_NAMES = ("log_probs", "frames")
ONNX_OPSET = 17


def _slide(x: torch.Tensor, size: int, step: int) -> torch.Tensor:
    """``x.unfold(-1, size, step)`` as stacked slices with static bounds, which export to ONNX.

    ``(..., W) -> (..., T, size)`` with ``T = (W - size) // step + 1``. Slice ``j`` starts at ``j``
    and ends ``size - 1 - j`` columns before the end (a negative, static bound); with ``step > 1`` the
    width is first cut to the columns the windows use.
    """
    if step > 1:
        width = x.shape[-1]
        used = width - (width - size) % step  # (W - w) // s windows after the first, each s further
        x = x[..., :used]
    slices = [x[..., j : (j - size + 1) or None : step] for j in range(size)]  # each (..., T)
    return torch.stack(slices, dim=-1)  # (..., T, size)


def _zero_past(x: torch.Tensor, widths: torch.Tensor) -> torch.Tensor:
    """``x`` ``(B, C, H, W)`` with the columns past each line's width set to 0, as the model does."""
    valid = length_mask(widths, x.shape[-1], x.device)[:, None, None, :]  # (B, 1, 1, W)
    return x * valid.to(x.dtype)  # (B, C, H, W)


class ExportableRecognizer(nn.Module):
    """The model's forward pass for export: ``(images, widths) -> (log_probs, frames)``.

    It calls the model's own submodules (window CNN, encoder, head) in the order ``LineCNN.forward``
    does, and only replaces ``unfold`` by :func:`_slide`.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        # A copy, in eval mode: exporters put the module back in the mode they found it in, which for a
        # new wrapper is training mode; the caller's model must never be switched or have its
        # batch-norm statistics updated by an export.
        self.model = copy.deepcopy(model).eval()
        self.eval()

    def _features(self, images: torch.Tensor, widths: torch.Tensor) -> torch.Tensor:
        model = self.model
        cnn = model.window_cnn
        if model.config.shared_cnn:
            x = images  # (B, 1, H, W)
            widths = widths.clamp(min=model.geometry.width, max=images.shape[-1])
            for i, width_factor in enumerate(cnn.width_factors):
                x = cnn.conv[4 * i : 4 * i + 4](x)  # (B, c_i, H / 2^(i+1), W_i)
                widths = widths // width_factor
                x = _zero_past(x, widths)  # zero past each line's columns
            windows = _slide(x, cnn.window_columns, 1)  # (B, c, H', T, w/s)
            windows = windows.permute(0, 3, 1, 2, 4).flatten(2)  # (B, T, c * H' * w/s)
            return F.relu(cnn.project(windows))  # (B, T, D)
        windows = _slide(images, model.geometry.width, model.geometry.stride)  # (B, 1, H, T, w)
        windows = windows.permute(0, 3, 1, 2, 4)  # (B, T, 1, H, w)
        b, t = windows.shape[0], windows.shape[1]
        flat = windows.reshape(b * t, *windows.shape[2:])  # (B*T, 1, H, w)
        return cnn(flat).view(b, t, -1)  # (B, T, D)

    def forward(self, images: torch.Tensor, widths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        model = self.model
        widths = widths.clamp(max=images.shape[-1])  # (B,)
        frames = model.output_lengths(widths)  # (B,)
        images = _zero_past(images, widths)  # (B, 1, H, W)
        x = self._features(images, widths)  # (B, T, D)
        x = model.encoder(x, frames)  # (B, T, D)
        logits = model.head(x)  # (B, T, C)
        return logits.log_softmax(-1), frames


def export_metadata(config: ModelConfig, codec: Codec, loss: str = "ctc", extra: dict | None = None) -> dict:
    """What a reader of an exported file needs besides the graph (stored as JSON in the file)."""
    return {
        "format": "text_recognizer export 1",
        "charset": codec.charset,
        "blank_id": 0,
        "height": config.height,
        "window_width": config.window_width,
        "window_stride": config.window_stride,
        "deslant": config.deslant,
        "collapse_repeats": loss == "ctc",
        "inputs": "images (B,1,H,W) float32 ink-high zero-padded, W >= window_width; widths (B,) int64",
        "outputs": "log_probs (B,T,C) float32; frames (B,) int64",
        **(extra or {}),
    }


def _example(config: ModelConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Two lines of different widths (so the trace sees a padded batch), wider than any window."""
    width = max(200, 8 * config.window_width)
    images = torch.rand(2, 1, config.height, width)
    return images, torch.tensor([width, width * 2 // 3], dtype=torch.int64)


def export_torchscript(model: nn.Module, config: ModelConfig, codec: Codec, path: str | Path, loss: str = "ctc",
                       extra: dict | None = None) -> Path:
    """Trace the model into a TorchScript file loadable with ``torch.jit.load`` alone."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    module = ExportableRecognizer(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)  # shape checks fixed for W >= window
        traced = torch.jit.trace(module, _example(config), check_trace=False)
    meta = json.dumps(export_metadata(config, codec, loss, extra), ensure_ascii=False)
    torch.jit.save(traced, str(path), _extra_files={f"{METADATA_KEY}.json": meta})
    return path


def export_onnx(model: nn.Module, config: ModelConfig, codec: Codec, path: str | Path, loss: str = "ctc",
                extra: dict | None = None, opset: int = ONNX_OPSET) -> Path:
    """Export to ONNX with dynamic batch and width axes; the metadata goes into ``metadata_props``."""
    import onnx  # optional dependency: pip install -r requirements-onnx.txt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    module = ExportableRecognizer(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings on the (static) shape checks
        torch.onnx.export(
            module, _example(config), str(path), input_names=list(INPUT_NAMES), output_names=list(OUTPUT_NAMES),
            dynamic_axes={"images": {0: "batch", 3: "width"}, "widths": {0: "batch"},
                          "log_probs": {0: "batch", 1: "frames"}, "frames": {0: "batch"}},
            opset_version=opset, dynamo=False,
        )
    proto = onnx.load(str(path))
    entry = proto.metadata_props.add()
    entry.key, entry.value = METADATA_KEY, json.dumps(export_metadata(config, codec, loss, extra), ensure_ascii=False)
    onnx.checker.check_model(proto)
    onnx.save(proto, str(path))
    return path


def export_recognizer(recognizer, path: str | Path, fmt: str) -> Path:
    """Export a loaded ``LineRecognizer`` as ``fmt`` (``torchscript`` or ``onnx``)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    exporter = export_onnx if fmt == "onnx" else export_torchscript
    extra = {k: recognizer.metadata[k] for k in ("version", "licence", "val_cer") if k in recognizer.metadata}
    extra["model_sha256"] = hashlib.sha256(recognizer.path.read_bytes()).hexdigest()  # what bundles are tuned for
    path = exporter(recognizer.model.cpu().eval(), recognizer.config, recognizer.codec, path, recognizer.loss, extra)
    # LMs, beam settings and calibration travel beside the file: the primary bundle as model.decoder.pt, the
    # other languages' as model.<xx>.decoder.pt (where OnnxLineRecognizer looks for them)
    for number, (language, bundle) in enumerate(recognizer.decoders.bundles.bundles.items()):
        save_bundle(bundle, bundle_path(path, None if number == 0 else language))
    return path
