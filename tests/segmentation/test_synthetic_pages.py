"""compose_page on drawn line images: deterministic, and its truth (polygons, baselines, reading order)
agrees with the ink it pasted, whatever the skew, bend and layout.

The line images are drawn here (words of dark blocks with ascenders and descenders, 64 px high), since
real line crops are not part of the repository. ``_draw_style``/``_render`` are the module's test hook:
they let a test fix one layout feature and see the lines' ink apart from the paper.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PIL import Image, ImageDraw

from text_recognizer.segmentation.scoring import iou_matrix
from text_recognizer.segmentation.synthetic_pages import (
    SyntheticLine,
    SyntheticPage,
    _draw_style,
    _render,
    compose_page,
)


def line_image(rng: np.random.Generator, width: int) -> Image.Image:
    """A 64 px line of 'words': x-height blocks with some ascenders and descenders, gaps between words."""
    image = Image.new("L", (width, 64), 255)
    draw = ImageDraw.Draw(image)
    x = int(rng.integers(5, 20))
    while x < width - 60:
        end = min(width - 10, x + int(rng.integers(40, 160)))
        draw.rectangle((x, 26, end, 45), fill=int(rng.integers(0, 60)))
        for letter in range(x, end - 6, 14):
            kind = rng.random()
            if kind < 0.25:
                draw.rectangle((letter, 8, letter + 4, 26), fill=20)
            elif kind < 0.4:
                draw.rectangle((letter, 45, letter + 4, 60), fill=20)
        x = end + int(rng.integers(18, 34))
    return image


@pytest.fixture(scope="module")
def lines() -> list[Image.Image]:
    rng = np.random.default_rng(123)
    return [line_image(rng, int(rng.integers(500, 1100))) for _ in range(40)]


def render(lines, seed: int, **changes) -> tuple[SyntheticPage, np.ndarray]:
    """A 1000 px wide page from ``seed``, with the given style fields fixed."""
    rng = np.random.default_rng(seed)
    style = dataclasses.replace(_draw_style(rng, 1000), **changes)
    return _render(lines, rng, style)


def polygon_mask(line: SyntheticLine, size: tuple[int, int]) -> np.ndarray:
    canvas = Image.new("1", size, 0)
    ImageDraw.Draw(canvas).polygon(line.polygon, fill=1, outline=1)
    return np.asarray(canvas, dtype=bool)


def mean_y(line: SyntheticLine) -> float:
    return float(np.mean([y for _, y in line.baseline]))


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


@pytest.mark.parametrize("seed", range(8))
def test_polygons_hold_the_ink_and_baselines_lie_inside(lines, seed):
    # every page skewed and bent as far as the module goes, on top of its drawn layout
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
    page, _ = render(lines, 1, columns=((300.0, 900.0),), notes=1, single_line=False, header=False, holes=0)
    notes = [i for i, line in enumerate(page.lines) if max(x for x, _ in line.polygon) < 300]
    assert len(notes) == 1
    note, host = page.lines[notes[0]], page.lines[notes[0] + 1]
    assert abs(mean_y(note) - mean_y(host)) < 0.5 * (np.ptp(np.array(host.polygon)[:, 1]))


def test_single_line(lines):
    assert len(compose_page(lines[:1], np.random.default_rng(0), page_width=1000).lines) == 1
    page, _ = render(lines, 2, single_line=True)
    assert len(page.lines) == 1


def test_white_images_are_not_placed(lines):
    white = Image.new("L", (800, 64), 255)
    assert compose_page([white] * 5, np.random.default_rng(0), page_width=1000).lines == ()
    page = compose_page([white, lines[0], white], np.random.default_rng(0), page_width=1000)
    assert len(page.lines) == 1


def test_bad_page_width_is_refused(lines):
    with pytest.raises(ValueError, match="page_width"):
        compose_page(lines, np.random.default_rng(0), page_width=10)
