"""Beam width of a decoder bundle on cached logits: CER per set and decode-only time per width.

    PYTHONPATH=. python benchmarks/decode_logits.py --data ../shared/data/iam/val --out CACHE/val.pt  # + OOD sets
    PYTHONPATH=. python benchmarks/beam_width_probe.py --cache CACHE --widths 24,32,48

Every setting but the width is the bundle's own. IAM val is split as in ``benchmarks/decoding.py``
(sorted by file name; the first half is the one settings are tuned on); the out-of-domain sets are
measured when their caches are there. Why: the whole-line re-scoring chooses among the beam's final
readings, so a wider beam might give it better ones, at a price in search time that this prints
beside the CER (benchmarks/RESULTS.md, "A wider beam for the shipped decoder").
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from decoding import OOD, decode_paths, load_set, score, texts

from text_recognizer.codec import Codec
from text_recognizer.decoding.beam import BeamOptions
from text_recognizer.decoding.bundle import load_bundle
from text_recognizer.decoding.decoder import LineDecoder
from text_recognizer.recognizer import DEFAULT_CHECKPOINT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="folder of decode_logits.py outputs")
    parser.add_argument("--bundle", type=Path, default=DEFAULT_CHECKPOINT.with_suffix(".decoder.pt"),
                        help="decoder bundle (default: the bundled model's)")
    parser.add_argument("--widths", default="24,32,48", help="beam widths to try")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    codec = Codec()
    bundle = load_bundle(args.bundle, codec)
    options = BeamOptions.from_dict(bundle.get("beam"))
    print("bundle settings:", options.to_dict())
    val = load_set(args.cache, "val")
    n = len(val["files"])
    lps = [lp.float() for lp in val["log_probs"]]
    sets = {"tune": (lps[: n // 2], val["natural"][: n // 2]), "held": (lps[n // 2 :], val["natural"][n // 2 :])}
    for name in OOD:
        if (args.cache / f"{name}.pt").is_file():
            data = load_set(args.cache, name)
            sets[name] = ([lp.float() for lp in data["log_probs"]], data["natural"])
    for width in map(int, args.widths.split(",")):
        decoder = LineDecoder(codec, "beam", bundle, **{**options.to_dict(), "beam_width": width})
        cells = []
        for name, (log_probs, refs) in sets.items():
            paths, seconds = decode_paths(decoder, log_probs)
            cells.append(f"{name} {100 * score(refs, texts(decoder, paths, log_probs)):.2f}% ({seconds:.1f} s)")
        print(f"beam {width}: " + " | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
