"""Beam-search settings (``BeamOptions``): what a decoder bundle tunes and the command-line flags override.

Why a module of its own: argument parsers and the batch command's driver need the defaults without loading torch and
flashlight, which the search itself (``text_recognizer.decoding.beam``) needs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class BeamOptions:
    """Beam-search settings; defaults are the values tuned for the bundled model on half of IAM val.

    ``beam_width``: hypotheses kept per frame (more: slower; 24 keeps a margin under the 2x-greedy time budget).
    ``lm_weight``: weight of the language model's log-probability (0: no LM).
    ``word_bonus``: score added per space (word insertion bonus), counters the LM's preference for
    fewer, longer words; it only applies with an LM (without one, beam search ranks by the model alone).
    ``token_beam``: classes tried per frame (the most likely ones); ``threshold``: hypotheses more
    than this far (log units) below the best are dropped.
    The whole-line re-scoring of the final readings (``rescoring.py``; only when the bundle has a word
    LM, and ``word_lm_weight`` > 0): ``rescore_lm_weight`` weighs the character LM there,
    ``word_lm_weight`` the word LM's log-probability; ``word_lm_bonus`` is a score per word and
    ``oov_penalty`` a penalty per word neither the word LM nor the lexicon knows. ``corrections``:
    lexicon words tried in place of each unknown word (0: no corrections), at most
    ``correction_distance`` edits away.
    ``blank_penalty``: subtracted from the blank's log-probability at every frame, for the search and
    the re-scoring (with a language model only). Why: the LMs charge for every character, so with them
    readings came out short; on IAM val's tuning half the decoder left out 488 characters and added
    123. Confidences are still computed from the model's own probabilities.
    """

    beam_width: int = 24
    lm_weight: float = 1.4
    word_bonus: float = 0.5
    token_beam: int = 10
    threshold: float = 20.0
    word_lm_weight: float = 0.3
    word_lm_bonus: float = 1.0
    oov_penalty: float = 6.0
    rescore_lm_weight: float = 0.85
    corrections: int = 12
    correction_distance: int = 2
    blank_penalty: float = 1.5

    def __post_init__(self) -> None:
        for name in ("beam_width", "token_beam"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("corrections", "correction_distance"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        for name in ("lm_weight", "word_bonus", "threshold", "word_lm_weight", "word_lm_bonus", "oov_penalty",
                     "rescore_lm_weight", "blank_penalty"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
                raise TypeError(f"{name} must be a number, got {value!r}")
        for name in ("lm_weight", "word_lm_weight", "oov_penalty", "rescore_lm_weight", "blank_penalty"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.threshold <= 0:
            raise ValueError(f"threshold must be > 0, got {self.threshold}")

    @classmethod
    def from_dict(cls, data: dict | None, **overrides) -> BeamOptions:
        """Known keys of ``data`` (a bundle's tuned settings), then non-``None`` ``overrides``."""
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in (data or {}).items() if k in names}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise TypeError(f"unknown beam options {unknown}; known: {sorted(names)}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def to_dict(self) -> dict:
        return asdict(self)
