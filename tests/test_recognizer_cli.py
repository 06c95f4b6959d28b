"""The recognizer CLI over many files: folders, globs, a corrupt file among good ones, formats,
batch sizes and exit codes. Uses the bundled model on the real fixture lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from text_recognizer.batch import recognize_files
from text_recognizer.data.folder import read_labels
from text_recognizer.recognizer import LineRecognizer, main

FIXTURES = Path(__file__).parent / "fixtures" / "lines"


@pytest.fixture(scope="module")
def recognizer() -> LineRecognizer:
    return LineRecognizer()


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """Four real line images, a truncated PNG and a text file posing as a JPEG."""
    for record in read_labels(FIXTURES)[:4]:
        shutil.copy(record.path, tmp_path / record.path.name)
    (tmp_path / "line_02b.png").write_bytes((FIXTURES / "line_05.png").read_bytes()[:60])
    (tmp_path / "notes.jpg").write_text("not an image")
    return tmp_path


def test_recognize_files_keeps_order_and_reports_bad_files(recognizer, folder):
    paths = sorted(folder.iterdir())
    results = list(recognize_files(recognizer, paths, batch_size=2))
    assert [r.path for r in results] == paths
    bad = {r.path.name: r.error for r in results if not r.ok}
    assert set(bad) == {"line_02b.png", "notes.jpg"}
    assert all(name in error for name, error in bad.items())
    good = [r for r in results if r.ok]
    assert [r.line.text for r in good] == recognizer.predict([r.path for r in good])


def test_batch_size_does_not_change_the_text(recognizer, folder):
    paths = sorted(folder.glob("line_0?.png"))
    one = [r.line.text for r in recognize_files(recognizer, paths, batch_size=1)]
    many = [r.line.text for r in recognize_files(recognizer, paths, batch_size=16)]
    assert one == many


@pytest.mark.parametrize("batch_size", [0, -1, 1.5, True])
def test_bad_batch_size(recognizer, batch_size):
    with pytest.raises(ValueError, match="batch_size"):
        list(recognize_files(recognizer, [FIXTURES / "line_00.png"], batch_size=batch_size))


def test_cli_folder_with_corrupt_files_jsonl(folder, capsys):
    status = main([str(folder), "--format", "jsonl", "--batch-size", "3", "--progress", "never"])
    out, err = capsys.readouterr()
    assert status == 1
    rows = [json.loads(line) for line in out.splitlines()]
    assert [Path(r["image"]).name for r in rows] == ["line_00.png", "line_01.png", "line_02.png", "line_03.png"]
    assert all(0.0 <= r["confidence"] <= 1.0 and r["text"] for r in rows)
    assert "line_02b.png" in err and "notes.jpg" in err and "2 input(s) could not be read" in err


def test_cli_glob_text_output_and_progress_bar(folder, capsys):
    for i in range(4):  # more than a handful of files: the bar appears
        shutil.copy(folder / "line_00.png", folder / f"copy_{i}.png")
    status = main([str(folder / "*_0?.png"), str(folder / "copy_*.png"), "--progress", "auto"])
    out, err = capsys.readouterr()
    assert status == 0
    lines = [line.split("\t") for line in out.splitlines()]
    expected = [f"line_0{i}.png" for i in range(4)] + [f"copy_{i}.png" for i in range(4)]
    assert [Path(f).name for f, _ in lines] == expected
    assert len({text for f, text in lines if "copy_" in f or f.endswith("line_00.png")}) == 1
    assert "8/8" in err


def test_cli_single_file_prints_text_only_and_json_list(recognizer, capsys):
    expected = recognizer.predict([FIXTURES / "line_00.png", FIXTURES / "line_03.png"])
    assert main([str(FIXTURES / "line_00.png")]) == 0
    assert capsys.readouterr().out == f"{expected[0]}\n"
    assert main([str(FIXTURES / "line_00.png"), str(FIXTURES / "line_03.png"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["text"] for r in rows] == expected


def test_cli_missing_input_and_bad_checkpoint(recognizer, tmp_path, capsys):
    assert main([str(tmp_path / "nope.png"), str(FIXTURES / "line_00.png")]) == 1
    out, err = capsys.readouterr()
    assert "nope.png: no such file or folder" in err
    assert out == f"{FIXTURES / 'line_00.png'}\t{recognizer.predict([FIXTURES / 'line_00.png'])[0]}\n"
    assert main([str(FIXTURES / "line_00.png"), "--checkpoint", str(tmp_path / "missing.pt")]) == 2
    assert "missing.pt" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(FIXTURES / "line_00.png"), "--batch-size", "0"])


def test_library_import_needs_no_cli_dependencies(recognizer):
    """The serving image and the base install (``pip install .``) have neither tqdm nor lxml: the library and
    the line CLI must work without them (PAGE-XML needs lxml, the progress bar tqdm)."""
    import subprocess
    import sys

    code = ("import sys; sys.modules.update(tqdm=None, lxml=None, onnx=None, onnxruntime=None)\n"
            "from text_recognizer.recognizer import LineRecognizer, main\n"
            "import training.evaluate\n"  # text-recognizer-evaluate, base install
            f"print(LineRecognizer().predict([{str(FIXTURES / 'line_00.png')!r}])[0])\n"
            f"sys.exit(main([{str(FIXTURES)!r}, '--progress', 'always', '--format', 'jsonl']))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            cwd=Path(__file__).resolve().parents[1])
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0] == recognizer.predict([FIXTURES / "line_00.png"])[0] and len(lines) == 1 + 8
