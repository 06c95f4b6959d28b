"""The layout's reading order and placement: one column top to bottom without overlaps, two columns one
after the other, a marginal note read just before its line, a lone line."""

from __future__ import annotations

import numpy as np
import pytest

from tests.segmentation.synthetic.drawn import mean_y, render
from text_recognizer.segmentation.scoring import iou_matrix
from text_recognizer.segmentation.synthetic import compose_page


@pytest.mark.parametrize("seed", range(4))
def test_one_column_reads_top_to_bottom_without_overlaps(lines, seed):
    page, _ = render(lines, seed, columns=((150.0, 900.0),), notes=0, single_line=False, spacing=1.0 + 0.3 * seed)
    assert len(page.lines) >= 5
    ys = [mean_y(line) for line in page.lines]
    assert ys == sorted(ys)
    iou = iou_matrix([line.polygon for line in page.lines], [line.polygon for line in page.lines], page.image.size)
    np.fill_diagonal(iou, 0)
    assert iou.max() < 0.3


def test_two_columns_read_one_after_the_other(lines):
    page, _ = render(lines, 5, columns=((100.0, 480.0), (520.0, 900.0)), notes=0, single_line=False,
                     header=False, closing=False)
    lefts = [np.mean([x for x, _ in line.polygon]) < 500 for line in page.lines]
    assert lefts == sorted(lefts, reverse=True) and any(lefts) and not all(lefts)
    for column in (True, False):
        ys = [mean_y(line) for line, left in zip(page.lines, lefts) if left == column]
        assert ys == sorted(ys)


def test_marginal_note_is_small_left_of_the_text_and_read_before_its_line(lines):
    # level page: a turned one moves the note's corner past the column's edge, which this test reads
    page, _ = render(lines, 1, columns=((300.0, 900.0),), notes=1, single_line=False, header=False, holes=0,
                     angle=0.0)
    notes = [i for i, line in enumerate(page.lines) if max(x for x, _ in line.polygon) < 300]
    assert len(notes) == 1
    note, host = page.lines[notes[0]], page.lines[notes[0] + 1]
    assert abs(mean_y(note) - mean_y(host)) < 0.5 * (np.ptp(np.array(host.polygon)[:, 1]))


def test_single_line(lines):
    assert len(compose_page(lines[:1], np.random.default_rng(0), page_width=1000).lines) == 1
    page, _ = render(lines, 2, single_line=True)
    assert len(page.lines) == 1
