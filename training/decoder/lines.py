"""The lines a decoder is tuned on: labelled held-out lines, the model's log-probabilities of them, and a cache.

Why a cache: choosing beam settings decodes the same lines dozens of times, and running the model is most of
a decode's time on a CPU; the model runs once (``cache_lines``), every setting after that only re-decodes.
The log-probabilities come through ``LineRecognizer`` (its stem, deslanting, width-sorted batching and
log-softmax, and with ``shift`` > 0 its three readings averaged), so settings are tuned on what reading decodes.

A cache file holds ``{files, references, log_probs: [(T, C) float16], checkpoint_sha256, shift}``, lines
sorted by file name; references are the labels as written, in Unicode NFC (``--detokenize`` at tuning time
turns IAM-tokenised ones into natural spacing). Files written by the older ``benchmarks/decode_logits.py``
(no sha256, no shift) read the same.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from text_recognizer.data.folder import LineRecord, open_image, read_labels
from text_recognizer.data.page import cut_layout_folder, is_layout_folder
from text_recognizer.data.tokenization import detokenize
from text_recognizer.line_batches import read_in_batches
from text_recognizer.normalization import normalizer
from text_recognizer.recognizer import LineRecognizer


@dataclass
class CachedLines:
    """A model's log-probabilities of labelled lines, in file-name order (what a cache file holds)."""

    files: list[str]
    references: list[str]
    log_probs: list[torch.Tensor]  # each (T, C), float32 once loaded
    checkpoint_sha256: str | None = None  # None: an older cache that did not record it
    shift: int = 0  # 0: one reading; else the three readings' copies moved this many pixels

    def half(self, which: str) -> CachedLines:
        """``first`` or ``second`` half of the lines in file-name order (``all``: every line).

        Why halves: settings chosen on the first half of IAM val are measured on the second (the bundled
        model's decoder is tuned that way)."""
        n = len(self.files)
        part = {"first": slice(0, n // 2), "second": slice(n // 2, n), "all": slice(0, n)}.get(which)
        if part is None:
            raise ValueError(f"half must be first, second or all, got {which!r}")
        return CachedLines(self.files[part], self.references[part], self.log_probs[part], self.checkpoint_sha256,
                           self.shift)


def checkpoint_sha256(checkpoint: str | Path) -> str:
    """The sha256 a bundle records for its model (as the recognizer computes it to warn on a mismatch)."""
    return hashlib.sha256(Path(checkpoint).read_bytes()).hexdigest()


def held_out_records(folders: Sequence[str | Path], detokenized: bool = False) -> list[LineRecord]:
    """Labelled lines from dataset folders (``labels.tsv``) or PAGE/ALTO folders, texts in Unicode NFC
    (``detokenized``: IAM-tokenised labels turned into natural spacing, for models that write it)."""
    nfc = normalizer("NFC")
    records: list[LineRecord] = []
    for folder in map(Path, folders):
        found = cut_layout_folder(folder).records if is_layout_folder(folder) else read_labels(folder)
        for record in found:
            text = nfc(record.text)
            records.append(LineRecord(record.path, detokenize(text) if detokenized else text))
    return records


@torch.inference_mode()
def _recognizer_log_probs(recognizer: LineRecognizer, records: Sequence[LineRecord],
                          shift: int) -> list[torch.Tensor]:
    lines = [recognizer.preprocess(open_image(Path(record.path))) for record in records]
    model, device = recognizer.model, recognizer.device

    def log_probs_of(batch: torch.Tensor, widths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # as LineRecognizer.predict_tensors does: the same batches, the same log-softmax
        logits = model(batch.to(device), widths)  # (N, T, C)
        return logits.float().log_softmax(-1).cpu(), model.output_lengths(widths)  # (N, T, C), (N,)

    def keep(log_probs: torch.Tensor, stem_width: int, size: tuple[int, int] | None) -> torch.Tensor:
        return log_probs  # (T, C) valid frames (three readings: their mean): decoded later, many times

    return read_in_batches(lines, None, recognizer.batch_size, log_probs_of, keep, shift)  # type: ignore[arg-type]


def held_out_log_probs(checkpoint: str | Path, records: Sequence[LineRecord], shift: int = 0) -> list[torch.Tensor]:
    """The model's ``(frames, classes)`` float32 CPU log-probabilities of each line, in ``records`` order;
    ``shift`` > 0: the log of the mean probability over the line and two copies moved ``shift`` px up and down
    (``text_recognizer.decoding.readings``), what ``--readings 3`` decodes."""
    recognizer = LineRecognizer(checkpoint, decoder_bundle=False)
    if recognizer.loss != "ctc":
        raise ValueError(f"{checkpoint} was trained with loss {recognizer.loss!r}: only CTC models have beam "
                         "settings to tune")
    # cloned outside inference mode: the decoders change copies of them in place
    return [log_probs.clone().contiguous() for log_probs in _recognizer_log_probs(recognizer, records, shift)]


def cache_lines(checkpoint: str | Path, folders: Sequence[str | Path], shift: int = 0) -> CachedLines:
    """The model's log-probabilities of every labelled line of ``folders``, sorted by file name."""
    records = sorted(held_out_records(folders), key=lambda record: Path(record.path).name)
    if not records:
        raise ValueError(f"no labelled lines in {', '.join(map(str, folders))}")
    log_probs = held_out_log_probs(checkpoint, records, shift)
    return CachedLines([Path(r.path).name for r in records], [r.text for r in records], log_probs,
                       checkpoint_sha256(checkpoint), shift)


def save_cache(lines: CachedLines, path: Path) -> Path:
    """Write ``lines`` (log-probabilities in float16: half the size, the same decodes to the 3rd decimal)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"files": lines.files, "references": lines.references,
                "log_probs": [lp.half() for lp in lines.log_probs],
                "checkpoint_sha256": lines.checkpoint_sha256, "shift": lines.shift}, path)
    return path


def load_cache(path: Path) -> CachedLines:
    """A cache file back, log-probabilities in float32; ``ValueError`` for a file that is not one."""
    try:
        data = torch.load(path, weights_only=True)
        files, references, log_probs = data["files"], data["references"], data["log_probs"]
    except (OSError, RuntimeError, KeyError, TypeError, EOFError, pickle.UnpicklingError) as error:
        raise ValueError(f"{path} is not a cache of log-probabilities (python -m training.decoder cache): "
                         f"{error}") from error
    if not len(files) == len(references) == len(log_probs):
        raise ValueError(f"{path}: {len(files)} files, {len(references)} references, {len(log_probs)} lines")
    return CachedLines(list(files), list(references), [lp.float() for lp in log_probs],
                       data.get("checkpoint_sha256"), int(data.get("shift", 0)))
