"""Tests for text_recognizer.data.running_text: running text cut into line-sized pieces for the LM."""

from __future__ import annotations

import random

import pytest
import torch

from text_recognizer.data.running_text import (
    line_sized_pieces,
    plain_typography,
    read_running_text,
    running_text_files,
)
from text_recognizer.decoding.bundle import arpa_text
from text_recognizer.recognizer import DEFAULT_CHECKPOINT
from training.decoder.build_lm import main

SPEECH = ("Fellow-Citizens of the Senate and House of Representatives: In meeting you again I feel much "
          "satisfaction in being able to repeat my congratulations on the favorable prospects which "
          "continue to distinguish our public affairs. ") * 6


def test_pieces_keep_every_word_in_order_and_stay_line_sized() -> None:
    pieces = list(line_sized_pieces(SPEECH, random.Random(3)))
    assert " ".join(pieces) == " ".join(SPEECH.split())
    longest_word = max(map(len, SPEECH.split()))
    assert all(len(p) <= 60 + longest_word for p in pieces)
    assert all(len(p) >= 25 for p in pieces[:-1])
    assert len({len(p) for p in pieces}) > 3  # lengths vary, as written lines do


def test_pieces_are_the_same_for_the_same_seed_and_differ_across_seeds() -> None:
    first = list(line_sized_pieces(SPEECH, random.Random(0)))
    assert first == list(line_sized_pieces(SPEECH, random.Random(0)))
    assert first != list(line_sized_pieces(SPEECH, random.Random(1)))


def test_piece_bounds_are_checked_and_fixed_bounds_give_fixed_lengths() -> None:
    with pytest.raises(ValueError, match="min_chars"):
        list(line_sized_pieces("a b", random.Random(0), 10, 5))
    pieces = list(line_sized_pieces("ab " * 20, random.Random(0), 5, 5))
    assert set(pieces) == {"ab ab"}


def test_plain_typography_maps_printed_forms_to_written_ones() -> None:
    assert plain_typography("\u201cDon\u2019t\u201d \u2014 wait\u2026 it\u00a0is") == '"Don\'t" - wait... it is'
    assert plain_typography("cafe\u0301") == "caf\u00e9"  # NFC


def test_running_text_from_files_and_folders(tmp_path) -> None:
    folder = tmp_path / "speeches"
    folder.mkdir()
    (folder / "b.txt").write_text("second \u2019file\u2019 " * 30, encoding="utf-8")
    (folder / "a.txt").write_text("first file " * 30, encoding="utf-8")
    (folder / "notes.json").write_text("{}", encoding="utf-8")
    single = tmp_path / "book.txt"
    single.write_text("a book " * 30, encoding="utf-8")
    assert running_text_files([folder, single]) == [folder / "a.txt", folder / "b.txt", single]
    pieces = read_running_text([folder, single], seed=5)
    assert pieces == read_running_text([folder, single], seed=5)
    assert pieces[0].startswith("first file") and "'file'" in " ".join(pieces)
    assert all("\u2019" not in p for p in pieces)
    for bad in ([tmp_path / "missing.txt"], str(single), []):
        with pytest.raises(ValueError):
            read_running_text(bad)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .txt"):
        read_running_text([tmp_path / "empty"])


def test_command_adds_running_text_to_the_lm(tmp_path, capsys) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("the quick brown fox\n", encoding="utf-8")
    book = tmp_path / "book.txt"
    book.write_text("It was the best of times, it was the worst of times, it was the age of wisdom. " * 5,
                    encoding="utf-8")
    out = tmp_path / "model.decoder.pt"
    args = [str(lines), "--checkpoint", str(DEFAULT_CHECKPOINT), "--order", "3", "--out", str(out)]
    assert main(args) == 0
    without = arpa_text(torch.load(out, weights_only=True))
    assert main([*args, "--running-text", str(book)]) == 0
    assert "1 lines" in capsys.readouterr().out.splitlines()[0]
    bundle = torch.load(out, weights_only=True)
    assert str(book) in bundle["lm"]["source"]
    assert "w i s" not in without and "w i s" in arpa_text(bundle)  # the book's trigrams are in the model
    assert main([*args, "--running-text", str(tmp_path / "nope.txt")]) == 2
    assert "error:" in capsys.readouterr().err
