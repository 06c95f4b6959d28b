"""Helpers for the dataset tests: a local HTTP server and tiny archives in the real formats."""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw


class _Handler(SimpleHTTPRequestHandler):
    """Serves a folder; ``/partial/<file>`` announces the full length but sends half and closes."""

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:  # noqa: N802
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        if self.path.startswith("/partial/"):
            data = (Path(self.directory) / self.path.removeprefix("/partial/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        super().do_GET()


@contextmanager
def http_server(directory: Path) -> Iterator[tuple[str, list[str]]]:
    """Serve ``directory`` on 127.0.0.1 (a free port); yields (base URL, list of requested paths)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(directory)))
    server.hits = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.hits  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_metadata(path: Path, entries: dict[str, tuple[str, str, str]]) -> Path:
    """A metadata.toml with ``{key: (file, url, sha256)}``."""
    text = "".join(f'[files.{k}]\nfile = "{f}"\nurl = "{u}"\nsha256 = "{s}"\n\n' for k, (f, u, s) in entries.items())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# IAM
# ---------------------------------------------------------------------------------------------

#: (line id, ok flag, grey level, IAM transcription with | between words)
IAM_LINES = [
    ("a01-000u-00", "ok", 154, "A|MOVE|to|stop|Mr.|Gaitskell|from"),
    ("a01-000u-01", "err", 156, "nominating|any|more|Labour|life|Peers"),
    ("a01-000u-02", "ok", 157, "is|to|be|made|at|a|meeting|of|Labour"),
    ("a01-003-00", "ok", 160, 'Leeds|,|Ontario|:|"|it|\'s|fine|"|.'),
    ("b02-010-00", "ok", 170, "(|Rialto|)|said|Tolch|."),
    ("b02-010-01", "ok", 170, "What|'s|going|on|?"),
    ("c03-020-00", "ok", 150, "left|in|no|list|writer|c"),
    ("d04-030-00", "ok", 150, "left|in|no|list|writer|d"),
    ("e05-040-00", "ok", 150, "same|writer|as|val"),  # in no list, but a val writer: excluded
]
#: form -> writer
IAM_FORMS = {
    "a01-000u": "000",
    "a01-003": "001",
    "b02-010": "002",
    "c03-020": "003",
    "d04-030": "000",
    "e05-040": "001",
}
IAM_SPLITS = {
    "trainset.txt": ["a01-000u-00", "a01-000u-01", "a01-000u-02"],
    "validationset1.txt": ["a01-003-00"],
    "validationset2.txt": ["b02-010-00"],
    "testset.txt": ["b02-010-01"],
}


def _line_png(text: str, seed: int) -> bytes:
    """A grey 'scan' of a line: light grey paper (value 240) and darker strokes."""
    rng = np.random.default_rng(seed)
    image = Image.new("L", (40 * len(text) // 2 + 60, 90), 240)
    draw = ImageDraw.Draw(image)
    x = 10
    for _ in text.replace(" ", ""):
        draw.line(
            [(x, 70), (x + 6, 20 + int(rng.integers(0, 10))), (x + 12, 70)], fill=int(rng.integers(20, 90)), width=4
        )
        x += 20
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def make_iam_archives(folder: Path) -> Path:
    """``lines.tgz``, ``ascii.tgz`` and the split zip in IAM's real layouts, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(folder / "lines.tgz", "w:gz") as tar:
        for i, (line_id, _, _, text) in enumerate(IAM_LINES):
            form = line_id.rsplit("-", 1)[0]
            _add(tar, f"lines/{form.split('-')[0]}/{form}/{line_id}.png", _line_png(text.replace("|", " "), i))
    header = (
        "#--- lines.txt ---\n# format: a01-000u-00 ok 154 19 408 746 1661 89 A|MOVE|to|stop|Mr.|Gaitskell|from\n#\n"
    )
    lines_txt = header + "".join(f"{i} {ok} {g} 19 408 746 1661 89 {t}\n" for i, ok, g, t in IAM_LINES)
    forms_txt = "#--- forms.txt ---\n" + "".join(f"{f} {w} 2 prt 7 5 52 36\n" for f, w in IAM_FORMS.items())
    with tarfile.open(folder / "ascii.tgz", "w:gz") as tar:
        _add(tar, "ascii/lines.txt", lines_txt.encode())
        _add(tar, "ascii/forms.txt", forms_txt.encode())
    with zipfile.ZipFile(folder / "largeWriterIndependentTextLineRecognitionTask.zip", "w") as archive:
        for name, ids in IAM_SPLITS.items():
            archive.writestr(name, "\n".join(ids) + "\n")
    return folder


# ---------------------------------------------------------------------------------------------
# EMNIST
# ---------------------------------------------------------------------------------------------

EMNIST_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def fake_emnist_images(labels: np.ndarray) -> np.ndarray:
    """Upright 28x28 ink-high images: a bar in the top rows, and the class as a column of ink."""
    images = np.zeros((len(labels), 28, 28), dtype=np.uint8)
    images[:, 2:4, 4:24] = 255  # the "top" marker (tests the MATLAB column-major order)
    for n, label in enumerate(labels):
        images[n, 6:26, 4 + int(label) % 20] = 200
    return images


def make_emnist_zip(folder: Path, per_class: int = 3) -> Path:
    """``matlab.zip`` with ``matlab/emnist-byclass.mat`` in EMNIST's real struct layout."""
    from scipy.io import savemat

    def split(seed: int) -> dict:
        labels = np.repeat(np.arange(len(EMNIST_CHARS)), per_class)
        images = fake_emnist_images(labels)
        flat = images.reshape(len(labels), -1, order="F")  # MATLAB stores each image column by column
        return {"images": flat, "labels": labels[:, None].astype(np.float64)}

    mapping = np.array([[k, ord(c)] for k, c in enumerate(EMNIST_CHARS)], dtype=np.float64)
    buffer = io.BytesIO()
    savemat(buffer, {"dataset": {"train": split(0), "test": split(1), "mapping": mapping}})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matlab.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("matlab/emnist-byclass.mat", buffer.getvalue())
        archive.writestr("matlab/emnist-digits.mat", b"not needed")
    return path
