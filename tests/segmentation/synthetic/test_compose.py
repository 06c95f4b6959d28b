"""compose_page: deterministic for a generator state, page sizes and modes as documented, all truth on
the page, and its argument checked."""

from __future__ import annotations

import numpy as np
import pytest

from text_recognizer.segmentation.synthetic import compose_page


def test_same_seed_same_page(lines):
    a = compose_page(lines, np.random.default_rng(7), page_width=1000)
    b = compose_page(lines, np.random.default_rng(7), page_width=1000)
    assert a.lines == b.lines
    assert a.image.mode == b.image.mode and np.array_equal(np.asarray(a.image), np.asarray(b.image))


@pytest.mark.parametrize("seed", range(6))
def test_page_size_mode_and_coordinates(lines, seed):
    page = compose_page(lines, np.random.default_rng(seed))
    width, height = page.image.size
    assert 1000 <= width <= 2000 and 1.25 <= height / width <= 1.5 + 1 / width
    assert page.image.mode in ("L", "RGB")
    assert page.lines
    for line in page.lines:
        points = np.array(line.polygon + line.baseline)
        assert (points >= 0).all() and (points[:, 0] <= width - 1).all() and (points[:, 1] <= height - 1).all()
    assert compose_page(lines, np.random.default_rng(seed), page_width=1234).image.width == 1234


def test_bad_page_width_is_refused(lines):
    with pytest.raises(ValueError, match="page_width"):
        compose_page(lines, np.random.default_rng(0), page_width=10)
    with pytest.raises(ValueError, match="letterheads"):
        compose_page(lines, np.random.default_rng(0), letterheads=1.5)
