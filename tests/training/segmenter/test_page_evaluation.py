"""The page evaluation (training/segmenter/page_evaluation.py, training/evaluate.py --pages,
benchmarks/page_eval.py) on a
page the test draws: known true lines (ALTO, with line types and a text block), known found lines (PAGE-XML, as
another segmenter would write them) and a recognizer that reads each line's grey level as a known text, so
every count and every edit is known. Then the same on the real pages in ../shared/data, where they exist."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image, ImageDraw

from training.segmenter.page_evaluation import (
    block_polygons,
    counted_lines,
    evaluate_pages,
    format_table,
    found_lines,
    reference_text,
)

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared" / "data"
SIZE = (400, 300)


def box(left, top, right, bottom):
    return [(left, top), (right, top), (right, bottom), (left, bottom)]


# (polygon, grey level drawn, line type, true text); the block holds the first three lines
TRUE = [(box(20, 20, 380, 50), 10, "hand", "hello world"), (box(20, 70, 380, 100), 40, "hand", "second line"),
        (box(20, 120, 200, 150), 70, "hand", "third"), (box(20, 170, 380, 200), 100, "print", "LETTERHEAD")]
# found lines: line 1, line 2 shifted, the letterhead, a false line in the block (grey 130), noise outside (160)
FOUND = [box(20, 20, 380, 50), box(20, 76, 380, 106), box(22, 171, 378, 199), box(220, 120, 380, 150),
         box(20, 230, 380, 260)]
# what the stub recognizer reads for each grey level
READS = {10: "hello world", 40: "secund line", 70: "thirt", 100: "LETTER", 130: "xyz", 160: "noise", 255: ""}


def points(polygon, separator=" "):
    return " ".join(f"{x:g}{separator}{y:g}" for x, y in polygon)


def write_alto(path: Path, image_name: str) -> None:
    lines = "".join(
        f'<TextLine ID="l{i}" TAGREFS="{"LT1" if kind == "hand" else "LT2"}" BASELINE="{points(polygon[2:][::-1])}">'
        f'<Shape><Polygon POINTS="{points(polygon)}"/></Shape><String CONTENT="{text}"/></TextLine>'
        for i, (polygon, _, kind, text) in enumerate(TRUE))
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?><alto xmlns="http://www.loc.gov/standards/alto/ns-v4#">'
        f"<Description><MeasurementUnit>pixel</MeasurementUnit><sourceImageInformation><fileName>{image_name}"
        "</fileName></sourceImageInformation></Description><Tags>"
        '<OtherTag ID="LT1" LABEL="DefaultLine:Handwritten"/><OtherTag ID="LT2" LABEL="DefaultLine:Print"/></Tags>'
        f'<Layout><Page WIDTH="{SIZE[0]}" HEIGHT="{SIZE[1]}"><PrintSpace>'
        f'<TextBlock ID="b0"><Shape><Polygon POINTS="{points(box(10, 10, 390, 160))}"/></Shape>{lines}</TextBlock>'
        "</PrintSpace></Page></Layout></alto>", encoding="utf-8")


def write_page_xml(path: Path, polygons) -> None:
    ns = "http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"
    lines = "".join(f'<TextLine id="f{i}"><Coords points="{points(p, ",")}"/></TextLine>'
                    for i, p in enumerate(polygons))
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?><PcGts xmlns="{ns}"><Page imageFilename="x.png" '
                    f'imageWidth="{SIZE[0]}" imageHeight="{SIZE[1]}"><TextRegion id="r0">'
                    f'<Coords points="0,0 400,0 400,300 0,300"/>{lines}</TextRegion></Page></PcGts>',
                    encoding="utf-8")


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> tuple[Path, Path]:
    """A folder with one drawn page (image + ALTO truth), and a folder with its found lines (PAGE-XML)."""
    root = tmp_path_factory.mktemp("drawn")
    pages, found = root / "pages", root / "found"
    pages.mkdir()
    found.mkdir()
    image = Image.new("L", SIZE, 255)
    draw = ImageDraw.Draw(image)
    for polygon, grey, _, _ in TRUE:
        draw.polygon(polygon, fill=grey)
    draw.polygon(FOUND[3], fill=130)
    draw.polygon(FOUND[4], fill=160)
    image.save(pages / "page1.png")
    write_alto(pages / "page1.xml", "page1.png")
    write_page_xml(found / "page1.xml", FOUND)
    (found / "seconds.json").write_text(json.dumps({"page1": {"wall": 2.0, "cpu": 1.5}}))
    return pages, found


class GreyReader:
    """A recognizer for ``PageReader`` that reads a cut line as the text of its darkest grey level (``READS``)."""

    def preprocess(self, crop):
        return int(np.asarray(crop).min())

    def predict_tensors(self, lines, image_sizes=None, **options):
        return [SimpleNamespace(text=READS[grey], confidence=1.0, words=()) for grey in lines]


def test_true_lines_types_and_blocks(drawn):
    from text_recognizer.data.layout import read_layout

    layout = read_layout(drawn[0] / "page1.xml")
    assert counted_lines(layout) == [True, True, True, False]
    assert block_polygons(layout) == [box(10, 10, 390, 160)]
    assert [line.polygon for line in found_lines(drawn[1] / "page1.xml")] == [tuple(p) for p in FOUND]


def test_found_lines_scored_and_read(drawn):
    result = evaluate_pages(drawn[0], GreyReader(), found_dir=drawn[1])
    assert (result["found"], result["true"], result["matched"], result["neutral"], result["ignored"]) == (3, 3, 2, 1, 1)
    assert result["f1"] == pytest.approx(2 / 3)
    # page: 0 + 1 (secund) + 5 (third, missed) + 3 (xyz, false); true polygons: 0 + 1 + 1 (thirt)
    assert result["characters"] == 27
    assert result["page_cer"] == pytest.approx(9 / 27)
    assert result["true_polygon_cer"] == pytest.approx(2 / 27)
    assert result["cer_ratio"] == pytest.approx(4.5)
    assert (result["segment_seconds_per_page"], result["segment_cpu_seconds_per_page"]) == (2.0, 1.5)
    table = format_table(result)
    assert "F1 0.667" in table and "page CER 0.3333" in table and "ratio 4.50" in table
    strict = evaluate_pages(drawn[0], None, found_dir=drawn[1], match_iou=0.7)  # line 2's IoU is 2/3
    assert (strict["matched"], strict["found"], strict["match_iou"]) == (1, 3, 0.7)


def test_a_segmenter_instead_of_found_lines(drawn):
    def segmenter(page):
        return [SimpleNamespace(polygon=p, baseline=()) for p in FOUND[:2]]

    result = evaluate_pages(drawn[0], GreyReader(), segmenter=segmenter, true_polygons=False)
    assert (result["found"], result["matched"], result["true_polygon_cer"]) == (2, 2, None)
    assert result["page_cer"] == pytest.approx((0 + 1 + 5) / 27)
    assert result["segment_seconds_per_page"] is not None and result["end_to_end_seconds_per_page"] is not None
    detection = evaluate_pages(drawn[0], None, segmenter=segmenter)
    assert (detection["matched"], detection["page_cer"], detection["end_to_end_seconds_per_page"]) == (2, None, None)


def test_references_are_normalised_as_training_reads_them():
    assert reference_text("un mot >barré< ici") == "un mot # ici"
    assert reference_text("l\u2019eau , dit-il .") == "l'eau, dit-il."
    assert reference_text("e\u0301te\u0301") == "\u00e9t\u00e9"


@pytest.mark.parametrize("command", [
    ["benchmarks/page_eval.py", "--pages"],
    ["training/evaluate.py", "--pages", "--data"],
])
def test_the_commands_print_json(drawn, command):
    """Both commands, with the bundled model (greedy) reading the found lines: detection is exact."""
    out = subprocess.run([sys.executable, *command, str(drawn[0]), "--found", str(drawn[1]), "--json",
                          "--min-line-confidence", "0"],  # score every given line, however it reads
                         cwd=REPO, capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(out.stdout)
    assert (result["found"], result["true"], result["matched"], result["neutral"], result["ignored"]) == (3, 3, 2, 1, 1)
    assert result["decoder"] == "greedy" and result["page_cer"] is not None and result["true_polygon_cer"] is not None


def test_missing_found_file_is_an_error(drawn, tmp_path, capsys):
    from training.evaluate import main

    assert main(["--pages", "--data", str(drawn[0]), "--found", str(tmp_path), "--detection-only"]) == 2
    assert "no found lines" in capsys.readouterr().err


@pytest.mark.skipif(not (SHARED / "stanford_memorials_1905_pages").is_dir()
                    or not (SHARED / "copiste_dun_jour" / "val").is_dir(), reason="no ../shared/data pages")
def test_real_pages_first_of_each_set():
    """The Stanford pages count handwritten lines only; the Copiste pages ignore the printed notice."""
    from text_recognizer.recognizer import LineRecognizer

    stanford = evaluate_pages(SHARED / "stanford_memorials_1905_pages", limit=1)
    assert stanford["pages"] == 1 and stanford["true"] == 11  # Lettre245: 11 handwritten lines, 1 printed
    from text_recognizer.segmentation.classical import segment_page  # it finds the printed notice

    copiste = evaluate_pages(SHARED / "copiste_dun_jour" / "val", LineRecognizer(), segment_page, limit=1,
                             min_confidence=0.0)  # every found line scored
    assert copiste["true"] == 25 and copiste["ignored"] > 0  # every line has text; the notice lies outside
    assert 0.2 < copiste["true_polygon_cer"] < 0.8 and copiste["page_cer"] >= copiste["true_polygon_cer"]
