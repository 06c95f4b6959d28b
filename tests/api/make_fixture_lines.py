"""Regenerate ``tests/fixtures/lines/``: a few synthetic handwriting lines with ``labels.tsv``.

    python tests/api/make_fixture_lines.py

The lines are rendered by our own generator (``text_recognizer.data.synthetic``), so the fixtures
carry no third-party data. The API tests overfit a tiny model on exactly these lines. Every line
is padded on the right with its own paper tone to one common width: batches then need no
padding, so the BiLSTM sees the same input in a batch as alone and batch and single predictions
agree exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from text_recognizer.data.synthetic import render_line

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lines"
WIDTH = 384
TEXTS = (
    "hello world",
    "move the table",
    "A quiet river",
    "seven cats",
    "read it now",
    "blue sky 42",
    "the old map",
    "Good day",
)


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    rows = ["file\ttext"]
    for i, text in enumerate(TEXTS):
        name = f"line_{i:02d}.png"
        line = render_line(text, np.random.default_rng(i), height=64)
        assert line.width <= WIDTH, (text, line.size)
        paper = int(np.median(np.asarray(line)))
        canvas = Image.new("L", (WIDTH, line.height), paper)
        canvas.paste(line, (0, 0))
        canvas.save(FIXTURES / name, optimize=True)
        rows.append(f"{name}\t{text}")
    (FIXTURES / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    print(f"wrote {len(TEXTS)} lines to {FIXTURES}")


if __name__ == "__main__":
    main()
