"""Export round trips: TorchScript and ONNX (through ONNX Runtime) give PyTorch's log-probabilities on
fixed inputs of widths never seen at export, and the same greedy text on real lines.

Tolerances: TorchScript runs the same kernels, so it must match to 1e-5; ONNX Runtime has its own
kernels (different summation order in convolutions and LSTMs), so log-probabilities must match to 1e-3
absolute, which is far below what changes an argmax on these models (texts must be identical).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.data.folder import read_labels
from text_recognizer.decoding.bundle import bundle_path, load_bundle, save_bundle
from text_recognizer.export import ExportableRecognizer, _slide, export_onnx, export_recognizer, export_torchscript
from text_recognizer.models import ModelConfig, build_model
from text_recognizer.recognizer import DEFAULT_CHECKPOINT, LineRecognizer
from training.release.export_model import main as export_main

ort = pytest.importorskip("onnxruntime")

FIXTURES = Path(__file__).parent / "fixtures" / "lines"
TINY = dict(height=32, cnn_channels=(8, 16), feature_dim=48, lstm_hidden=24, conv_blocks=1, lstm_layers=1, dropout=0.0)
# (padded width, per-line widths): narrowest allowed (one window), widths not multiples of the stride, long lines
CASES = [(16, [16]), (517, [517, 100, 19]), (1003, [1003, 998])]


def fixed_batch(height: int, width: int, widths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(width)
    images = torch.rand(len(widths), 1, height, width, generator=generator)
    for row, w in enumerate(widths):
        images[row, :, :, w:] = 0  # padding is paper
    return images, torch.tensor(widths, dtype=torch.int64)


def trained_like(config: ModelConfig) -> torch.nn.Module:
    torch.manual_seed(0)
    model = build_model(config).eval()
    with torch.no_grad():  # non-trivial batch-norm statistics, as after training
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
    return model


def test_slide_equals_unfold():
    x = torch.arange(2 * 3 * 37, dtype=torch.float32).reshape(2, 3, 37)
    for size, step in [(4, 1), (16, 4), (5, 3), (37, 2)]:
        assert torch.equal(_slide(x, size, step), x.unfold(-1, size, step))


@pytest.mark.parametrize("kind, shared", [("crnn", True), ("crnn", False), ("line_cnn", True)])
def test_round_trip_on_fixed_inputs(tmp_path, kind, shared):
    config = ModelConfig(**TINY, kind=kind, shared_cnn=shared, num_classes=Codec().num_classes)
    model = trained_like(config)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    onnx_path = export_onnx(model, config, Codec(), tmp_path / "m.onnx")
    ts_path = export_torchscript(model, config, Codec(), tmp_path / "m.pt")
    assert not model.training  # exporting never switches the caller's model to training mode ...
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # ... nor updates its statistics
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    scripted = torch.jit.load(str(ts_path))
    for width, widths in CASES:
        images, lengths = fixed_batch(config.height, width, widths)
        with torch.no_grad():
            reference = model(images, lengths).log_softmax(-1)
            frames = model.output_lengths(lengths)
            wrapped, wrapped_frames = ExportableRecognizer(model)(images, lengths)
            ts_log_probs, ts_frames = scripted(images, lengths)
        onnx_log_probs, onnx_frames = session.run(None, {"images": images.numpy(), "widths": lengths.numpy()})
        assert torch.equal(wrapped, reference) and torch.equal(wrapped_frames, frames)
        assert torch.allclose(ts_log_probs, reference, atol=1e-5) and torch.equal(ts_frames, frames)
        assert onnx_log_probs.shape == tuple(reference.shape)
        assert np.abs(onnx_log_probs - reference.numpy()).max() < 1e-3
        assert onnx_frames.tolist() == frames.tolist()


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """The bundled model exported to ONNX once, with its decoder bundle beside it."""
    return export_recognizer(LineRecognizer(), tmp_path_factory.mktemp("onnx") / "default.onnx", "onnx")


def same_reading(ours, theirs) -> None:
    """Same texts, words and character boxes; confidences within ONNX Runtime's numeric tolerance."""
    assert [line.text for line in theirs] == [line.text for line in ours]
    assert max(abs(a.confidence - b.confidence) for a, b in zip(ours, theirs)) < 1e-3
    for a, b in zip(ours, theirs):
        assert [(w.text, w.start, w.end) for w in a.words] == [(w.text, w.start, w.end) for w in b.words]
        assert [(c.text, c.start, c.end) for c in a.chars] == [(c.text, c.start, c.end) for c in b.chars]
        assert max((abs(x.confidence - y.confidence) for x, y in zip(a.chars, b.chars)), default=0.0) < 1e-3


def test_bundled_model_onnx_reads_like_pytorch(exported):
    from text_recognizer.onnx_recognizer import OnnxLineRecognizer

    recognizer = LineRecognizer()
    assert bundle_path(exported).is_file()  # the LM, beam settings and calibration travel with the export
    onnx_recognizer = OnnxLineRecognizer(exported, batch_size=3)
    assert onnx_recognizer.bundle is not None and onnx_recognizer.decoder.calibration is not None
    assert onnx_recognizer.metadata["charset"] == recognizer.codec.charset
    assert onnx_recognizer.metadata["height"] == recognizer.height
    assert onnx_recognizer.metadata["deslant"] == recognizer.config.deslant  # the stem setting travels too
    assert onnx_recognizer.metadata["version"] == recognizer.metadata["version"]
    assert onnx_recognizer.metadata["model_sha256"] == hashlib.sha256(DEFAULT_CHECKPOINT.read_bytes()).hexdigest()
    images = [r.path for r in read_labels(FIXTURES)]
    ours = recognizer.predict_lines(images)
    same_reading(ours, onnx_recognizer.predict_lines(images))
    raw = OnnxLineRecognizer(exported, decoder_bundle=False).predict_lines(images)  # no bundle: raw confidences
    same_reading(LineRecognizer(decoder_bundle=False).predict_lines(images), raw)
    assert max(abs(a.confidence - b.confidence) for a, b in zip(ours, raw)) > 0.01  # calibration changes them


