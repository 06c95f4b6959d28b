"""score_page on polygons whose answer is known: matched, missed, false, neutral and ignored lines, the page CER."""

from __future__ import annotations

import pytest

from text_recognizer.segmentation.scoring import detection_scores, inside_shares, score_page

SIZE = (400, 300)


def box(left, top, right, bottom):
    return [(left, top), (right, top), (right, bottom), (left, bottom)]


# true lines: three handwritten, one printed letterhead; the text block holds the first three
TRUE = [box(20, 20, 380, 50), box(20, 70, 380, 100), box(20, 120, 200, 150), box(20, 170, 380, 200)]
COUNTED = [True, True, True, False]
TEXTS = ["hello world", "second line", "third", "LETTERHEAD"]
BLOCK = [box(10, 10, 390, 160)]
# found: line 1 exactly, line 2 shifted (IoU 2/3), the letterhead, a false line in the block, noise outside it
FOUND = [box(20, 20, 380, 50), box(20, 76, 380, 106), box(22, 171, 378, 199), box(220, 120, 380, 150),
         box(20, 230, 380, 260)]
READINGS = ["hello world", "secund line", "LETTER", "xyz", "noise"]


def test_detection_counts_neutral_and_ignored_lines():
    score = score_page(FOUND, TRUE, SIZE, COUNTED, BLOCK)
    assert (score.found, score.true, score.matched, score.neutral, score.ignored) == (3, 3, 2, 1, 1)
    assert detection_scores(score.matched, score.found, score.true) == pytest.approx(
        {"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3})
    assert {(f, t) for f, t, _ in score.matching.pairs} == {(0, 0), (1, 1), (2, 3)}


def test_page_cer_counts_substitutions_misses_and_false_lines():
    score = score_page(FOUND, TRUE, SIZE, COUNTED, BLOCK, READINGS, TEXTS)
    # 0 (exact) + 1 (secund) + 5 (third: missed) + 3 (xyz: false line); the letterhead and the noise do not count
    assert (score.edits, score.characters) == (9, 11 + 11 + 5)
    assert score.cer == pytest.approx(9 / 27)


def test_without_regions_every_unmatched_found_line_is_false():
    score = score_page(FOUND, TRUE, SIZE, COUNTED, (), READINGS, TEXTS)
    assert (score.found, score.ignored, score.edits) == (4, 0, 9 + len("noise"))


def test_without_flags_every_true_line_counts():
    score = score_page(FOUND, TRUE, SIZE)
    assert (score.found, score.true, score.matched, score.neutral) == (5, 4, 3, 0)


def test_a_found_line_matched_in_the_block_margin_is_never_ignored():
    # a true line that sticks out of its block, found exactly: matched lines count whatever their place
    true, found = [box(20, 140, 380, 190)], [box(20, 140, 380, 190)]
    score = score_page(found, true, SIZE, regions=[box(10, 10, 390, 160)])
    assert (score.found, score.matched, score.ignored) == (1, 1, 0)


def test_empty_pages():
    assert score_page([], [], SIZE).cer == 0.0
    score = score_page([], TRUE, SIZE, COUNTED, found_texts=[], true_texts=TEXTS)
    assert (score.found, score.true, score.matched, score.edits, score.characters) == (0, 3, 0, 27, 27)
    score = score_page(FOUND[:1], [], SIZE, found_texts=["abc"], true_texts=[])
    assert (score.found, score.true, score.edits, score.characters, score.cer) == (1, 0, 3, 0, 1.0)


def test_inside_shares():
    shares = inside_shares([box(0, 0, 100, 10), box(50, 0, 150, 10), box(200, 0, 300, 10)], [box(0, 0, 100, 20)],
                           SIZE)
    assert shares == pytest.approx([1.0, 0.5, 0.0], abs=0.03)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="counted"):
        score_page(FOUND, TRUE, SIZE, [True])
    with pytest.raises(ValueError, match="texts"):
        score_page(FOUND, TRUE, SIZE, found_texts=["a"], true_texts=TEXTS)
