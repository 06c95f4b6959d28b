"""Line crops: white images are skipped, a long crop is cut at a word gap, and a joined crop keeps
both baselines on one row."""

from __future__ import annotations

import numpy as np
from PIL import Image

from text_recognizer.segmentation.synthetic import compose_page
from text_recognizer.segmentation.synthetic.crops import crops, join, prefix


def test_white_images_are_not_placed(lines):
    white = Image.new("L", (800, 64), 255)
    assert compose_page([white] * 5, np.random.default_rng(0), page_width=1000).lines == ()
    page = compose_page([white, lines[0], white], np.random.default_rng(0), page_width=1000)
    assert len(page.lines) == 1


def test_crops_are_inverted_and_trimmed(lines):
    ((ink, band),) = list(crops([Image.new("L", (50, 64), 255), lines[0]]))
    assert ink.dtype == np.uint8 and ink.shape[0] == 64
    assert ink[:, 0].max() > 0 and ink[:, -1].max() > 0  # trimmed to the ink columns
    assert band == 46  # the bottom of the drawn x-height band (rows 26-45)


def test_prefix_ends_at_a_word_gap():
    ink = np.zeros((20, 100), np.uint8)
    ink[5:15, 0:30] = ink[5:15, 40:70] = ink[5:15, 80:100] = 255  # three words, gaps of 10 columns
    assert prefix(ink, 100) is ink
    assert prefix(ink, 75).shape[1] == 70
    assert prefix(ink, 35).shape[1] == 30
    assert prefix(ink, 20).shape[1] == 20  # the first word alone is too wide: a hard cut
    assert prefix(ink, 0.5) is None


def test_join_meets_the_baselines():
    ink = np.zeros((20, 30), np.uint8)
    ink[5:15] = 255  # band bottom at row 15
    other = np.zeros((40, 40), np.uint8)
    other[20:36] = 255  # band bottom at row 36 of 40, i.e. 18 of 20 once resized to 20 rows
    joined, band = join(ink, 15.0, 20, other, 36.0, gap=5)
    assert joined.shape[1] == 30 + 5 + 20
    assert band == 15.0 + 3  # ``other`` moves up 3 rows (its band is lower), so the crop grows 3 rows on top
    rows = np.flatnonzero(joined[:, -10] > 127)
    assert rows[-1] + 1 == band  # the continued crop's band ends on the joined band
    assert not joined[:, 30:35].any()
