"""Tests for text_recognizer.models: window geometry, LineCNN/CRNN shapes, encoder blocks, config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from text_recognizer.models.blocks import ConvBlock, Encoder, LSTMBlock
from text_recognizer.models.config import MODEL_KINDS, ModelConfig
from text_recognizer.models.crnn import CRNN, build_model
from text_recognizer.models.line_cnn import LineCNN, WindowGeometry

SMALL = dict(height=16, window_width=16, window_stride=4, cnn_channels=(4, 8), feature_dim=16,
             conv_blocks=1, conv_kernel=3, lstm_layers=1, lstm_hidden=8, num_classes=7)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"


def small(kind: str, **overrides) -> ModelConfig:
    return ModelConfig(kind=kind, **{**SMALL, **overrides})


# ---------------------------------------------------------------------------------------------
# WindowGeometry
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("width", "stride", "image_width", "frames"),
    [
        (16, 4, 0, 1),
        (16, 4, 1, 1),
        (16, 4, 8, 1),  # narrower than the window: padded to one window
        (16, 4, 15, 1),
        (16, 4, 16, 1),
        (16, 4, 17, 1),
        (16, 4, 19, 1),
        (16, 4, 20, 2),
        (16, 4, 100, 22),
        (16, 4, 333, 80),
        (8, 2, 8, 1),
        (8, 2, 9, 1),
        (8, 2, 10, 2),
        (8, 8, 64, 8),
        (5, 1, 12, 8),
    ],
)
def test_num_frames(width: int, stride: int, image_width: int, frames: int) -> None:
    geometry = WindowGeometry(width, stride)
    assert geometry.num_frames(image_width) == frames
    assert geometry.frames(torch.tensor([image_width])).tolist() == [frames]


def test_frames_vectorised_matches_num_frames() -> None:
    geometry = WindowGeometry(16, 4)
    widths = torch.arange(0, 200)
    frames = geometry.frames(widths)
    assert frames.dtype == torch.int64
    assert frames.tolist() == [geometry.num_frames(w) for w in range(200)]
    # the formula from the design notes, where the image is at least one window wide
    assert all(geometry.num_frames(w) == (w - 16) // 4 + 1 for w in range(16, 200))


@pytest.mark.parametrize(("width", "stride"), [(16, 4), (8, 2), (12, 3), (8, 8)])
def test_min_width_is_the_narrowest(width: int, stride: int) -> None:
    geometry = WindowGeometry(width, stride)
    assert geometry.min_width(0) == width
    assert geometry.min_width(1) == width
    for frames in range(1, 30):
        w = geometry.min_width(frames)
        assert geometry.num_frames(w) >= frames
        if frames > 1:
            assert geometry.num_frames(w - 1) < frames


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=[(kind, shared) for kind in MODEL_KINDS for shared in (True, False)],
                ids=lambda p: f"{p[0]}-{'shared' if p[1] else 'per_window'}")
def model(request) -> torch.nn.Module:
    kind, shared = request.param
    torch.manual_seed(0)
    return build_model(small(kind, shared_cnn=shared)).eval()


@pytest.mark.parametrize("width", [1, 8, 15, 16, 17, 19, 20, 100, 333])
def test_output_lengths_equal_logits_frames(model: LineCNN, width: int) -> None:
    images = torch.rand(2, 1, 16, width)
    with torch.no_grad():
        logits = model(images)  # (B, T, C)
    assert logits.shape == (2, model.output_lengths(torch.tensor([width])).item(), 7)
    assert model.output_lengths(torch.tensor([width, width])).tolist() == [logits.shape[1]] * 2
    assert torch.isfinite(logits).all()


def test_default_config_geometry_matches_logits() -> None:
    torch.manual_seed(0)
    config = ModelConfig(feature_dim=32, lstm_hidden=8, lstm_layers=1, conv_blocks=1)
    model = build_model(config).eval()
    assert model.geometry == WindowGeometry(16, 4)
    for width in (8, 101):
        with torch.no_grad():
            logits = model(torch.rand(1, 1, config.height, width))
        assert logits.shape == (1, WindowGeometry(16, 4).num_frames(width), 80)


def test_batch_of_different_widths_padded(model: LineCNN) -> None:
    widths = torch.tensor([100, 37, 8])
    images = torch.zeros(3, 1, 16, 100)
    for i, w in enumerate(widths.tolist()):
        images[i, :, :, :w] = torch.rand(1, 16, w)
    with torch.no_grad():
        logits = model(images)  # (B, T, C)
    lengths = model.output_lengths(widths)
    assert logits.shape[:2] == (3, int(lengths.max()))
    assert (lengths <= logits.shape[1]).all()


@pytest.mark.parametrize("width", [37, 38, 39, 40, 8])
def test_window_features_unaffected_by_right_padding(model: LineCNN, width: int) -> None:
    # padding the batch wider (with the true width given) changes no valid frame
    image = torch.rand(1, 1, 16, width)
    padded = torch.nn.functional.pad(image, (0, 40))
    frames = model.output_lengths(torch.tensor([width])).item()
    assert frames == (max(width, 16) - 16) // 4 + 1
    with torch.no_grad():
        a = model.features(image)  # (1, T, D)
        b = model.features(padded, torch.tensor([width]))  # (1, T', D)
        noisy = padded.clone()
        noisy[..., width:] = torch.rand_like(noisy[..., width:])  # garbage past the width is ignored too
        c = model.features(noisy, torch.tensor([width]))
    assert a.shape[1] == frames
    torch.testing.assert_close(a, b[:, :frames])
    torch.testing.assert_close(a, c[:, :frames])


def test_shared_cnn_sees_context_beyond_its_window() -> None:
    # the shared CNN's convolutions reach past the window edge; the per-window CNN's never do
    image = torch.rand(1, 1, 16, 64)
    changed = image.clone()
    changed[..., 16:18] = 1.0 - changed[..., 16:18]  # just right of window 0 (pixels 0..15)
    for shared, differs in ((True, True), (False, False)):
        torch.manual_seed(0)
        model = build_model(small("line_cnn", shared_cnn=shared)).eval()
        with torch.no_grad():
            a, b = model.features(image)[0, 0], model.features(changed)[0, 0]
        assert (not torch.allclose(a, b)) == differs


def test_shared_cnn_is_cheaper() -> None:
    # same geometry and output, a quarter of the pixels through the conv stages at w=16, s=4
    config = small("line_cnn", shared_cnn=True)
    shared, per_window = build_model(config), build_model(small("line_cnn", shared_cnn=False))
    counts = {}
    for name, model in (("shared", shared), ("per_window", per_window)):
        seen = []
        hook = model.window_cnn.conv[0].register_forward_hook(lambda m, i, o, seen=seen: seen.append(i[0].numel()))
        with torch.no_grad():
            model(torch.rand(1, 1, 16, 400))
        hook.remove()
        counts[name] = seen[0]
    assert counts["per_window"] / counts["shared"] == pytest.approx(97 * 16 / 400, rel=1e-6)


@pytest.mark.parametrize(("width", "stride", "channels"),
                         [(16, 3, (4, 8)), (16, 8, (4, 8)), (12, 8, (4, 8, 8)), (10, 4, (4, 8))])
def test_shared_cnn_geometry_errors(width: int, stride: int, channels: tuple) -> None:
    with pytest.raises(ValueError, match="shared_cnn"):
        small("line_cnn", window_width=width, window_stride=stride, cnn_channels=channels, height=32)
    small("line_cnn", window_width=width, window_stride=stride, cnn_channels=channels, height=32, shared_cnn=False)


def test_windows_are_the_image_columns(model: LineCNN) -> None:
    image = torch.arange(16 * 20, dtype=torch.float32).view(1, 1, 16, 20)
    windows = model.windows(image)  # (B, T, 1, H, w)
    assert windows.shape == (1, 2, 1, 16, 16)
    for t in range(2):
        assert torch.equal(windows[0, t], image[0, :, :, 4 * t : 4 * t + 16])
    narrow = model.windows(image[..., :5])  # padded with zeros to one window
    assert narrow.shape == (1, 1, 1, 16, 16)
    assert torch.equal(narrow[0, 0, :, :, :5], image[0, :, :, :5]) and not narrow[0, 0, :, :, 5:].any()


def test_gradients_flow(model: LineCNN) -> None:
    model.train()
    try:
        logits = model(torch.rand(2, 1, 16, 40))
        logits.sum().backward()
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        assert all(g is not None and torch.isfinite(g).all() for g in grads)
    finally:
        model.zero_grad(set_to_none=True)
        model.eval()


@pytest.mark.parametrize(
    ("shape", "match"),
    [((2, 1, 15, 40), "16 px high"), ((2, 1, 32, 40), "16 px high"), ((2, 3, 16, 40), r"\(B, 1, H, W\)"),
     ((1, 16, 40), r"\(B, 1, H, W\)")],
)
def test_wrong_input_shape_raises(model: LineCNN, shape, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        model(torch.rand(*shape))


def test_build_model_kinds() -> None:
    assert type(build_model(small("line_cnn"))) is LineCNN
    assert type(build_model(small("crnn"))) is CRNN
    with pytest.raises(ValueError, match="kind='crnn'"):
        CRNN(small("line_cnn"))
    with pytest.raises(ValueError, match="kind='line_cnn'"):
        LineCNN(small("crnn"))


# ---------------------------------------------------------------------------------------------
# Encoder
# ---------------------------------------------------------------------------------------------


def test_encoder_block_names() -> None:
    crnn = build_model(small("crnn", conv_blocks=2, lstm_layers=3)).encoder
    assert crnn.block_names == ["conv1", "conv2", "lstm1", "lstm2", "lstm3"]
    assert all(isinstance(crnn.blocks[n], ConvBlock) for n in ("conv1", "conv2"))
    assert isinstance(crnn.blocks["lstm3"], LSTMBlock)
    # line_cnn never has LSTM blocks, whatever lstm_layers says
    assert build_model(small("line_cnn", conv_blocks=2, lstm_layers=3)).encoder.block_names == ["conv1", "conv2"]
    assert build_model(small("crnn", conv_blocks=0, lstm_layers=1)).encoder.block_names == ["lstm1"]
    assert build_model(small("crnn", conv_blocks=0, lstm_layers=0)).encoder.block_names == []
    for kind in MODEL_KINDS:  # the model's blocks are the ones its config names, in order
        config = small(kind, conv_blocks=2, lstm_layers=2)
        assert build_model(config).encoder.block_names == config.block_names


def test_encoder_runs_the_blocks_it_is_given() -> None:
    torch.manual_seed(0)
    blocks = {"conv1": ConvBlock(16, 3, 0.0)}
    encoder = Encoder(blocks, 16).eval()
    x, lengths = torch.randn(2, 9, 16), torch.tensor([9, 5])
    with torch.no_grad():
        assert torch.equal(encoder(x, lengths), encoder.norm(blocks["conv1"](x, lengths)))


def test_blocks_are_residual_and_keep_shape() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 9, 16)
    lengths = torch.tensor([9, 5])
    for block in (ConvBlock(16, 3, 0.0), LSTMBlock(16, 8, 0.0)):
        block.eval()
        with torch.no_grad():
            y = block(x, lengths)
            assert y.shape == x.shape
            torch.testing.assert_close(y, x + block.branch(x, lengths))


@pytest.mark.parametrize("shared", [True, False])
def test_padding_never_reaches_valid_frames(shared: bool) -> None:
    """A line decodes the same alone and padded inside a batch with a wider line."""
    torch.manual_seed(0)
    model = build_model(small("crnn", conv_blocks=2, lstm_layers=1, shared_cnn=shared)).eval()
    short, wide = torch.rand(1, 1, 16, 60), torch.rand(1, 1, 16, 200)
    batch = torch.zeros(2, 1, 16, 200)
    batch[0, :, :, :60], batch[1] = short[0], wide[0]
    with torch.no_grad():
        alone, together = model(short), model(batch, torch.tensor([60, 200]))
    torch.testing.assert_close(together[0, : alone.shape[1]], alone[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(together[1], model(wide)[0], atol=1e-5, rtol=1e-5)


def test_model_encoder_names() -> None:
    assert build_model(small("crnn", conv_blocks=2, lstm_layers=2)).encoder.block_names == [
        "conv1", "conv2", "lstm1", "lstm2"]


# ---------------------------------------------------------------------------------------------
# ModelConfig
# ---------------------------------------------------------------------------------------------


def test_config_defaults() -> None:
    config = ModelConfig()
    assert config.kind == "crnn" and config.num_classes == 80
    assert isinstance(config.cnn_channels, tuple)


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_config_round_trip(kind: str) -> None:
    config = small(kind, dropout=0.25)
    data = config.to_dict()
    assert isinstance(data["cnn_channels"], list)
    assert ModelConfig.from_dict(data) == config
    # plain types: survives JSON
    assert ModelConfig.from_dict(json.loads(json.dumps(data))) == config


def test_cnn_channels_normalised_to_int_tuple() -> None:
    config = ModelConfig(cnn_channels=[8, 16])
    assert config.cnn_channels == (8, 16)


def test_from_dict_unknown_key() -> None:
    data = ModelConfig().to_dict()
    data["attention_heads"] = 4
    with pytest.raises(ValueError, match="attention_heads"):
        ModelConfig.from_dict(data)


def test_from_dict_partial_uses_defaults() -> None:
    assert ModelConfig.from_dict({"kind": "line_cnn", "shared_cnn": True}) == ModelConfig(kind="line_cnn")


def test_from_dict_without_shared_cnn_is_an_old_per_window_checkpoint() -> None:
    # checkpoints written before shared_cnn existed hold per-window CNN weights
    data = ModelConfig().to_dict()
    del data["shared_cnn"]
    assert ModelConfig.from_dict(data) == ModelConfig(shared_cnn=False)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"kind": "transformer"}, "model kind"),
        ({"height": 7}, "height"),
        ({"height": 8, "cnn_channels": (4, 4, 4, 4)}, "height"),
        ({"window_width": 4}, "window_width"),  # < 2 ** 3 pooling stages
        ({"window_stride": 0}, "window_stride"),
        ({"cnn_channels": ()}, "cnn_channels"),
        ({"cnn_channels": (8, 0)}, "cnn_channels"),
        ({"feature_dim": 0}, "feature_dim"),
        ({"conv_blocks": -1}, "conv_blocks"),
        ({"conv_kernel": 4}, "conv_kernel"),
        ({"conv_kernel": 0}, "conv_kernel"),
        ({"lstm_layers": -1}, "lstm_layers"),
        ({"lstm_hidden": 0}, "lstm_hidden"),
        ({"dropout": 1.0}, "dropout"),
        ({"dropout": -0.1}, "dropout"),
        ({"num_classes": 1}, "num_classes"),
    ],
)
def test_config_validation(overrides: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ModelConfig(**overrides)


def test_config_is_frozen() -> None:
    with pytest.raises(AttributeError):
        ModelConfig().height = 32  # type: ignore[misc]


def test_lstm_block_equals_a_packed_bidirectional_lstm() -> None:
    # the two one-way LSTMs reproduce PyTorch's packed BiLSTM, and load its weights (older checkpoints)
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    torch.manual_seed(0)
    bi = torch.nn.LSTM(16, 8, batch_first=True, bidirectional=True)
    block = LSTMBlock(16, 8, 0.0).eval()
    old_state = {f"lstm.{k}": v for k, v in bi.state_dict().items()}
    old_state.update({k: v for k, v in block.state_dict().items() if "lstm" not in k})
    block.load_state_dict(old_state)
    torch.testing.assert_close(block.backward_lstm.weight_hh_l0, bi.weight_hh_l0_reverse)
    x, lengths = torch.randn(3, 11, 16), torch.tensor([11, 4, 7])
    with torch.no_grad():
        ours = block.branch(x, lengths)
        normed = block.norm(x)
        packed, _ = bi(pack_padded_sequence(normed, lengths, batch_first=True, enforce_sorted=False))
        theirs, _ = pad_packed_sequence(packed, batch_first=True, total_length=11)
        theirs = block.project(theirs)
    for b, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(ours[b, :n], theirs[b, :n], atol=1e-6, rtol=1e-5)


def test_reverse_within_keeps_padding_in_place() -> None:
    from text_recognizer.models.blocks import reverse_within

    x = torch.arange(10.0).view(2, 5, 1)
    out = reverse_within(x, torch.tensor([3, 5]))
    assert out[:, :, 0].tolist() == [[2, 1, 0, 3, 4], [9, 8, 7, 6, 5]]
    assert torch.equal(reverse_within(out, torch.tensor([3, 5])), x)


def test_reverse_within_full_lengths_is_a_flip_and_traces_the_general_path() -> None:
    from text_recognizer.models.blocks import all_full, reverse_within

    x = torch.randn(2, 6, 3)
    full = torch.tensor([6, 6])
    assert all_full(full, 6) and not all_full(torch.tensor([6, 5]), 6)
    assert torch.equal(reverse_within(x, full), x.flip(1))
    traced = torch.jit.trace(reverse_within, (x, full), check_trace=False)
    assert "gather" in str(traced.graph)  # not the flip: the trace must hold for padded batches too
    assert torch.equal(traced(x, torch.tensor([6, 4]))[1], reverse_within(x, torch.tensor([6, 4]))[1])


def test_models_saved_before_the_encoder_rework_load_and_predict_the_same() -> None:
    """State dicts of the earlier model structure (Encoder building the LSTM blocks itself) keep their
    keys: ``small_models_v1.pt`` holds a small CRNN and LineCNN, an input and their logits then."""
    saved = torch.load(FIXTURES / "small_models_v1.pt", weights_only=True)
    for kind, entry in saved.items():
        model = build_model(ModelConfig.from_dict(entry["config"])).eval()
        model.load_state_dict(entry["state"])  # strict: same keys, same shapes
        with torch.no_grad():
            logits = model(entry["images"], entry["widths"])
        torch.testing.assert_close(logits, entry["logits"], rtol=1e-5, atol=1e-6, msg=kind)
