"""Reading order: one column top to bottom, two columns one after the other, marginal notes beside their line."""

from __future__ import annotations

from text_recognizer.segmentation.lines import FoundLine, reading_order


def line(left, top, right, bottom, name=None) -> FoundLine:
    base = bottom - (bottom - top) / 4
    return FoundLine(((left, top), (right, top), (right, bottom), (left, bottom)), ((left, base), (right, base)))


def test_one_column_top_to_bottom_even_when_lines_touch():
    lines = [line(100, 40 * i, 900, 40 * i + 50) for i in range(6)]  # each overlaps the next by 10 px
    assert reading_order(lines[::-1]) == lines


def test_two_columns_are_read_one_after_the_other():
    heading = line(100, 0, 1700, 50)
    left = [line(100, 100 + 60 * i, 800, 150 + 60 * i) for i in range(5)]
    right = [line(1000, 100 + 60 * i, 1700, 150 + 60 * i) for i in range(5)]
    shuffled = [right[2], left[4], heading, *right[::2], *left[:4], right[1], right[3]]
    shuffled = list(dict.fromkeys(shuffled))
    assert reading_order(shuffled) == [heading, *left, *right]


def test_marginal_notes_come_beside_their_line():
    body = [line(300, 60 * i, 1200, 60 * i + 50) for i in range(6)]
    note = line(20, 125, 200, 165)  # in the left margin, beside body[2]
    late = line(1300, 250, 1450, 280)  # in the right margin, beside body[4]
    assert reading_order([late, *body[::-1], note]) == [*body[:2], note, body[2], body[3], body[4], late, body[5]]
