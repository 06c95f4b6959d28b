from __future__ import annotations

import pytest
from PIL import Image

from tests.segmentation.synthetic.drawn import drawn_lines


@pytest.fixture(scope="package")
def lines() -> list[Image.Image]:
    return drawn_lines()
