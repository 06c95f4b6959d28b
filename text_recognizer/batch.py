"""Read many line images with one recognizer: batched, in input order, one bad file never stops the rest.

Why: the CLI is pointed at folders of thousands of lines, where a truncated download or a stray
non-image is normal. Each file is opened and preprocessed on its own, failures become results with
an error message, and the good ones are decoded ``batch_size`` at a time, so memory stays bounded
and results stream out as they are ready.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from text_recognizer.data.folder import open_image
from text_recognizer.decoding.greedy import DecodedLine
from text_recognizer.stem import oriented_size


@dataclass(frozen=True)
class FileResult:
    """The outcome for one input file: ``line`` when it was read, else ``error`` says why not."""

    path: Path
    line: DecodedLine | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.line is not None


def recognize_files(recognizer, paths: Sequence[Path], batch_size: int = 16,
                    on_result: Callable[[FileResult], None] | None = None) -> Iterator[FileResult]:
    """Yield a :class:`FileResult` per path, in order; ``recognizer`` is a ``LineRecognizer`` or an
    ``OnnxLineRecognizer`` (anything with ``preprocess`` and ``predict_tensors(lines, image_sizes)``).

    ``on_result`` (e.g. a progress bar's update) is called once per file as its result is ready.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    for start in range(0, len(paths), batch_size):
        chunk = paths[start : start + batch_size]
        tensors: list[torch.Tensor] = []
        sizes: list[tuple[int, int]] = []
        errors: dict[int, str] = {}
        for i, path in enumerate(chunk):
            try:
                image = open_image(Path(path))
                tensors.append(recognizer.preprocess(image))
                sizes.append(oriented_size(image))
            except (ValueError, OSError) as error:  # unreadable, not an image, no pixels
                message = str(error)
                errors[i] = message if str(path) in message else f"{path}: {message}"
        # original sizes always: positions in the images' pixels (not the model's), whatever reads them
        decoded = iter(recognizer.predict_tensors(tensors, sizes)) if tensors else iter(())
        for i, path in enumerate(chunk):
            result = FileResult(Path(path), error=errors[i]) if i in errors else FileResult(Path(path), next(decoded))
            if on_result is not None:
                on_result(result)
            yield result
