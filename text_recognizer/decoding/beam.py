"""Beam-search CTC decoding with an optional character language model (flashlight-text + KenLM).

Why flashlight-text: it installs from PyPI as a wheel with KenLM inside (no compiler), its
lexicon-free decoder scores a character LM at every character, and it was the fastest and most
accurate of the libraries we measured (``benchmarks/RESULTS.md``: pyctcdecode with a word LM was
slower, less accurate, and pins ``numpy<2``). Scores are ``log p_ctc + lm_weight * log p_lm +
word_bonus * (number of spaces)``. With a word LM as well (``word_lm.py``), the distinct readings
left in the beam at the end, and lexicon corrections of the best one, are re-scored as whole lines
(``rescoring.py``) and the best of them is returned.

The decoder returns the best *frame path* (one class per frame), so the caller can place every
character on the frames (and pixels) it came from and give it a confidence.
"""

from __future__ import annotations

import itertools
import threading

import torch

from text_recognizer.codec import BLANK_ID, Codec
from text_recognizer.decoding.beam_options import BeamOptions
from text_recognizer.decoding.bundle import space_token_for
from text_recognizer.decoding.kenlm import load_kenlm
from text_recognizer.decoding.rescoring import LexiconCorrector, Rescorer, Weights
from text_recognizer.decoding.word_lm import WordLanguageModel

__all__ = ["BeamDecoder", "BeamOptions"]


class BeamDecoder:
    """Flashlight's lexicon-free CTC beam search over one line's ``(T, C)`` log-probabilities."""

    def __init__(self, codec: Codec, options: BeamOptions | None = None, arpa: str | None = None,
                 word_model: WordLanguageModel | None = None):
        try:
            from flashlight.lib.text.decoder import CriterionType, LexiconFreeDecoder, LexiconFreeDecoderOptions, ZeroLM
            from flashlight.lib.text.decoder.kenlm import KenLM
            from flashlight.lib.text.dictionary import Dictionary
        except ImportError as error:  # an optional dependency: greedy decoding never needs it
            raise ValueError(
                "decoder='beam' needs flashlight-text: pip install 'text-recognizer[beam]' (or flashlight-text==0.0.7)"
            ) from error

        if not isinstance(codec, Codec):
            raise TypeError(f"codec must be a Codec, got {type(codec).__name__}")
        self.codec = codec
        self.options = options or BeamOptions()
        space = space_token_for(codec.charset)
        tokens = ["<blank>"] + [space if c == " " else c for c in codec.charset]
        self.space_id = tokens.index(space) if " " in codec.charset else BLANK_ID
        self.has_lm = arpa is not None and self.options.lm_weight > 0
        if self.has_lm:
            lm = load_kenlm(KenLM, arpa, Dictionary(tokens))
        else:
            lm = ZeroLM()
        settings = LexiconFreeDecoderOptions(
            beam_size=self.options.beam_width, beam_size_token=min(self.options.token_beam, len(tokens)),
            beam_threshold=float(self.options.threshold), lm_weight=float(self.options.lm_weight if self.has_lm else 0),
            sil_score=float(self.options.word_bonus if self.has_lm else 0.0), log_add=False,
            criterion_type=CriterionType.CTC,
        )
        self._lm = lm  # the decoder keeps a reference; so do we
        self._lock = threading.Lock()  # flashlight's decoder keeps its hypotheses in itself: one line at a time
        self._decoder = LexiconFreeDecoder(settings, lm, self.space_id, BLANK_ID, [])
        self.word_lm = word_model if self.options.word_lm_weight > 0 else None
        self.rescorer = None
        if self.word_lm is not None:
            o = self.options
            corrector = None
            if o.corrections and o.correction_distance:
                corrector = LexiconCorrector(self.word_lm, o.corrections, o.correction_distance, codec.charset)
            self.rescorer = Rescorer(codec, Weights(o.rescore_lm_weight, o.word_lm_weight, o.word_lm_bonus,
                                                    o.oov_penalty), self.word_lm, lm if self.has_lm else None,
                                     corrector)

    def char_log10(self, text: str) -> float:
        """log10 p(``text``, then the end of the line) under the search's character LM (0.0 without one).

        Why here: the LM is loaded once, for the search; ``auto`` language choice scores greedy readings with it
        (``text_recognizer.decoding.language``). Characters the codec cannot write are a ``ValueError``.
        """
        if not self.has_lm:
            return 0.0
        state = self._lm.start(False)
        total = 0.0
        for token in self.codec.encode(text):  # token index = class id: the dictionary is blank + the charset
            state, score = self._lm.score(state, token)
            total += score
        return total + self._lm.finish(state)[1]

    def best_path(self, log_probs: torch.Tensor) -> list[int]:
        """``(T, C)`` log-probabilities -> the best hypothesis as one class id per frame."""
        if log_probs.dim() != 2 or log_probs.shape[1] != self.codec.num_classes:
            raise ValueError(
                f"log_probs must be (T, {self.codec.num_classes}), got shape {tuple(log_probs.shape)}"
            )
        frames = log_probs.shape[0]
        if frames == 0:
            return []
        emissions = log_probs.detach().to("cpu", torch.float32).contiguous()
        if self.options.blank_penalty and (self.has_lm or self.rescorer is not None):
            emissions = emissions.clone()  # (T, C); the caller's log-probabilities stay as they were
            emissions[:, BLANK_ID] -= self.options.blank_penalty
        with self._lock:
            results = self._decoder.decode(emissions.data_ptr(), frames, emissions.shape[1])
        paths = [result.tokens[1 : frames + 1] for result in results]  # flashlight pads one token each side
        if self.rescorer is None:
            return [int(i) for i in paths[0]]
        readings: dict[str, list[int]] = {}  # distinct readings, each with its best-scored path
        for path in paths:
            readings.setdefault(self.codec.decode(k for k, _ in itertools.groupby(path) if k != BLANK_ID), path)
        return [int(i) for i in self.rescorer.best_path(emissions, list(readings.items()))]