def test_onnx_beam_search_reads_like_pytorch(exported):
    from text_recognizer.onnx_recognizer import OnnxLineRecognizer

    images = [r.path for r in read_labels(FIXTURES)]
    ours = LineRecognizer(decoder="beam").predict_lines(images)
    theirs = OnnxLineRecognizer(exported, decoder="beam", beam_options={"beam_width": 8}).predict_lines(images)
    assert OnnxLineRecognizer(exported, decoder="beam").decoder.has_lm
    same_reading(LineRecognizer(decoder="beam", beam_options={"beam_width": 8}).predict_lines(images), theirs)
    same_reading(ours, OnnxLineRecognizer(exported, decoder="beam").predict_lines(images))  # the tuned width


def test_onnx_reads_three_times_like_pytorch(exported):
    from text_recognizer.onnx_recognizer import OnnxLineRecognizer

    images = [r.path for r in read_labels(FIXTURES)]
    for decoder in ("greedy", "beam"):
        ours = LineRecognizer(decoder=decoder, readings=3).predict_lines(images)
        theirs = OnnxLineRecognizer(exported, decoder=decoder, readings=3, batch_size=2).predict_lines(images)
        same_reading(ours, theirs)  # the bundle's settings for three readings travelled with the export
    once = OnnxLineRecognizer(exported, decoder="beam").predict_lines(images)
    assert max(abs(a.confidence - b.confidence) for a, b in zip(once, theirs)) > 0  # it did read differently


def test_a_bundle_tuned_for_another_model_warns(exported, tmp_path):
    from text_recognizer.onnx_recognizer import OnnxLineRecognizer

    bundle = load_bundle(bundle_path(exported))
    other = save_bundle({**bundle, "model_sha256": "0" * 64}, tmp_path / "other.decoder.pt")
    with pytest.warns(UserWarning, match="tuned and calibrated for another model"):
        OnnxLineRecognizer(exported, decoder_bundle=other)
    with pytest.warns(UserWarning, match="tuned and calibrated for another model"):
        LineRecognizer(decoder_bundle=other)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its own bundle: no warning
        OnnxLineRecognizer(exported)
    with pytest.raises(ValueError, match="decoder must be one of"):
        OnnxLineRecognizer(exported, decoder="viterbi")


def test_export_model_command_formats(tmp_path, capsys):
    assert export_main([str(DEFAULT_CHECKPOINT), str(tmp_path / "m.pt"), "--format", "torchscript",
                        "--version", "v-test"]) == 0
    assert "torchscript" in capsys.readouterr().out
    files = {"text_recognizer.json": ""}
    module = torch.jit.load(str(tmp_path / "m.pt"), _extra_files=files)
    meta = json.loads(files["text_recognizer.json"])
    assert meta["version"] == "v-test" and meta["charset"] == load_checkpoint(DEFAULT_CHECKPOINT).codec.charset
    assert meta["blank_id"] == 0
    recognizer = LineRecognizer()
    line = recognizer.preprocess(FIXTURES / "line_00.png")
    log_probs, frames = module(line[None], torch.tensor([line.shape[-1]]))
    ids = log_probs[0, : int(frames[0])].argmax(-1).tolist()
    text = "".join(meta["charset"][i - 1] for j, i in enumerate(ids) if i and (j == 0 or ids[j - 1] != i))
    assert text == recognizer.predict([FIXTURES / "line_00.png"])[0]  # decoded without our code
    assert export_main([str(tmp_path / "missing.pt"), str(tmp_path / "x.onnx"), "--format", "onnx"]) == 2
    assert "missing.pt" in capsys.readouterr().err


def test_recognizer_cli_with_onnx_runtime(exported, capsys):
    from text_recognizer.recognizer import main as recognize_main

    path = exported
    assert recognize_main([str(FIXTURES), "--format", "jsonl", "--progress", "never"]) == 0
    with_torch = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert recognize_main([str(FIXTURES), "--onnx", str(path), "--format", "jsonl", "--progress", "never"]) == 0
    with_onnx = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in with_onnx] == [r["text"] for r in with_torch] and len(with_onnx) == 8
    assert all(abs(a["confidence"] - b["confidence"]) < 1e-3 for a, b in zip(with_onnx, with_torch))
    assert recognize_main([str(FIXTURES), "--onnx", str(path), "--decoder", "beam", "--format", "jsonl",
                           "--progress", "never"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 8
    assert recognize_main([str(FIXTURES), "--onnx", str(path.with_name("nope.onnx"))]) == 2
    assert "nope.onnx does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        recognize_main([str(FIXTURES), "--onnx", str(path), "--checkpoint", str(DEFAULT_CHECKPOINT)])


def test_bad_format_and_missing_onnx_file(tmp_path):
    from text_recognizer.onnx_recognizer import OnnxLineRecognizer

    with pytest.raises(ValueError, match="format must be one of"):
        export_recognizer(LineRecognizer(), tmp_path / "m.x", "tflite")
    with pytest.raises(ValueError, match="does not exist"):
        OnnxLineRecognizer(tmp_path / "missing.onnx")
    with pytest.raises(ValueError, match="batch_size"):
        OnnxLineRecognizer(tmp_path / "missing.onnx", batch_size=0)
