"""Decoding through every entry point: LineRecognizer(decoder=...), the CLI and evaluate.py."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from PIL import Image

from text_recognizer.checkpoint import CheckpointError
from text_recognizer.codec import Codec
from text_recognizer.decoding.bundle import make_bundle, save_bundle
from text_recognizer.decoding.lm_builder import build_arpa, read_texts
from text_recognizer.recognizer import DEFAULT_CHECKPOINT, LineRecognizer, main
from training.evaluate import main as evaluate_main

FIXTURES = Path(__file__).parent / "fixtures" / "lines"


@pytest.fixture(scope="module")
def bundle_file(tmp_path_factory) -> Path:
    """A small LM from the fixture labels (test data only) in a bundle for the bundled model."""
    codec = LineRecognizer().codec
    bundle = make_bundle(build_arpa(read_texts([FIXTURES]) * 3, codec, 4), codec, 4, "fixtures")
    return save_bundle(bundle, tmp_path_factory.mktemp("lm") / "default.decoder.pt")


@pytest.fixture(scope="module")
def image() -> Image.Image:
    return Image.open(FIXTURES / "line_00.png").convert("L")


def test_beam_and_greedy_give_words_inside_the_image(bundle_file, image) -> None:
    for decoder in ("greedy", "beam"):
        line = LineRecognizer(decoder=decoder, decoder_bundle=bundle_file).predict_lines([image])[0]
        assert line.text and line.words and 0.0 <= line.confidence <= 1.0
        assert " ".join(w.text for w in line.words) == " ".join(line.text.split())
        for spans in (line.words, line.chars):
            assert [s.start for s in spans] == sorted(s.start for s in spans)
            assert all(0 <= s.start < s.end <= image.width and 0 <= s.confidence <= 1 for s in spans)


def test_positions_scale_with_the_original_image(image) -> None:
    recognizer = LineRecognizer()
    big = image.resize((image.width * 2, image.height * 2), Image.Resampling.BICUBIC)
    small_line, big_line = recognizer.predict_lines([image, big])
    assert small_line.text == big_line.text
    same_frames = 0
    for a, b in zip(small_line.chars, big_line.chars):
        # resampling twice (up here, down in the stem) may move a character's edge by one frame
        assert abs(a.first_frame - b.first_frame) <= 1 and abs(a.last_frame - b.last_frame) <= 1
        if (a.first_frame, a.last_frame) == (b.first_frame, b.last_frame):
            same_frames += 1
            assert b.start == pytest.approx(2 * a.start, abs=2)
            assert b.end == pytest.approx(min(2 * a.end, big.width), abs=2)
    assert same_frames >= 0.9 * len(small_line.chars)


def test_bad_decoder_arguments(bundle_file, tmp_path) -> None:
    with pytest.raises(ValueError, match="decoder"):
        LineRecognizer(decoder="viterbi")
    with pytest.raises(ValueError, match="beam_width"):
        LineRecognizer(decoder="beam", decoder_bundle=bundle_file, beam_options={"beam_width": 0})
    other = save_bundle(make_bundle(None, Codec("abc"), None, "x"), tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="alphabet"):
        LineRecognizer(decoder="beam", decoder_bundle=other)
    (tmp_path / "corrupt.pt").write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match="could not be read"):
        LineRecognizer(decoder="beam", decoder_bundle=tmp_path / "corrupt.pt")


def test_cli_json_has_words_and_chars(bundle_file, capsys) -> None:
    path = str(FIXTURES / "line_00.png")
    assert main([path, "--decoder", "beam", "--decoder-bundle", str(bundle_file), "--beam-width", "4", "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert set(entry) == {"image", "text", "confidence", "words", "chars", "language"} and entry["language"] == "en"
    assert set(entry["words"][0]) == {"text", "confidence", "start", "end"}
    assert main([path, "--decoder", "beam", "--decoder-bundle", str(bundle_file), "--beam-width", "0"]) == 2
    assert main([path, "--beam-width", "4"]) == 2  # beam options need --decoder beam
    assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main([path, "--decoder", "viterbi"])
    assert exit_info.value.code == 2


def test_evaluate_with_beam_writes_confidence_columns(bundle_file, tmp_path, capsys) -> None:
    errors = tmp_path / "errors.csv"
    assert evaluate_main(["--checkpoint", str(DEFAULT_CHECKPOINT), "--data", str(FIXTURES), "--decoder", "beam",
                          "--decoder-bundle", str(bundle_file), "--json", "--errors", str(errors)]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) == {"cer", "wer", "n", "cer_natural", "wer_natural", "cer_iam"}
    assert 0 <= scores["cer"] < 0.5 and 0 <= scores["wer_natural"] <= 1
    with errors.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and {"confidence", "weakest_word", "weakest_word_confidence"} <= set(rows[0])
    assert all(0 <= float(row["confidence"]) <= 1 for row in rows)


def test_bundle_tuned_for_another_model_warns(tmp_path) -> None:
    codec = LineRecognizer().codec
    bundle = dict(make_bundle(None, codec, None, "x"), model_sha256="0" * 64)
    path = save_bundle(bundle, tmp_path / "stale.decoder.pt")
    with pytest.warns(UserWarning, match="another model"):
        LineRecognizer(decoder_bundle=path)
