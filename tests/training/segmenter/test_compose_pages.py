"""training/segmenter/compose_pages.py: synthetic pages written as a PAGE folder that the layout reader and the page
evaluation read back."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from text_recognizer.data.layout import read_layout
from training.segmenter.compose_pages import PLACEHOLDER, compose_folder, main


def line_folder(folder, count=12):
    """Line images (dark strokes on white, 64 px high) with a labels.tsv."""
    folder.mkdir()
    rng = np.random.default_rng(0)
    rows = ["file\ttext"]
    for i in range(count):
        image = Image.new("L", (int(rng.integers(300, 700)), 64), 255)
        draw = ImageDraw.Draw(image)
        x = 10
        while x < image.width - 40:
            width = int(rng.integers(15, 40))
            draw.rectangle((x, 22, x + width, 46), fill=20)
            draw.rectangle((x + 2, int(rng.integers(6, 20)), x + 6, 46), fill=20)  # an ascender
            x += width + int(rng.integers(8, 20))
        image.save(folder / f"l{i}.png")
        rows.append(f"l{i}.png\tline {i}")
    (folder / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def test_pages_and_their_xml_are_written(tmp_path):
    lines = line_folder(tmp_path / "lines")
    written = compose_folder(lines, 2, tmp_path / "out", seed=3)
    assert len(written) == 2
    for xml in written:
        layout = read_layout(xml)
        assert layout.find_image() is not None and layout.lines
        assert all(line.text == PLACEHOLDER and len(line.polygon) >= 3 and len(line.baseline) >= 2
                   for line in layout.lines)
    again = compose_folder(lines, 2, tmp_path / "again", seed=3)
    same_seed = [[line.polygon for line in read_layout(xml).lines] for xml in again]
    assert same_seed == [[line.polygon for line in read_layout(xml).lines] for xml in written]


def test_the_command(tmp_path, capsys):
    lines = line_folder(tmp_path / "lines")
    main(["--lines", str(lines), "--pages", "1", "--output", str(tmp_path / "out")])
    assert "wrote 1 pages" in capsys.readouterr().out
    assert len(list((tmp_path / "out").glob("*.xml"))) == 1
