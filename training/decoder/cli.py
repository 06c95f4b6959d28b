"""The decoder tuner's command: ``python -m training.decoder`` (``text-recognizer-tune-decoder``).

    python -m training.decoder cache --checkpoint best.pt --data HELD_OUT [...] --out lines.pt [--readings 3]
    python -m training.decoder tune --checkpoint best.pt --data HELD_OUT [...]          # or --cache lines.pt
        [--bundle IN] [--out OUT] [--half first] [--detokenize] [--report report.md] [grid flags]
    python -m training.decoder tune ... --cache three.pt --three-readings            # the --readings 3 settings
    python -m training.decoder three-readings --bundle B --three T --shift 2 --out OUT
    python -m training.decoder split-by-text --pages VAL_PAGES --out HALVES          # HALVES/tune, HALVES/report

``cache`` runs the model once over labelled lines (labels.tsv folders or PAGE/ALTO pages) and keeps their
log-probabilities; ``tune`` chooses the beam settings and fits the calibration (``training.decoder.tune``) on
lines given as folders or as a cache, and writes the bundle. Every stage of the bundled model's recipe that
builds a decoder runs one of these.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from text_recognizer.checkpoint import CheckpointError, load_checkpoint
from text_recognizer.data.tokenization import detokenize
from text_recognizer.decoding.bundle import LanguageModelError, bundle_path, load_bundle, save_bundle
from text_recognizer.decoding.readings import DEFAULT_SHIFT, MAX_SHIFT, SECTION
from training.decoder.halves import split_by_text
from training.decoder.lines import CachedLines, cache_lines, checkpoint_sha256, load_cache, save_cache
from training.decoder.three_readings import with_three_readings
from training.decoder.tune import TuneGrid, format_report, tune_bundle


def _shift(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_SHIFT:
        raise argparse.ArgumentTypeError(f"must be 1-{MAX_SHIFT} pixels, got {value}")
    return value


def _grid_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = TuneGrid()
    group = parser.add_argument_group("the grid (each step also tries the bundle's own value first)")
    group.add_argument("--lm-weights", type=float, nargs="+", default=list(defaults.lm_weights))
    group.add_argument("--word-bonuses", type=float, nargs="+", default=list(defaults.word_bonuses))
    group.add_argument("--word-lm-weights", type=float, nargs="+", default=list(defaults.word_lm_weights),
                       help="word-LM weights in the whole-line re-scoring (0: none)")
    group.add_argument("--oov-penalties", type=float, nargs="+", default=list(defaults.oov_penalties),
                       help="re-scoring penalties per unknown word")
    group.add_argument("--word-lm-bonuses", type=float, nargs="*", default=[],
                       help="re-scoring scores per word (none: the bundle's)")
    group.add_argument("--rescore-lm-weights", type=float, nargs="*", default=[],
                       help="character-LM weights in the re-scoring (none: the bundle's)")
    group.add_argument("--blank-penalties", type=float, nargs="+", default=list(defaults.blank_penalties))
    group.add_argument("--corrections", type=int, default=None,
                       help="lexicon words tried per unknown word, tuning and after (default: the bundle's)")
    group.add_argument("--beam-width", type=int, default=defaults.beam_width, help="beam width while tuning")
    group.add_argument("--reading-beam-width", type=int, default=None,
                       help="beam width the bundle reads at (default: the bundle's)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m training.decoder",
                                     description="Tune a decoder bundle for a model: cache its log-probabilities of "
                                                 "labelled lines, choose beam settings, fit confidences.")
    commands = parser.add_subparsers(dest="command", required=True)
    cache = commands.add_parser("cache", help="run the model once over labelled lines; keep their log-probabilities")
    cache.add_argument("--checkpoint", type=Path, required=True)
    cache.add_argument("--data", type=Path, nargs="+", required=True, help="labels.tsv folders or PAGE/ALTO pages")
    cache.add_argument("--out", type=Path, required=True, help="the cache file (.pt)")
    cache.add_argument("--readings", type=int, choices=(1, 3), default=1,
                       help="3: the mean of three readings (the line, and copies moved --shift px up and down)")
    cache.add_argument("--shift", type=_shift, default=DEFAULT_SHIFT, help="pixels the copies move by")

    tune = commands.add_parser("tune", help="choose beam settings and fit the calibration; write the bundle",
                               formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    tune.add_argument("--checkpoint", type=Path, required=True, help="the model the bundle is for")
    lines = tune.add_mutually_exclusive_group(required=True)
    lines.add_argument("--data", type=Path, nargs="+", metavar="HELD_OUT",
                       help="labelled lines never trained on: labels.tsv folders or PAGE/ALTO pages")
    lines.add_argument("--cache", type=Path, help="a cache of the model's log-probabilities of them (cache)")
    tune.add_argument("--half", choices=("first", "second", "all"), default="all",
                      help="tune on this half of the lines in file-name order (measure on the other)")
    tune.add_argument("--bundle", type=Path, default=None,
                      help="bundle with the LMs (default: <checkpoint>.decoder.pt)")
    tune.add_argument("--out", type=Path, default=None, help="the tuned bundle (default: --bundle)")
    tune.add_argument("--detokenize", action="store_true",
                      help="the labels are IAM-tokenised ('it 's'): natural spacing first, for a model that writes it")
    tune.add_argument("--three-readings", action="store_true",
                      help="the lines are three readings' means: the result becomes the bundle's settings for "
                           "--readings 3, its single-reading settings untouched")
    tune.add_argument("--shift", type=_shift, default=DEFAULT_SHIFT,
                      help="with --three-readings and --data: pixels the copies move by")
    tune.add_argument("--report", type=Path, default=None, help="also write the report here (and .json beside it)")
    _grid_arguments(tune)

    three = commands.add_parser("three-readings", help="a bundle plus another's settings as its --readings 3 section")
    three.add_argument("--bundle", type=Path, required=True, help="bundle tuned on single readings (kept as it is)")
    three.add_argument("--three", type=Path, required=True, help="bundle whose settings --readings 3 uses")
    three.add_argument("--shift", type=_shift, default=DEFAULT_SHIFT, help="pixels the copies move by")
    three.add_argument("--out", type=Path, required=True)

    split = commands.add_parser("split-by-text", help="validation pages in two halves by text: tune/ and report/")
    split.add_argument("--pages", type=Path, required=True, help="folder of PAGE/ALTO pages with their images")
    split.add_argument("--out", type=Path, required=True)
    return parser


def _grid(args: argparse.Namespace) -> TuneGrid:
    return TuneGrid(lm_weights=tuple(args.lm_weights), word_bonuses=tuple(args.word_bonuses),
                    word_lm_weights=tuple(args.word_lm_weights), oov_penalties=tuple(args.oov_penalties),
                    blank_penalties=tuple(args.blank_penalties), beam_width=args.beam_width,
                    word_lm_bonuses=tuple(args.word_lm_bonuses), rescore_lm_weights=tuple(args.rescore_lm_weights),
                    corrections=args.corrections, reading_beam_width=args.reading_beam_width)


def _tuning_lines(args: argparse.Namespace, sha: str) -> CachedLines:
    if args.cache is not None:
        lines = load_cache(args.cache)
        if lines.checkpoint_sha256 not in (None, sha):
            raise ValueError(f"{args.cache} holds another model's log-probabilities than {args.checkpoint}'s: "
                             "cache them again for this model")
        if args.three_readings != (lines.shift > 0):
            raise ValueError(f"{args.cache} holds {'three readings' if lines.shift else 'single readings'}: "
                             + ("drop --three-readings" if lines.shift else "cache it with --readings 3"))
    else:
        lines = cache_lines(args.checkpoint, args.data, args.shift if args.three_readings else 0)
    lines = lines.half(args.half)
    if args.detokenize:
        lines.references = [detokenize(text) for text in lines.references]
    return lines


def tune_command(args: argparse.Namespace) -> int:
    source = args.bundle or bundle_path(args.checkpoint)
    out = args.out or source
    codec = load_checkpoint(args.checkpoint, map_location="cpu").codec
    if not source.is_file():
        raise LanguageModelError(f"no decoder bundle at {source}: build one with python -m training.decoder.build_lm "
                                 f"--checkpoint {args.checkpoint} (or give --bundle)")
    bundle = load_bundle(source, codec)
    if bundle.get("lm") is None:
        raise LanguageModelError(f"{source} has no language model to tune for: build one with "
                                 "python -m training.decoder.build_lm")
    grid = _grid(args)
    sha = checkpoint_sha256(args.checkpoint)
    lines = _tuning_lines(args, sha)
    if args.three_readings:  # start from the bundle's three-readings settings where it has them
        start = {**bundle, **({"beam": bundle[SECTION]["beam"], "calibration": bundle[SECTION]["calibration"]}
                              if SECTION in bundle else {})}
        tuned, report = tune_bundle(start, codec, lines.log_probs, lines.references, sha, grid)
        result = with_three_readings({**bundle, "model_sha256": sha}, tuned, lines.shift or args.shift)
    else:
        result, report = tune_bundle(bundle, codec, lines.log_probs, lines.references, sha, grid)
    save_bundle(result, out)
    load_bundle(out, codec)  # checks what was written
    text = "\n".join(format_report(report))
    print(text)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(text + "\n", encoding="utf-8")
        args.report.with_suffix(".json").write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    print(f"bundle -> {out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0 when done, 2 with a message on a bad checkpoint, bundle, cache or data."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "cache":
            lines = cache_lines(args.checkpoint, args.data, args.shift if args.readings == 3 else 0)
            save_cache(lines, args.out)
            print(f"{len(lines.files)} lines ({args.readings} reading(s)) -> {args.out}")
            return 0
        if args.command == "tune":
            return tune_command(args)
        if args.command == "three-readings":
            single, three = load_bundle(args.bundle), load_bundle(args.three)
            save_bundle(with_three_readings(single, three, args.shift), args.out)
            load_bundle(args.out)
            print(f"{args.bundle} + settings for three readings ({args.shift} px) from {args.three} -> {args.out}")
            return 0
        halves = split_by_text(args.pages, args.out)
        print(", ".join(f"{name}: {sum(1 for p in folder.glob('*.xml'))} pages" for name, folder in halves.items()))
        return 0
    except (CheckpointError, ValueError, OSError) as error:  # LanguageModelError and DatasetFormatError too
        print(f"error: {error}", file=sys.stderr)
        return 2
