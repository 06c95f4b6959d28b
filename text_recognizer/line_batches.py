"""Read many preprocessed lines with one network: width-sorted batches, optional three readings, one
decoded line per input, in input order.

Why one loop: ``LineRecognizer`` (PyTorch) and ``OnnxLineRecognizer`` (ONNX Runtime) differ only in how
the network runs; batching by width (little padding), the three-readings copies and their mean, and
the frame -> image-pixel geometry of every line must be the same for both, so they live here once.
Positions come out in the original image's pixels whenever the caller gives the line's original size
(``text_recognizer.decoding.decoder.Geometry.for_line`` is the one place that maps frames to pixels).
``LineReader.predict_tensors`` is that loop with the decoding both share: greedy or beam, one or three
readings, in a language or ``auto`` (``text_recognizer.decoding.line_decoders``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import torch
from PIL import Image

from text_recognizer.codec import Codec
from text_recognizer.data.folder import open_image
from text_recognizer.data.lines import pad_lines, width_sorted_chunks
from text_recognizer.decoding.decoder import Geometry
from text_recognizer.decoding.greedy import DecodedLine, ctc_decode
from text_recognizer.decoding.language import LanguageError
from text_recognizer.decoding.line_decoders import LanguageDecoders
from text_recognizer.decoding.readings import mean_of_readings, with_shifted_copies
from text_recognizer.stem import oriented_size

T = TypeVar("T")
#: ``(batch (N, 1, H, W), widths (N,)) -> (log-probabilities (N, T, C) on the CPU, valid frames (N,))``
LogProbsFn = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
#: ``(one line's valid log-probabilities (T, C), its stem width, its original (width, height) or None)`` -> its
#: result (a ``DecodedLine``, or what is kept of the line to decode it later)
DecodeFn = Callable[[torch.Tensor, int, "tuple[int, int] | None"], T]


def read_in_batches(lines: Sequence[torch.Tensor], image_sizes: Sequence[tuple[int, int]] | None,
                    batch_size: int, log_probs_of: LogProbsFn, decode: DecodeFn, shift: int = 0,
                    min_width: int = 1) -> list[T]:
    """Decode ``(1, H, W_i)`` stem outputs ``batch_size`` at a time in order of width.

    ``shift`` > 0 reads each line three times (as it is, moved ``shift`` px up and down) and decodes the
    mean of the three posteriors (``text_recognizer.decoding.readings``). ``min_width`` widens batches
    for networks that need at least one whole window.
    """
    if image_sizes is not None and len(image_sizes) != len(lines):
        raise ValueError(f"image_sizes has {len(image_sizes)} entries for {len(lines)} lines")
    results: list[T | None] = [None] * len(lines)
    for chunk in width_sorted_chunks([line.shape[-1] for line in lines], batch_size):
        batch, widths = pad_lines([lines[i] for i in chunk], min_width=min_width)  # (B, 1, H, W), (B,)
        if shift:
            copies = with_shifted_copies(batch, shift)  # (3B, 1, H, W)
            log_probs, frames = log_probs_of(copies, widths.repeat(3))  # (3B, T, C), (3B,)
            log_probs, frames = mean_of_readings(log_probs, 3), frames[: len(chunk)]  # (B, T, C), (B,)
        else:
            log_probs, frames = log_probs_of(batch, widths)  # (B, T, C), (B,)
        for row, i in enumerate(chunk):
            size = image_sizes[i] if image_sizes is not None else None
            results[i] = decode(log_probs[row, : int(frames[row])], lines[i].shape[-1], size)
    return results  # type: ignore[return-value]


class LineReader:
    """What ``LineRecognizer`` and ``OnnxLineRecognizer`` share: reading preprocessed lines and images, with
    positions in their pixels, decoded by ``decoders`` (``LanguageDecoders``: greedy or beam, one or three
    readings, a language or ``auto``).

    A subclass sets ``codec``, ``decoders``, ``batch_size`` and ``is_ctc``, and gives ``preprocess`` (image ->
    ``(1, H, W)``), ``log_probs_of`` (its network, a ``LogProbsFn``) and ``geometry``; ``min_width`` widens
    batches for networks that need one whole window.
    """

    codec: Codec
    decoders: LanguageDecoders
    batch_size: int
    is_ctc: bool = True
    min_width: int = 1

    def preprocess(self, image: Image.Image | str | Path) -> torch.Tensor:
        raise NotImplementedError

    def log_probs_of(self, batch: torch.Tensor, widths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def geometry(self, stem_width: int, image_size: tuple[int, int] | None = None) -> Geometry:
        raise NotImplementedError

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages this model beam-decodes with language models (its decoder bundles'), sorted."""
        return self.decoders.bundles.languages

    @property
    def language(self) -> str | None:
        """The default language of beam search: a code, ``"auto"``, or ``None`` (no bundle, or no LMs); a language
        asked for that the model lacks stays as asked (beam search refuses it, greedy reading ignores it)."""
        if not self.decoders.use_lm:
            return None
        try:
            return self.decoders.bundles.resolve(self.decoders.requested)
        except LanguageError:
            return self.decoders.requested

    def language_for(self, decoder: str | None = None, language: str | None = None) -> str | None:
        """What ``language`` means with ``decoder`` (``None``: the defaults): a code, ``"auto"``, or ``None``
        where the language does not matter (greedy); ``LanguageError`` for one beam search cannot read."""
        return self.decoders.language_for(self.decoders.name if decoder is None else decoder, language)

    def readings_available(self, language: str | None = None) -> tuple[int, ...]:
        """Readings per line this model can decode with in ``language`` as ``language_for`` gives it (``None``:
        with its primary bundle; 3 needs a bundle with settings for it, or none at all)."""
        return self.decoders.readings_available(language)

    @torch.inference_mode()
    def predict_tensors(self, lines: Sequence[torch.Tensor], image_sizes: Sequence[tuple[int, int]] | None = None,
                        decoder: str | None = None, readings: int | None = None, language: str | None = None,
                        together: bool = False) -> list[DecodedLine]:
        """Decode preprocessed ``(1, H, W)`` lines, batched by similar width to limit padding, in input order.

        ``image_sizes`` (original ``(width, height)`` per line) puts word and character positions in the
        original images' pixels; without it they are in preprocessed pixels. ``decoder`` (``"greedy"`` or
        ``"beam"``), ``readings`` (1 or 3) and ``language`` (a code or ``"auto"``; it matters for beam search
        only) override this reader's defaults for this call; ``together=True`` makes ``auto`` choose one
        language for all the lines (a page) instead of one per line.
        """
        name = self.decoders.name if decoder is None else decoder
        readings = self.decoders.readings if readings is None else readings
        if name == "beam" and not self.is_ctc:
            raise ValueError(f"decoder='beam' needs a CTC model; {self.decoders.bundles.where} is a per-window "
                             "(NLL) model")
        language = self.decoders.language_for(name, language)  # an unavailable language fails before any work
        shift = self.decoders.view(readings, language)[1] if self.is_ctc else 0
        if self.is_ctc:
            self.decoders.get(name, readings, self.decoders.concrete(language))  # bad options fail here too

        def decode(log_probs: torch.Tensor, stem_width: int, size: tuple[int, int] | None):
            if not self.is_ctc:  # per-window (NLL) baseline: every frame is a character
                return ctc_decode(log_probs[None], self.codec, collapse_repeats=False)[0]
            item = (log_probs, self.geometry(stem_width, size))
            return item if together else self.decoders.decode([item], name, readings, language)[0]

        results = read_in_batches(lines, image_sizes, self.batch_size, self.log_probs_of, decode, shift,
                                  self.min_width)
        if together and self.is_ctc:  # all the lines' log-probabilities are in: choose, then decode
            return self.decoders.decode(results, name, readings, language, together=True)
        return results

    def predict_lines(self, images: Sequence[Image.Image | str | Path], **options) -> list[DecodedLine]:
        """Images (PIL or paths) -> decoded lines with confidences, words and characters, in input order;
        positions in each image's own pixels. ``options``: ``predict_tensors``' (``decoder``, ``readings``,
        ``language``, ``together``)."""
        opened = [open_image(Path(image)) if isinstance(image, (str, Path)) else image for image in images]
        return self.predict_tensors([self.preprocess(image) for image in opened], [oriented_size(i) for i in opened],
                                    **options)

    def predict(self, images: Sequence[Image.Image | str | Path] | Image.Image) -> list[str]:
        """Images -> texts, in input order (a single image gives a one-element list)."""
        if isinstance(images, (Image.Image, str, Path)):
            images = [images]
        return [line.text for line in self.predict_lines(images)]
