"""A small U-Net that maps a page to two per-pixel maps: where text lines are, and their cores.

Why these two maps (and not one): a line's *region* (its polygon, filled) is what page formats want, but
neighbouring lines' regions touch wherever ascenders meet descenders, so regions alone cannot tell lines
apart. A line's *core* (a thin band from its baseline up to about half its letters' height) never touches
the next line's core; cores count and separate the lines, regions give their outlines
(``text_recognizer.segmentation.vectorize``). The baseline is the core's lower edge.

Why this size: the network must run in well under a second on two CPU cores for a whole page, so it sees
the page at ``metadata``-free working resolution (``learned.WORK_SIDE`` px on the long side) and answers at
half that resolution; the widest layers work at 1/32 of the input, so one output pixel sees a few line
heights around it, enough to know a descender from the next line's ascender.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn import functional as F

#: Output channels, in order.
CHANNELS = ("region", "core")


@dataclass(frozen=True)
class UNetConfig:
    """Layer widths per level: level 0 works at 1/2 of the input, each next level at half the previous."""

    widths: tuple[int, ...] = (12, 24, 48, 64, 96)

    def to_dict(self) -> dict:
        return {"widths": list(self.widths)}

    @classmethod
    def from_dict(cls, data: dict) -> UNetConfig:
        return cls(widths=tuple(int(width) for width in data.get("widths", asdict(cls())["widths"])))


def _block(inputs: int, outputs: int) -> nn.Sequential:
    """Two 3x3 convolutions with batch norm and ReLU."""
    return nn.Sequential(
        nn.Conv2d(inputs, outputs, 3, padding=1, bias=False), nn.BatchNorm2d(outputs), nn.ReLU(inplace=True),
        nn.Conv2d(outputs, outputs, 3, padding=1, bias=False), nn.BatchNorm2d(outputs), nn.ReLU(inplace=True),
    )


class LineUNet(nn.Module):
    """``(B, 1, H, W)`` page, ink high, H and W multiples of ``stride`` -> ``(B, 2, H/2, W/2)`` logits
    (``CHANNELS``: region, core)."""

    def __init__(self, config: UNetConfig = UNetConfig()):
        super().__init__()
        widths = config.widths
        if len(widths) < 2 or any(width < 1 for width in widths):
            raise ValueError(f"UNetConfig.widths must hold at least 2 positive widths, got {widths}")
        self.config = config
        self.stem = nn.Sequential(nn.Conv2d(1, widths[0], 3, stride=2, padding=1, bias=False),
                                  nn.BatchNorm2d(widths[0]), nn.ReLU(inplace=True))
        self.down = nn.ModuleList([_block(widths[0], widths[0])] +
                                  [_block(a, b) for a, b in zip(widths[:-1], widths[1:])])
        self.up = nn.ModuleList([_block(b + a, a) for a, b in zip(widths[:-1], widths[1:])])
        self.head = nn.Conv2d(widths[0], len(CHANNELS), 1)

    @property
    def stride(self) -> int:
        """Input sides must be multiples of this."""
        return 2 ** len(self.config.widths)

    def forward(self, pages: torch.Tensor) -> torch.Tensor:
        x = self.stem(pages)  # (B, w0, H/2, W/2)
        skips = []
        for level, block in enumerate(self.down):
            if level:
                x = F.max_pool2d(x, 2)  # (B, w[level-1], H/2^(level+1), W/2^(level+1))
            x = block(x)  # (B, w[level], H/2^(level+1), W/2^(level+1))
            skips.append(x)
        for level in reversed(range(len(self.up))):
            skip = skips[level]
            x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)  # (B, w[level+1], h, w)
            x = self.up[level](torch.cat([skip, x], dim=1))  # (B, w[level], h, w) at 1/2^(level+1)
        return self.head(x)  # (B, 2, H/2, W/2)
