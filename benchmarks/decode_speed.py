"""Per-line decode time, beam search + LM vs greedy, end to end (model + decoding), same process.

    PYTHONPATH=. python benchmarks/decode_speed.py --data ../shared/data/iam/val [--bundle BUNDLE] [--three-readings]

With a bundle that has a word LM, every beam width is timed without the whole-line re-scoring, with it,
and with it and its lexicon corrections (the default).

Times ``LineRecognizer.predict_tensors`` on one line at a time (the stem is run once beforehand),
rounds interleaved so load from other jobs hits every decoder alike, and prints medians and ratios
against greedy: on a shared machine only the ratios mean much.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from text_recognizer.data.folder import image_size, open_image, read_labels
from text_recognizer.recognizer import LineRecognizer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="dataset folder (images + labels.tsv)")
    parser.add_argument("--bundle", type=Path, default=None, help="decoder bundle (default: the checkpoint's)")
    parser.add_argument("--lines", type=int, default=40, help="lines of the folder to time (every k-th by name)")
    parser.add_argument("--width", type=int, default=1638, help="also time the line whose width is closest to this")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--beam-widths", default="8,16")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: steadier on a shared machine)")
    parser.add_argument("--three-readings", action="store_true",
                        help="also time greedy and the full beam decoder reading every line three times")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    records = sorted(read_labels(args.data), key=lambda r: r.path.name)
    picked = records[:: max(1, len(records) // args.lines)][: args.lines]
    widest = min(records, key=lambda r: abs(image_size(r.path)[0] - args.width))
    decoders = {"greedy": LineRecognizer(decoder="greedy", decoder_bundle=args.bundle)}
    has_word_lm = bool((decoders["greedy"].bundle or {}).get("word_lm"))
    for width in map(int, args.beam_widths.split(",")):
        decoders[f"beam {width} + LM"] = LineRecognizer(decoder="beam", decoder_bundle=args.bundle,
                                                        beam_options={"beam_width": width, "word_lm_weight": 0.0})
        if has_word_lm:  # the same search, then the re-scoring of its readings, then also the corrections
            decoders[f"beam {width} + LM + words"] = LineRecognizer(
                decoder="beam", decoder_bundle=args.bundle, beam_options={"beam_width": width, "corrections": 0})
            decoders[f"beam {width} + LM + words + corr."] = LineRecognizer(decoder="beam", decoder_bundle=args.bundle,
                                                                            beam_options={"beam_width": width})
    if args.three_readings:  # text_recognizer.decoding.readings: three runs of the model, the bundle's second settings
        decoders["greedy, 3 readings"] = LineRecognizer(decoder="greedy", decoder_bundle=args.bundle, readings=3)
        width = int(args.beam_widths.split(",")[-1])
        decoders[f"beam {width}, full, 3 readings"] = LineRecognizer(
            decoder="beam", decoder_bundle=args.bundle, beam_options={"beam_width": width}, readings=3)
    first = decoders["greedy"]
    for name, items in (("sample", picked), (f"{image_size(widest.path)[0]}-px line {widest.path.name}", [widest])):
        tensors = [first.preprocess(open_image(r.path)) for r in items]
        times: dict[str, list[float]] = {k: [] for k in decoders}
        for _ in range(args.rounds):
            for key, recognizer in decoders.items():
                start = time.perf_counter()
                for tensor in tensors:
                    recognizer.predict_tensors([tensor])
                times[key].append((time.perf_counter() - start) / len(tensors))
        base = statistics.median(times["greedy"])
        print(f"{name} ({len(items)} lines, {args.rounds} rounds, torch threads {torch.get_num_threads()}):")
        for key, values in times.items():
            median = statistics.median(values)
            print(f"  {key:32s} {1000 * median:7.1f} ms/line  {median / base:5.2f}x greedy")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
