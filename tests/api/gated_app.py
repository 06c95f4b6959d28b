"""``uvicorn tests.api.gated_app:app``: the real app whose model load waits until the file named by
``TEXT_RECOGNIZER_TEST_LOAD_GATE`` exists, so a test can watch readiness during a slow load."""

from __future__ import annotations

import os
import time
from pathlib import Path

from api.app import create_app
from api.serving import Serving, load_serving
from api.settings import Settings


def gated_load(settings: Settings) -> Serving:
    gate = Path(os.environ["TEXT_RECOGNIZER_TEST_LOAD_GATE"])
    while not gate.exists():
        time.sleep(0.05)
    return load_serving(settings)


app = create_app(load=gated_load)
