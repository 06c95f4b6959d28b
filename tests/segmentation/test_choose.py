"""Segmenters by name: learned (the default, bundled), classical, a weights file; clear errors otherwise."""

from __future__ import annotations

import pytest

from text_recognizer.segmentation.choose import default_name, load_segmenter
from text_recognizer.segmentation.classical import segment_page
from text_recognizer.segmentation.learned import LearnedSegmenter, default_segmenter_path, save_segmenter
from text_recognizer.segmentation.unet import LineUNet, UNetConfig


def test_names_and_files(tmp_path):
    assert default_name() == "learned"
    assert load_segmenter("classical") is segment_page
    assert isinstance(load_segmenter(), LearnedSegmenter)
    assert load_segmenter("learned") is load_segmenter(str(default_segmenter_path()))  # loaded once
    path = save_segmenter(tmp_path / "mine.pt", LineUNet(UNetConfig((4, 8))))
    assert load_segmenter(str(path)).model.config.widths == (4, 8)
    with pytest.raises(FileNotFoundError, match="neither one of learned, classical"):
        load_segmenter("kraken")
