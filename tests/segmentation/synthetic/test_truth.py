"""The truth agrees with the ink that was pasted: polygons hold the lines' ink and baselines lie inside
them whatever the skew and bend, and the baseline sits under the x-height band."""

from __future__ import annotations

import numpy as np
import pytest

from tests.segmentation.synthetic.drawn import mean_y, polygon_mask, render


@pytest.mark.parametrize("seed", range(8))
def test_polygons_hold_the_ink_and_baselines_lie_inside(lines, seed):
    # every page skewed and bent as far as the package goes, on top of its drawn layout
    page, ink = render(lines, seed, angle=(-5.0, 5.0)[seed % 2], line_angle=1.5, curve=8.0)
    size = page.image.size
    masks = [polygon_mask(line, size) for line in page.lines]
    inked = ink > 0.3 * 255
    assert inked.sum() > 1000
    inside = np.logical_or.reduce(masks)[inked].mean()
    assert inside > 0.97, f"only {inside:.1%} of the lines' ink lies inside their polygons"
    for line in page.lines:
        xs, ys = np.array(line.polygon).T
        bx, by = np.array(line.baseline).T
        assert len(line.baseline) >= 2 and (np.diff(bx) > 0).all()
        assert ys.min() <= by.min() and by.max() <= ys.max()
        assert xs.min() <= bx.min() and bx.max() <= xs.max()


def test_baseline_is_under_the_x_height_band(lines):
    # the drawn x-height band ends at row 46 of 64 and descenders are rare, so the baseline sits at 46/64
    page, _ = render(lines, 3, angle=0.0, line_angle=0.0, curve=0.0, single_line=True, notes=0)
    (line,) = page.lines
    ys = np.array(line.polygon)[:, 1]
    polygon_top = ys.min()  # an ascender's top (row 8) less the padding
    height = (ys.max() - ys.min()) / (60 - 8 + 2 * 0.1 * 64)  # page px per crop px
    assert mean_y(line) == pytest.approx(polygon_top + (46 - 8 + 0.1 * 64) * height, abs=2 * height)
