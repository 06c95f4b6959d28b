"""Reading in a language, through the recognizers and the command line: bundles found beside the checkpoint
(``model.decoder.pt``, ``model.fr.decoder.pt``), ``--language en|fr|auto`` for lines and ``--page``, clear
errors (exit status 2) for a language without a bundle or one the model's alphabet cannot write, and the
bundles exported with the model. The model is untrained (its texts are noise): what is checked is which
language's models read, and what the outputs say about it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.data.layout_pages import write_page_folder
from tests.decoding.bilingual import IAM, bilingual_model, bundle_for
from tests.segmentation.test_classical import compose_page
from tests.test_page_formats import alto_schema, assert_valid, page_schema
from text_recognizer.checkpoint import CheckpointError
from text_recognizer.decoding.bundle import bundle_path, load_bundle, save_bundle
from text_recognizer.decoding.language import LanguageError
from text_recognizer.recognizer import LineRecognizer, main

LINES = Path(__file__).parent / "fixtures" / "lines"
LINE = LINES / "line_00.png"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return bilingual_model(tmp_path_factory.mktemp("bilingual"))


@pytest.fixture(scope="module")
def page_file(tmp_path_factory) -> Path:
    page, _ = compose_page(["line_00.png", "line_01.png", "line_02.png"])
    path = tmp_path_factory.mktemp("page") / "letter.png"
    page.save(path)
    return path


def test_the_recognizer_finds_a_bundle_per_language(model) -> None:
    recognizer = LineRecognizer(model, decoder="beam")
    assert recognizer.languages == ("en", "fr") and recognizer.language == "en"  # the model's own by default
    assert recognizer.bundle["language"] == "en"  # model.decoder.pt: the primary bundle
    for language in ("en", "fr"):
        [line] = recognizer.predict_tensors([recognizer.preprocess(LINE)], language=language)
        assert line.language == language
        assert recognizer.decoder_for("beam", language=language).bundle["language"] == language
    [line] = LineRecognizer(model, decoder="beam", language="auto").predict_lines([LINE])
    assert line.language in ("en", "fr")  # auto: whichever suits the greedy reading
    assert LineRecognizer(model, decoder="beam", language="fr").predict_lines([LINE])[0].language == "fr"
    greedy = LineRecognizer(model)
    assert greedy.predict_lines([LINE])[0].language is None and greedy.language == "en"
    [again] = greedy.predict_tensors([greedy.preprocess(LINE)], decoder="beam", language="fr")
    assert again.language == "fr"


def test_an_explicit_bundle_is_the_only_language(model) -> None:
    recognizer = LineRecognizer(model, decoder="beam", decoder_bundle=bundle_path(model, "fr"))
    assert recognizer.languages == ("fr",) and recognizer.language == "fr"
    assert recognizer.predict_lines([LINE])[0].language == "fr"
    with pytest.raises(LanguageError, match=r"no decoder bundle for English \(en\). It reads French \(fr\)"):
        LineRecognizer(model, decoder="beam", decoder_bundle=bundle_path(model, "fr"), language="en")
    assert LineRecognizer(model, decoder_bundle=False).languages == ()


def test_languages_on_the_command_line(model, capsys) -> None:
    base = [str(LINE), "--checkpoint", str(model), "--format", "jsonl"]
    assert main([*base, "--decoder", "beam", "--language", "fr"]) == 0
    assert json.loads(capsys.readouterr().out)["language"] == "fr"
    assert main([*base, "--decoder", "beam"]) == 0  # auto: one of the two
    assert json.loads(capsys.readouterr().out)["language"] in ("en", "fr")
    assert main([*base, "--language", "fr"]) == 0  # greedy reads alike in every language it has
    assert "language" not in json.loads(capsys.readouterr().out)
    for decoder in ("greedy", "beam"):  # a language the model lacks is refused alike by every decoder
        assert main([*base, "--decoder", decoder, "--language", "de"]) == 2
        err = capsys.readouterr().err
        assert "error:" in err and "no decoder bundle for German (de)" in err and "English (en), French (fr)" in err
    with pytest.raises(SystemExit) as exit_info:
        main([*base, "--language", "french"])
    assert exit_info.value.code == 2 and "ISO 639-1" in capsys.readouterr().err


def test_a_model_that_cannot_write_french(tmp_path, capsys) -> None:
    """An IAM-only model (79 characters, no accents) with a French bundle beside it: English reads, French is
    refused saying the alphabet cannot write it."""
    old = bilingual_model(tmp_path, IAM, ("en",))
    save_bundle(bundle_for("fr"), bundle_path(old, "fr"))  # built for the Latin alphabet
    recognizer = LineRecognizer(old, decoder="beam")
    assert recognizer.languages == ("en",) and recognizer.language == "en"
    base = [str(LINE), "--checkpoint", str(old), "--decoder", "beam"]
    assert main([*base, "--language", "en"]) == 0
    capsys.readouterr()
    assert main([*base, "--language", "fr"]) == 2
    err = capsys.readouterr().err
    assert "the model's alphabet cannot write French (fr): it lacks" in err and "It reads English (en)" in err
    save_bundle(bundle_for("fr"), bundle_path(old))  # as the model's own bundle: refused when it is loaded
    with pytest.raises(CheckpointError, match="cannot write French"):
        LineRecognizer(old)


def test_pages_carry_the_language(model, page_file, tmp_path, capsys) -> None:
    base = ["--page", str(page_file), "--checkpoint", str(model), "--decoder", "beam"]
    assert main([*base, "--language", "fr", "--format", "json"]) == 0
    [page] = json.loads(capsys.readouterr().out)
    assert page["lines"] and page["language"] == "fr" and {line["language"] for line in page["lines"]} == {"fr"}
    assert main([*base, "--format", "json"]) == 0  # auto: one language for the whole page
    [page] = json.loads(capsys.readouterr().out)
    assert page["language"] in ("en", "fr") and {line["language"] for line in page["lines"]} == {page["language"]}
    for fmt, schema, marker in (("page", page_schema(), b'primaryLanguage="French"'),
                                ("alto", alto_schema(), b'LANG="fr"')):
        out = tmp_path / fmt
        assert main([*base, "--language", "fr", "--format", fmt, "--output-dir", str(out)]) == 0
        data = (out / "letter.xml").read_bytes()
        assert_valid(schema, data)
        assert data.count(marker) == 1 + len(page["lines"])  # the region or block, and every line
    capsys.readouterr()
    assert main([*base, "--language", "de"]) == 2 and "German" in capsys.readouterr().err
    greedy = LineRecognizer(model).read_page(page_file)
    assert greedy.language is None and "language" not in greedy.to_dict()


def test_transcribed_page_xml_lines_carry_the_language(model, tmp_path, capsys) -> None:
    """``--page-xml``: the page's lines are read together (auto: one language for the page) and each line
    transcribed with a language's models gets it as ``primaryLanguage``, by PAGE's name for it."""
    from lxml import etree

    write_page_folder(tmp_path / "in")
    for language in ("fr", None, "en"):
        out = tmp_path / f"out-{language}"
        extra = ["--language", language] if language else []
        assert main([str(tmp_path / "in"), "--page-xml", "--output-dir", str(out), "--checkpoint", str(model),
                     "--decoder", "beam", *extra]) == 0
        lines = [e for e in etree.parse(str(out / "page1.xml")).iter() if etree.QName(e).localname == "TextLine"]
        names = {line.get("primaryLanguage") for line in lines}
        assert len(lines) == 3 and len(names) == 1
        assert names <= {"English", "French"} and (language is None or names == {"French" if language == "fr"
                                                                                  else "English"})
    capsys.readouterr()


def test_the_bundles_are_exported_with_the_model(model, tmp_path) -> None:
    from text_recognizer.export import export_recognizer

    exported = export_recognizer(LineRecognizer(model), tmp_path / "model.onnx", "onnx")
    assert load_bundle(bundle_path(exported))["language"] == "en"
    assert load_bundle(bundle_path(exported, "fr"))["language"] == "fr"
    pytest.importorskip("onnxruntime")
    from text_recognizer.onnx_recognizer import OnnxLineRecognizer

    onnx = OnnxLineRecognizer(exported, decoder="beam", language="fr")
    assert onnx.languages == ("en", "fr") and onnx.predict_lines([LINE])[0].language == "fr"
    [line] = onnx.predict_tensors([onnx.preprocess(LINE)], language="en")
    assert line.language == "en"
