"""How the recognizer CLI writes its results: plain text, JSON Lines, or one JSON list.

Why separate: the formats are a contract with scripts downstream (``jq``, spreadsheets), so they
are defined and tested in one place, independent of how the lines were read.

- ``text``: ``FILE<TAB>TEXT`` per line (just ``TEXT`` when a single file was asked for);
- ``jsonl``: one object ``{"image", "text", "confidence"}`` per line, written as each batch is done (with
  ``language``, the ISO 639-1 code of the language models, when the line was beam-decoded with them);
- ``json``: a JSON list of those objects, written at the end (the CLI's original ``--json``).

Files that could not be read appear in no format (they are reported on stderr instead).
"""

from __future__ import annotations

import json
from typing import TextIO

from text_recognizer.batch import FileResult

FORMATS = ("text", "jsonl", "json")


def result_record(result: FileResult) -> dict:
    """The JSON object for a successfully read file."""
    if result.line is None:
        raise ValueError(f"result for {result.path} has no text (error: {result.error})")
    record = {"image": str(result.path), "text": result.line.text, "confidence": round(result.line.confidence, 4)}
    if getattr(result.line, "language", None) is not None:  # beam search: the language whose LMs read it
        record["language"] = result.line.language
    for key in ("words", "chars"):  # [{text, confidence, start, end}], x in pixels of the image
        spans = getattr(result.line, key, ())
        if spans:
            record[key] = [span.to_dict() for span in spans]
    return record


class ResultWriter:
    """Writes results to ``stream`` in ``fmt``; call :meth:`write` per result and :meth:`close` once."""

    def __init__(self, stream: TextIO, fmt: str = "text", with_paths: bool = True):
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
        self.stream, self.fmt, self.with_paths = stream, fmt, with_paths
        self._collected: list[dict] = []

    def write(self, result: FileResult) -> None:
        if not result.ok:
            return
        if self.fmt == "text":
            text = result.line.text  # type: ignore[union-attr]
            self.stream.write(f"{result.path}\t{text}\n" if self.with_paths else f"{text}\n")
        elif self.fmt == "jsonl":
            self.stream.write(json.dumps(result_record(result), ensure_ascii=False) + "\n")
        else:
            self._collected.append(result_record(result))
            return
        self.stream.flush()

    def close(self) -> None:
        if self.fmt == "json":
            self.stream.write(json.dumps(self._collected, indent=2, ensure_ascii=False) + "\n")
            self.stream.flush()
