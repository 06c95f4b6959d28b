"""The decoding flags every command-line tool shares (``--decoder``, ``--readings``, ``--language``, beam options),
and the ``LineRecognizer`` keyword arguments they mean, so the CLI, the evaluation and the benchmarks agree.
Imports no torch: the batch command's driver parses these flags but never reads a line."""

from __future__ import annotations

import argparse

from text_recognizer.decoding.beam_options import BeamOptions
from text_recognizer.decoding.language import AUTO, LanguageError, parse_language
from text_recognizer.decoding.names import DECODERS, READINGS


def language_argument(text: str) -> str:
    """``--language``'s value: ``auto`` or an ISO 639-1 code (``argparse`` says what is wrong otherwise)."""
    try:
        return parse_language(text)  # type: ignore[return-value]
    except LanguageError:
        raise argparse.ArgumentTypeError(f"expected {AUTO!r} or an ISO 639-1 code such as 'en' or 'fr', "
                                         f"got {text!r}") from None


def add_decoder_arguments(parser) -> None:
    """The decoding flags shared by the command-line tools (``--decoder``, beam options)."""
    group = parser.add_argument_group("decoding")
    group.add_argument("--decoder", choices=DECODERS, default="greedy",
                       help="greedy: best path; beam: beam search with the checkpoint's language model")
    group.add_argument("--no-lm", action="store_true", help="beam search without the language model")
    group.add_argument("--decoder-bundle", type=str, default=None,
                       help="decoder bundle (LM, tuned settings, calibration); default: the checkpoint's")
    defaults = BeamOptions()
    group.add_argument("--beam-width", type=int, default=None,
                       help=f"hypotheses kept (tuned default {defaults.beam_width})")
    group.add_argument("--lm-weight", type=float, default=None, help=f"LM weight (tuned default {defaults.lm_weight})")
    group.add_argument("--word-bonus", type=float, default=None,
                       help=f"score per word, i.e. per space (tuned default {defaults.word_bonus})")
    group.add_argument("--word-lm-weight", type=float, default=None,
                       help=f"weight of the word LM that re-scores the beam's readings, if the bundle has one "
                            f"(tuned default {defaults.word_lm_weight}; 0: no re-scoring and no corrections)")
    group.add_argument("--corrections", type=int, default=None,
                       help=f"lexicon words tried in place of each unknown word of the chosen reading "
                            f"(default {defaults.corrections}; 0: no corrections)")
    group.add_argument("--blank-penalty", type=float, default=None,
                       help=f"subtracted from the blank's log-probability in the search with an LM, against "
                            f"readings that leave characters out (tuned default {defaults.blank_penalty}; 0: none)")
    group.add_argument("--readings", type=int, choices=READINGS, default=1,
                       help="read every line this many times (3: as it is, moved up, moved down) and decode the mean "
                            "posteriors: fewer errors, three times the model's work")
    group.add_argument("--language", type=language_argument, default=None, metavar="{en,fr,...,auto}",
                       help="the language models of --decoder beam: an ISO 639-1 code with a decoder bundle beside "
                            "the checkpoint (<checkpoint>.decoder.pt, <checkpoint>.<code>.decoder.pt), or auto: per "
                            "line (per page with --page), the language whose character LM suits the greedy reading "
                            "best. Default: the model's own language (that of <checkpoint>.decoder.pt)."
                            " Greedy reading is the same in every language: it ignores this")


def decoder_kwargs(args) -> dict:
    """``LineRecognizer`` keyword arguments from ``add_decoder_arguments``' flags."""
    overrides = {"beam_width": args.beam_width, "lm_weight": args.lm_weight, "word_bonus": args.word_bonus,
                 "word_lm_weight": args.word_lm_weight, "corrections": args.corrections,
                 "blank_penalty": args.blank_penalty}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    return {"decoder": args.decoder, "use_lm": not args.no_lm, "decoder_bundle": args.decoder_bundle,
            "beam_options": overrides or None, "readings": args.readings, "language": args.language}
