"""Tests for training/loop/alphabet.py: alphabets from labels or files, normalisation, and fine-tuning the
bundled English model to French/German lines with --init-from and a new alphabet."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
import torch
from PIL import Image, ImageDraw, ImageFont

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.codec import DEFAULT_CHARSET, LATIN_CHARSET, Codec
from text_recognizer.data.folder import read_labels
from text_recognizer.metrics import cer
from text_recognizer.normalization import normalizer
from text_recognizer.recognizer import DEFAULT_CHECKPOINT, LineRecognizer
from training.loop.alphabet import (
    ACCENT_START_OFFSET,
    alphabet_from_texts,
    base_letters,
    read_charset,
    remap_output_rows,
    resolve_alphabet,
    write_charset,
)
from training.loop.alphabet import main as alphabet_main
from training.loop.config import DataConfig, ExperimentConfig
from training.run_experiment import main as train_main

LINES = ["Grüße aus Köln", "ça a été très réussi", "Straße über Äcker", "où est la forêt ?",
         "Noël à Zürich", "der Bär schläft", "la fenêtre ouverte", "schöne Grüße, Jürgen"]
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
BUNDLED_FLAGS = ["--height", "40", "--cnn-channels", "16", "32", "64", "--feature-dim", "256", "--conv-blocks", "2",
                 "--lstm-layers", "2", "--lstm-hidden", "128"]


def render_folder(folder: Path, texts=LINES, decomposed: bool = False) -> Path:
    """Lines drawn with PIL (DejaVu Sans when installed, which has the accents) and a labels.tsv."""
    folder.mkdir(parents=True, exist_ok=True)
    font = ImageFont.truetype(str(FONT), 34) if FONT.is_file() else ImageFont.load_default(size=34)
    rows = ["file\ttext"]
    for i, text in enumerate(texts):
        width = int(font.getlength(text)) + 20
        image = Image.new("L", (width, 48), 255)
        ImageDraw.Draw(image).text((10, 4), text, font=font, fill=0)
        image.save(folder / f"line_{i}.png")
        rows.append(f"line_{i}.png\t{unicodedata.normalize('NFD', text) if decomposed else text}")
    (folder / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def test_alphabet_from_texts_min_count_and_report():
    alphabet = alphabet_from_texts(["aab", "abc", "ſ\n"], min_count=2)
    assert alphabet.codec.charset == "ab"
    assert alphabet.excluded == {"c": 1, "ſ": 1}
    summary = alphabet.summary()
    assert "2 characters" in summary and "U+017F LATIN SMALL LETTER LONG S" in summary
    assert alphabet_from_texts(["é"], always="ab").codec.charset == "abé"
    with pytest.raises(ValueError, match="--charset-min-count"):
        alphabet_from_texts(["a"], min_count=0)
    with pytest.raises(ValueError, match="no character occurs at least 5 times"):
        alphabet_from_texts(["ab"], min_count=5)


def test_charset_file_round_trip_and_errors(tmp_path):
    codec = Codec(" aßé\u017f")
    path = write_charset(codec, tmp_path / "charset.txt")
    assert read_charset(path) == codec
    decomposed = tmp_path / "nfd.txt"
    decomposed.write_text("a\ne\u0301\n\n", encoding="utf-8")
    assert read_charset(decomposed).charset == "aé"  # NFC composes
    assert read_charset(decomposed, "NFD").charset == "ae\u0301"
    bad = tmp_path / "bad.txt"
    bad.write_text("a\nbc\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2 holds 'bc': write one character per line"):
        read_charset(bad)
    with pytest.raises(ValueError, match="does not exist"):
        read_charset(tmp_path / "missing.txt")
    (tmp_path / "latin1.txt").write_bytes("é\n".encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8"):
        read_charset(tmp_path / "latin1.txt")
    with pytest.raises(ValueError, match="normalization must be one of"):
        normalizer("NFKQ")


def test_resolve_alphabet_from_data_with_nfc(tmp_path):
    folder = render_folder(tmp_path / "de", decomposed=True)  # labels stored decomposed
    config = ExperimentConfig(data=DataConfig(data=(str(folder),), charset="data"))
    alphabet = resolve_alphabet(config)
    assert "ü" in alphabet.codec.charset and "\u0308" not in alphabet.codec.charset  # composed
    nfd = ExperimentConfig(data=DataConfig(data=(str(folder),), charset="data", unicode_normalization="NFD"))
    assert "\u0308" in resolve_alphabet(nfd).codec.charset and "ü" not in resolve_alphabet(nfd).codec.charset
    mixed = ExperimentConfig(data=DataConfig(data=(str(folder), "synthetic"), charset="data"))
    assert set(DEFAULT_CHARSET) <= set(resolve_alphabet(mixed).codec.charset)  # synthetic lines need IAM's
    assert resolve_alphabet(ExperimentConfig()).codec == Codec()


def test_remap_keeps_shared_rows_and_initialises_new_ones():
    old, new = Codec("abc"), Codec("cxa")
    state = {"head.weight": torch.arange(8.0).reshape(4, 2), "head.bias": torch.arange(4.0), "other": torch.ones(3)}
    fresh = {"head.weight": torch.full((4, 2), -1.0), "head.bias": torch.full((4,), -1.0), "other": torch.zeros(3)}
    out, added = remap_output_rows(state, fresh, old, new)
    assert added == ["x"]
    # new ids: blank 0, c 1, x 2, a 3; old ids: blank 0, a 1, b 2, c 3
    assert out["head.bias"].tolist() == [0.0, 3.0, -1.0, 1.0]
    assert out["head.weight"][1].tolist() == [6.0, 7.0] and out["head.weight"][2].tolist() == [-1.0, -1.0]
    assert out["other"] is state["other"]
    assert remap_output_rows(state, fresh, old, old)[0] is state
    with pytest.raises(ValueError, match="expected 4 rows"):
        remap_output_rows({"head.bias": torch.zeros(9)}, fresh, old, new)


def test_new_accented_letters_start_from_their_base_letter():
    old, new = Codec("ae"), Codec("aeéœÉ")
    state = {"head.weight": torch.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]]),
             "head.bias": torch.tensor([0.0, 5.0, 6.0])}
    fresh = {"head.weight": torch.full((6, 2), -1.0), "head.bias": torch.full((6,), -1.0)}
    out, added = remap_output_rows(state, fresh, old, new)
    assert added == ["é", "œ", "É"]
    assert base_letters(new.charset, old) == {"é": "e"}  # œ has no base letter; É's base E is not in "ae"
    assert out["head.weight"][3].tolist() == [3.0, 4.0]  # é starts as e
    assert out["head.bias"][3].item() == pytest.approx(6.0 - ACCENT_START_OFFSET)  # ... but less likely than e
    assert out["head.weight"][4].tolist() == [-1.0, -1.0] and out["head.weight"][5].tolist() == [-1.0, -1.0]
    assert base_letters("ÉÇñß€", Codec()) == {"É": "E", "Ç": "C", "ñ": "n"}


def test_latin_alphabet_resolves_and_extends_iam():
    alphabet = resolve_alphabet(ExperimentConfig(data=DataConfig(charset="latin")))
    assert alphabet.codec.charset == LATIN_CHARSET
    assert alphabet.codec.charset.startswith(DEFAULT_CHARSET)  # IAM's rows keep their places


@pytest.mark.slow
def test_fine_tune_bundled_model_to_german_and_french(tmp_path, capsys):
    """A few steps from the bundled model with a larger alphabet: new characters in the checkpoint,
    the shared characters' weights carried over (it still reads the English fixture lines), decoding works."""
    folder = render_folder(tmp_path / "fr_de")
    run_dir = tmp_path / "run"
    status = train_main(["--data", str(folder), "--val-data", str(folder), "--charset", "data",
                         "--init-from", str(DEFAULT_CHECKPOINT), *BUNDLED_FLAGS, "--max-steps", "2",
                         "--batch-size", "4",
                         "--lr", "1e-5", "--warmup-steps", "0", "--augment", "false", "--run-dir", str(run_dir),
                         "--progress", "false", "--bucket-batches", "0", "--sortagrad", "false"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "beyond IAM's" in out and "new characters" not in out  # the bundled Latin alphabet has them all
    bundle = load_checkpoint(run_dir / "best.pt")
    charset = bundle.codec.charset
    assert set("äöüßéèêàçÄ") & set(charset) == set("äöüßéèêàçÄ")
    assert bundle.model_config.num_classes == len(charset) + 1
    assert json.loads((run_dir / "config.json").read_text())["data"]["charset"] == "data"
    recognizer = LineRecognizer(run_dir / "best.pt")
    assert len(recognizer.predict([folder / "line_0.png"])) == 1  # decodes with the new alphabet
    fixtures = read_labels(Path(__file__).parents[2] / "fixtures" / "lines")
    texts = recognizer.predict([r.path for r in fixtures])
    assert cer([r.text for r in fixtures], texts) < 0.35  # shared characters' weights survived the remap


def test_alphabet_command_writes_a_charset_file(tmp_path, capsys):
    folder = render_folder(tmp_path / "fr_de")
    assert alphabet_main(["--data", str(folder), "--min-count", "2", "--output", str(tmp_path / "charset.txt")]) == 0
    out = capsys.readouterr().out
    charset = read_charset(tmp_path / "charset.txt").charset
    assert "ü" in charset and "ç" not in charset  # ç occurs once
    assert "'ç' (U+00E7 LATIN SMALL LETTER C WITH CEDILLA): 1" in out
    assert alphabet_main(["--data", str(tmp_path / "missing")]) == 2


def test_evaluation_compares_composed_text(tmp_path):
    from training.evaluate import evaluate_folder

    folder = render_folder(tmp_path / "nfd", texts=LINES[:2], decomposed=True)
    result = evaluate_folder(LineRecognizer(), folder)
    assert result["references"] == [unicodedata.normalize("NFC", t) for t in LINES[:2]]
    assert all(unicodedata.is_normalized("NFC", p) for p in result["predictions"])
