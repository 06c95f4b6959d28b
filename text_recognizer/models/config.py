"""Model hyper-parameters: one frozen dataclass, saved in every checkpoint as plain types."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from text_recognizer.metadata import MODEL_HEIGHT
from text_recognizer.models.stochastic_depth import MODES as SD_MODES
from text_recognizer.models.stochastic_depth import drop_probabilities

MODEL_KINDS = ("crnn", "line_cnn")


@dataclass(frozen=True)
class ModelConfig:
    """Everything needed to rebuild a model (the codec travels separately in the checkpoint)."""

    kind: str = field(default="crnn", metadata={
        "help": "crnn (window CNN + BiLSTM) or line_cnn (window CNN only)", "choices": MODEL_KINDS})
    height: int = field(default=MODEL_HEIGHT, metadata={"help": "input line height in pixels (the stem resizes to it)"})
    deslant: bool = field(default=False, metadata={
        "help": "the stem shears each line towards upright strokes (text_recognizer.stem.deslant_line) in "
                "training and reading alike; no weights, so a model can be fine-tuned with it switched on"})
    window_width: int = field(default=16, metadata={"help": "sliding-window width w in pixels"})
    window_stride: int = field(default=4, metadata={"help": "sliding-window stride s in pixels: T = (W - w) // s + 1"})
    shared_cnn: bool = field(default=True, metadata={
        "help": "run the conv stages once over the whole line and slide the window over their feature map "
                "(no recomputation of overlapping windows: ~4x less CNN work at w=16, s=4); "
                "false: one CNN per pixel window"})
    cnn_channels: tuple[int, ...] = field(default=(16, 32, 64), metadata={
        "help": "channels of the window CNN's conv stages (each halves the height; with --shared-cnn the first "
                "log2(s) also halve the width, otherwise each halves the window width)"})
    feature_dim: int = field(default=256, metadata={
        "help": "width of the per-window feature vector and of the encoder"})
    conv_blocks: int = field(default=2, metadata={"help": "residual temporal-conv blocks over the window sequence"})
    conv_kernel: int = field(default=5, metadata={"help": "kernel size of the temporal-conv blocks (odd)"})
    lstm_layers: int = field(default=2, metadata={"help": "residual BiLSTM blocks (crnn only)"})
    lstm_hidden: int = field(default=128, metadata={"help": "BiLSTM hidden size per direction"})
    dropout: float = field(default=0.1, metadata={"help": "dropout inside the encoder blocks and before the head"})
    num_classes: int = field(default=80, metadata={"help": "outputs per frame incl. the blank (set from the codec)"})
    stochastic_depth: float = field(default=0.0, metadata={
        "help": "stochastic depth: maximum drop probability of an encoder block in training, in [0, 1) "
                "(0: off; docs/regularisers.md)"})
    stochastic_depth_mode: str = field(default="linear", metadata={
        "help": "linear: block l (of the droppable ones) drops with l / L * p; uniform: every droppable block with p",
        "choices": SD_MODES})
    stochastic_depth_start: int = field(default=1, metadata={
        "help": "first encoder block (numbered from 1: conv1.., then lstm1..) that stochastic depth may drop"})

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"model kind must be one of {MODEL_KINDS}, got {self.kind!r}")
        object.__setattr__(self, "cnn_channels", tuple(int(c) for c in self.cnn_channels))
        checks = {
            "height": self.height >= 8,
            "window_width": self.window_width >= 2 ** len(self.cnn_channels),
            "window_stride": 1 <= self.window_stride,
            "cnn_channels": len(self.cnn_channels) >= 1 and min(self.cnn_channels) >= 1,
            "feature_dim": self.feature_dim >= 1,
            "conv_blocks": self.conv_blocks >= 0,
            "conv_kernel": self.conv_kernel >= 1 and self.conv_kernel % 2 == 1,
            "lstm_layers": self.lstm_layers >= 0,
            "lstm_hidden": self.lstm_hidden >= 1,
            "dropout": 0.0 <= self.dropout < 1.0,
            "num_classes": self.num_classes >= 2,
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"invalid model setting {name}={getattr(self, name)!r}")
        if self.height < 2 ** len(self.cnn_channels):
            raise ValueError(f"height {self.height} is too small for {len(self.cnn_channels)} pooling stages")
        if self.shared_cnn:
            s, w, stages = self.window_stride, self.window_width, len(self.cnn_channels)
            if s & (s - 1) or s > 2**stages or w % s:
                raise ValueError(
                    f"shared_cnn needs a window stride that is a power of two up to 2**{stages} (one per conv stage) "
                    f"and divides the window width; got w={w}, s={s} (or use --shared-cnn false)"
                )
        self.stochastic_depth_probs()  # validates the stochastic-depth settings against the block count

    @property
    def block_names(self) -> list[str]:
        """The encoder's residual blocks in order (``Encoder.block_names``): conv1.., then lstm1.. for a crnn."""
        lstm = self.lstm_layers if self.kind == "crnn" else 0
        return [f"conv{i + 1}" for i in range(self.conv_blocks)] + [f"lstm{i + 1}" for i in range(lstm)]

    @property
    def num_blocks(self) -> int:
        """Residual blocks in the encoder, numbered 1..num_blocks in ``block_names`` order."""
        return len(self.block_names)

    def stochastic_depth_probs(self) -> list[float]:
        """Drop probability of each encoder block in order (``text_recognizer.models.stochastic_depth``)."""
        return drop_probabilities(self.num_blocks, self.stochastic_depth, self.stochastic_depth_mode,
                                  self.stochastic_depth_start)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["cnn_channels"] = list(self.cnn_channels)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        data = dict(data)
        data.setdefault("shared_cnn", False)  # checkpoints made before the shared CNN existed used per-window CNNs
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown model settings {unknown}; was this checkpoint made by a newer version?")
        return cls(**data)
