"""Reading whole pages with the bundled model: pages composed from the fixture lines (known lines, known
order), words placed back on the page (also through the levelling rotation), lines that fail reported in
the line, the bad inputs (blank, 1x1, huge, truncated JPEG) and the CLI as a real subprocess."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from tests.segmentation.test_classical import FIXTURES, compose_page
from tests.test_page_formats import alto_schema, assert_valid, page_schema
from text_recognizer.data.folder import read_labels
from text_recognizer.data.linecut import cut_line_framed
from text_recognizer.metrics import cer
from text_recognizer.page_formats import alto_xml, page_xml
from text_recognizer.page_reader import PageReader, PageResult
from text_recognizer.recognizer import LineRecognizer, main
from text_recognizer.segmentation.classical import FoundLine
from text_recognizer.segmentation.scoring import match_lines

REPO = Path(__file__).resolve().parents[1]
NAMES = [record.path.name for record in read_labels(FIXTURES)]
TEXTS = [record.text for record in read_labels(FIXTURES)]
TOLERANCE = 4.0  # px: word polygons may reach this far past their line's polygon's box


@pytest.fixture(scope="module")
def recognizer() -> LineRecognizer:
    return LineRecognizer()  # the bundled model, greedy


@pytest.fixture(scope="module")
def composed(tmp_path_factory) -> tuple[Path, list]:
    page, truth = compose_page(NAMES)
    path = tmp_path_factory.mktemp("pages") / "composed.png"
    page.save(path)
    return path, truth


@pytest.fixture(scope="module")
def read(recognizer, composed) -> PageResult:
    return PageReader(recognizer).read(composed[0])


def inside(point, box, tolerance=TOLERANCE) -> bool:
    left, top, right, bottom = box
    return left - tolerance <= point[0] <= right + tolerance and top - tolerance <= point[1] <= bottom + tolerance


def test_a_composed_page_is_read_line_by_line_in_order(read, composed):
    path, truth = composed
    assert (read.image, (read.width, read.height)) == (str(path), Image.open(path).size)
    assert len(read.lines) == len(NAMES)
    matching = match_lines([line.polygon for line in read.lines], truth, (read.width, read.height))
    assert sorted((found, true) for found, true, _ in matching.pairs) == [(i, i) for i in range(len(NAMES))]
    assert [line.id for line in read.lines] == [f"line_{i}" for i in range(1, len(NAMES) + 1)]
    texts = [line.text for line in read.lines]
    assert all(isinstance(text, str) and text for text in texts), texts
    assert cer(TEXTS, texts) < 0.3, texts  # the bundled model reads the cut lines about as well as the files
    assert read.text == "\n".join(texts)
    for line in read.lines:
        assert line.error is None and 0.0 <= line.confidence <= 1.0
        assert [word.text for word in line.words] == line.text.split()


def test_words_lie_on_the_page_inside_their_lines(read):
    for line in read.lines:
        assert line.words
        for word in line.words:
            assert len(word.polygon) == 4 and 0.0 <= word.confidence <= 1.0
            for point in word.polygon:
                assert 0 <= point[0] <= read.width and 0 <= point[1] <= read.height
                assert inside(point, line.box), (word, line.box)
        lefts = [word.box[0] for word in line.words]
        assert lefts == sorted(lefts)  # left to right along the line


def test_json_keys(read):
    record = json.loads(json.dumps(read.to_dict()))
    assert list(record) == ["image", "width", "height", "lines", "text"]
    for line in record["lines"]:
        assert list(line) == ["id", "polygon", "baseline", "text", "confidence", "words"]
        assert all(len(point) == 2 for point in line["polygon"] + line["baseline"])
        for word in line["words"]:
            assert list(word) == ["text", "confidence", "polygon"]


def test_the_read_page_is_valid_page_xml_and_alto(read):
    assert_valid(page_schema(), page_xml(read))
    assert_valid(alto_schema(), alto_xml(read))


def test_words_on_a_tilted_page_follow_the_rotation(recognizer):
    page, truth = compose_page(NAMES[:4], angle=3.0)
    result = PageReader(recognizer).read(page, name="tilted")
    assert result.image == "tilted" and len(result.lines) == 4
    for line, box in zip(result.lines, truth):
        xs, ys = [p[0] for p in box], [p[1] for p in box]
        assert line.words
        for word in line.words:
            for point in word.polygon:
                assert inside(point, line.box, 6.0), (word, line.box)
            # the word's centre lies on the true (rotated) line
            cx, cy = np.mean([p[0] for p in word.polygon]), np.mean([p[1] for p in word.polygon])
            assert min(xs) - 6 <= cx <= max(xs) + 6 and min(ys) - 6 <= cy <= max(ys) + 6


@pytest.mark.parametrize("angle", [0.0, 2.5, -4.0])
def test_line_frame_maps_cut_pixels_back_to_the_page(angle):
    """A dot on a sloping line is found in the levelled cut, and the frame puts it back where it was."""
    page = Image.new("L", (600, 300), 255)
    draw = ImageDraw.Draw(page)
    slope = np.tan(np.deg2rad(angle))
    baseline = [(50.0, 150.0), (550.0, 150.0 + 500 * slope)]
    polygon = [(40.0, 110.0), (560.0, 110.0 + 520 * slope), (560.0, 170.0 + 520 * slope), (40.0, 170.0)]
    dot = (400.0, 140.0 + 350 * slope)
    draw.ellipse([dot[0] - 3, dot[1] - 3, dot[0] + 3, dot[1] + 3], fill=0)
    crop, frame = cut_line_framed(page, polygon, baseline)
    ink = np.argwhere(np.asarray(crop) < 128)  # (row, col)
    row, col = ink.mean(0)
    x, y = frame.to_page(col + 0.5, row + 0.5)
    assert abs(x - dot[0]) < 1.5 and abs(y - dot[1]) < 1.5, (x, y, dot)


def photo_without_writing() -> Image.Image:
    """A phone photo of a plain wall: light falling off towards a corner, sensor noise."""
    y, x = np.mgrid[0:1200, 0:900].astype(np.float32)
    light = 215 - 60 * ((x / 900) ** 2 + (y / 1200) ** 2) / 2  # (h, w)
    noise = np.random.default_rng(0).normal(0, 3, (1200, 900, 1))
    tint = np.array([1.0, 0.97, 0.9], dtype=np.float32)
    return Image.fromarray(np.clip(light[..., None] * tint + noise, 0, 255).astype(np.uint8), "RGB")


def test_pages_without_writing_have_no_lines(recognizer):
    reader = PageReader(recognizer)
    pages = (Image.new("RGB", (900, 1200), (243, 240, 231)), photo_without_writing(), Image.new("L", (1, 1), 255))
    for page in pages:
        result = reader.read(page, name="blank")
        assert result.lines == () and result.text == ""
        assert (result.width, result.height) == page.size


def test_a_line_that_cannot_be_cut_is_reported_in_the_line(recognizer, composed):
    def segmenter(page):
        return [FoundLine(((10.0, 10.0), (20.0, 10.0), (30.0, 10.0)), ((10.0, 10.0), (30.0, 10.0))),  # no area
                FoundLine(((80, 60), (470, 60), (470, 130), (80, 130)), ((80, 120), (470, 120)))]

    result = PageReader(recognizer, segmenter).read(composed[0])
    first, second = result.lines
    assert first.error.startswith("cannot cut the line: polygon has no area") and first.text == ""
    assert first.confidence is None and "error" in first.to_dict()
    assert second.error is None and second.text
    assert result.text == second.text


def test_huge_pages_are_refused_before_decoding(recognizer, composed, tmp_path):
    reader = PageReader(recognizer)
    with pytest.raises(ValueError, match=r"12000x9000 = 108,000,000 pixels is more than the page limit"):
        reader.read(Image.new("1", (12000, 9000)))
    small = PageReader(recognizer, max_pixels=10_000)
    with pytest.raises(ValueError, match=r"composed.png: .* is more than the page limit of 10,000 pixels"):
        small.read(composed[0])
    with pytest.raises(ValueError, match="max_pixels"):
        PageReader(recognizer, max_pixels=0)


def test_a_truncated_jpeg_is_a_clear_error(recognizer, tmp_path):
    buffer = io.BytesIO()
    Image.new("RGB", (600, 400), (250, 250, 250)).save(buffer, "JPEG")
    path = tmp_path / "cut.jpg"
    path.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    with pytest.raises(ValueError, match="cut.jpg: not a readable image"):
        PageReader(recognizer).read(path)


def test_read_page_on_the_recognizer_is_the_page_reader(recognizer, read, composed):
    again = recognizer.read_page(composed[0])
    assert again.to_dict() == read.to_dict()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "text_recognizer.recognizer", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=180)


def test_cli_json_pages_and_bad_ones(composed, tmp_path):
    blank = tmp_path / "blank.png"
    Image.new("L", (700, 900), 240).save(blank)
    truncated = tmp_path / "photo.jpg"
    buffer = io.BytesIO()
    Image.new("RGB", (600, 400), (200, 190, 180)).save(buffer, "JPEG")
    truncated.write_bytes(buffer.getvalue()[:300])
    start = time.perf_counter()
    done = run_cli("--page", str(composed[0]), str(blank), str(truncated), "--format", "json")
    seconds = time.perf_counter() - start
    assert done.returncode == 1, done.stderr
    assert "error:" in done.stderr and "photo.jpg" in done.stderr and "Traceback" not in done.stderr
    pages = json.loads(done.stdout)
    assert [page["image"] for page in pages] == [str(composed[0]), str(blank)]
    assert len(pages[0]["lines"]) == len(NAMES) and pages[1]["lines"] == [] and pages[1]["text"] == ""
    assert list(pages[0]) == ["image", "width", "height", "lines", "text"]
    print(f"CLI: 3 pages (one composed of {len(NAMES)} lines) in {seconds:.1f} s, model load included")


def test_cli_alto_files_into_an_output_dir(composed, tmp_path):
    out = tmp_path / "alto"
    done = run_cli("--page", str(composed[0].parent), "--format", "alto", "--output-dir", str(out))
    assert done.returncode == 0, done.stderr
    target = out / "composed.xml"
    assert done.stdout.strip() == f"{composed[0]} -> {target} ({len(NAMES)} lines)"
    assert_valid(alto_schema(), target.read_bytes())


@pytest.mark.parametrize(("args", "message"), [
    (["--page", "x.png", "--format", "page"], "needs --output-dir"),
    (["x.png", "--format", "alto", "--output-dir", "out"], "needs --page"),
    (["--page", "--page-xml", "x.xml", "--output-dir", "out"], "give one of them"),
])
def test_cli_usage_errors(args, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_cli_text_of_several_pages_in_process(composed, tmp_path, capsys):
    blank = tmp_path / "blank.png"
    Image.new("L", (500, 700), 250).save(blank)
    assert main(["--page", str(composed[0]), str(blank), "--format", "text", "--progress", "never"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"==> {composed[0]} <==\n") and f"\n\n==> {blank} <==\n" in out
    assert len(out.split("\n\n==>")[0].splitlines()) == 1 + len(NAMES)


def test_cli_never_overwrites_a_file_beside_the_image(composed, tmp_path, capsys):
    folder = tmp_path / "pages"
    folder.mkdir()
    image = folder / "letter.png"
    image.write_bytes(composed[0].read_bytes())
    truth = folder / "letter.xml"
    truth.write_text("<PcGts/>")  # a ground truth beside its image
    assert main(["--page", str(image), "--format", "page", "--output-dir", str(folder)]) == 1
    assert "already there beside the image" in capsys.readouterr().err
    assert truth.read_text() == "<PcGts/>"


@pytest.mark.parametrize(("module", "args", "message"), [
    ("text_recognizer.segmentation.classical", ["--format", "json"], "reading pages needs scipy"),
    ("lxml", ["--format", "alto", "--output-dir", "out"], "PAGE-XML and ALTO output need lxml"),
])
def test_cli_without_the_page_extra_says_what_to_install(module, args, message, composed, monkeypatch, capsys):
    from text_recognizer.segmentation import choose

    monkeypatch.setitem(sys.modules, module, None)  # as in the base install
    if module.startswith("text_recognizer.segmentation"):  # both segmenters need scipy
        monkeypatch.setitem(sys.modules, "text_recognizer.segmentation.learned", None)
        choose._learned.cache_clear()
    assert main(["--page", str(composed[0]), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "pip install 'text-recognizer[page]'" in err and "Traceback" not in err


def test_lines_read_with_a_low_confidence_are_left_out_and_counted():
    """A "line" of specks below three written lines reads as nothing, or as garbage at a low confidence: dropped by
    default, kept with min_confidence=0; on a page of nothing but specks it is dropped only if it reads as nothing
    (a line that holds some text is kept there: nothing reads better)."""
    written, boxes = compose_page(["line_00.png", "line_01.png", "line_02.png"])
    page = Image.new("L", (written.width, written.height + 200), 235)
    page.paste(written, (0, 0))
    draw = ImageDraw.Draw(page)
    rng = np.random.default_rng(0)
    top = written.height + 40
    for _ in range(60):
        x, y = rng.integers(100, 900), rng.integers(top + 20, top + 100)
        draw.ellipse((x, y, x + 4, y + 3), fill=120)
    specks = FoundLine(((100, top), (900, top), (900, top + 120), (100, top + 120)),
                       ((100, top + 100), (900, top + 100)))
    lines = [FoundLine(tuple(box), (box[3], box[2])) for box in boxes] + [specks]
    recognizer = LineRecognizer()
    kept = PageReader(recognizer, lambda _: lines, min_confidence=0.0).read(page)
    assert len(kept.lines) == 4 and kept.dropped == 0
    assert not kept.lines[3].text.strip() or kept.lines[3].confidence < 0.2
    dropped = PageReader(recognizer, lambda _: lines).read(page)
    assert [line.text for line in dropped.lines] == [line.text for line in kept.lines[:3]] and dropped.dropped == 1
    assert dropped.to_dict()["dropped_lines"] == 1 and "dropped_lines" not in kept.to_dict()
    alone = PageReader(recognizer, lambda _: [specks]).read(page)
    blank = not kept.lines[3].text.strip()
    assert (len(alone.lines), alone.dropped) == ((0, 1) if blank else (1, 0))
    with pytest.raises(ValueError, match="min_confidence"):
        PageReader(recognizer, lambda _: [], min_confidence=1.5)


def test_a_page_result_survives_its_json(read):
    """``PageResult.from_dict(result.to_dict())`` gives the same page back (a batch run writes other formats from
    the saved JSON later)."""
    back = PageResult.from_dict(json.loads(json.dumps(read.to_dict())))
    assert back.to_dict() == read.to_dict() and len(back.lines) == len(read.lines)
    assert back.lines[0].words[0].box == pytest.approx(read.lines[0].words[0].box, abs=0.06)
