"""Word and character positions are in the pixels of the image the user gave, through every entry point.

The bug this guards against (issue 64): ``python -m text_recognizer.recognizer --json`` reported
positions in the model's 40-px-high pixels, so on a 64-px line the last word ended at 40/64 of the
width. The same line images, 40, 64 and 150 px high plus a slanted one, are read through the Python
API, the command line as a real ``python -m`` process (``--json`` on one file, ``--format jsonl`` on
several, greedy and beam, PyTorch and ``--onnx``) and a real uvicorn server, and must agree within a
pixel, with the last character of a line written edge to edge ending near the right edge.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from tests.api.conftest import SERVER_ENV, Server
from text_recognizer.recognizer import LineRecognizer

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "lines"
HEIGHTS = (40, 64, 150)
TOLERANCE_PX = 1.0


def edge_to_edge(path: Path, height: int, slant: float = 0.0) -> Image.Image:
    """The fixture line cut to its ink (2 px of paper each side), sheared by ``slant`` (x per y), at ``height``."""
    image = Image.open(path).convert("L")
    if slant:
        pad = int(abs(slant) * image.height) + 1
        wide = Image.new("L", (image.width + pad, image.height), 255)
        wide.paste(image, (pad if slant > 0 else 0, 0))
        image = wide.transform(wide.size, Image.Transform.AFFINE, (1, slant, 0, 0, 1, 0),
                               resample=Image.Resampling.BILINEAR, fillcolor=255)
    ink = np.asarray(image) < 128  # (h, w)
    columns, rows = np.flatnonzero(ink.any(0)), np.flatnonzero(ink.any(1))
    box = (max(0, columns[0] - 2), max(0, rows[0] - 2), min(image.width, columns[-1] + 3),
           min(image.height, rows[-1] + 3))
    image = image.crop(box)
    return image.resize((round(image.width * height / image.height), height), Image.Resampling.LANCZOS)


@pytest.fixture(scope="module")
def lines(tmp_path_factory) -> list[Path]:
    """Two fixture lines at each height, and one of them slanted: seven PNGs."""
    folder = tmp_path_factory.mktemp("heights")
    paths = []
    for name in ("line_01.png", "line_02.png"):
        for height in HEIGHTS:
            target = folder / f"{Path(name).stem}_h{height}.png"
            edge_to_edge(FIXTURES / name, height).save(target)
            paths.append(target)
    slanted = folder / "line_01_slanted.png"
    edge_to_edge(FIXTURES / "line_01.png", 64, slant=0.35).save(slanted)
    return [*paths, slanted]


@pytest.fixture(scope="module")
def reference(lines) -> dict[str, dict[str, list]]:
    """Positions from the Python API, per decoder: {decoder: {file name: [(text, start, end) of words+chars]}}."""
    out = {}
    for decoder in ("greedy", "beam"):
        read = LineRecognizer(decoder=decoder).predict_lines(lines)
        out[decoder] = {path.name: spans(line.to_dict()) for path, line in zip(lines, read)}
    return out


def spans(record: dict) -> list[tuple[str, float, float]]:
    return [(s["text"], s["start"], s["end"]) for key in ("words", "chars") for s in record.get(key) or ()]


def assert_same_positions(ours: list, theirs: list, where: str) -> None:
    assert [s[0] for s in ours] == [s[0] for s in theirs], where
    worst = max((max(abs(a[1] - b[1]), abs(a[2] - b[2])) for a, b in zip(ours, theirs)), default=0.0)
    assert worst <= TOLERANCE_PX, f"{where}: positions differ by {worst:.1f} px"


def cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "text_recognizer.recognizer", "--progress", "never", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_last_character_ends_at_the_right_edge_at_every_height(lines, reference):
    for decoder, by_file in reference.items():
        for path in lines:
            width = Image.open(path).width
            chars = [s for s in by_file[path.name] if len(s[0]) == 1]
            assert chars, f"{path.name}: nothing read"
            end = max(s[2] for s in chars)
            # the stem pads and the last window reaches past the ink: within 7% of the width of the edge
            assert 0.93 * width <= end <= width, f"{decoder} {path.name}: last character ends at {end:.1f} of {width}"


@pytest.mark.parametrize("decoder", ["greedy", "beam"])
def test_cli_json_and_jsonl_give_the_python_positions(lines, reference, decoder):
    single = json.loads(cli("--json", "--decoder", decoder, str(lines[1])))
    assert_same_positions(spans(single[0]), reference[decoder][lines[1].name], f"--json {lines[1].name}")
    many = [json.loads(row) for row in cli("--format", "jsonl", "--decoder", decoder, *map(str, lines)).splitlines()]
    assert len(many) == len(lines)
    for record in many:
        name = Path(record["image"]).name
        assert_same_positions(spans(record), reference[decoder][name], f"jsonl {decoder} {name}")
    folder = [json.loads(row) for row in cli("--format", "jsonl", "--decoder", decoder,
                                              str(lines[0].parent)).splitlines()]
    assert {Path(r["image"]).name for r in folder} == {p.name for p in lines}
    for record in folder:
        assert_same_positions(spans(record), reference[decoder][Path(record["image"]).name], "folder mode")


def test_cli_with_onnx_runtime_gives_the_python_positions(lines, reference, tmp_path):
    pytest.importorskip("onnxruntime")
    from text_recognizer.export import export_recognizer

    exported = export_recognizer(LineRecognizer(), tmp_path / "default.onnx", "onnx")
    for record in map(json.loads, cli("--onnx", str(exported), "--format", "jsonl", *map(str, lines)).splitlines()):
        name = Path(record["image"]).name
        assert_same_positions(spans(record), reference["greedy"][name], f"--onnx {name}")


def test_http_api_gives_the_python_positions(lines, reference):
    server = Server(SERVER_ENV)  # the bundled model
    try:
        server.wait_healthy(timeout=120)
        for decoder in ("greedy", "beam"):
            for path in lines:
                response = httpx.post(f"{server.url}/v1/predict", params={"decoder": decoder},
                                      files={"file": (path.name, path.read_bytes(), "image/png")}, timeout=60)
                assert response.status_code == 200, response.text
                assert_same_positions(spans(response.json()), reference[decoder][path.name],
                                      f"API {decoder} {path.name}")
    finally:
        server.stop()
