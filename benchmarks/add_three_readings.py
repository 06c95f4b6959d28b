"""Give a decoder bundle a second set of beam settings and calibration, for three readings per line.

    PYTHONPATH=. python benchmarks/tta_probe.py --out /tmp/tta        # caches of averaged posteriors
    PYTHONPATH=. python benchmarks/decoding.py --cache /tmp/tta/shift --bundle BUNDLE \\
        --bundle-out /tmp/tta/shift.decoder.pt --weights 1.2,1.4,1.6 --bonuses 0.5 --beam-width 24 --skip-pyctcdecode
    PYTHONPATH=. python benchmarks/add_three_readings.py --bundle BUNDLE --three /tmp/tta/shift.decoder.pt \\
        --shift 2 --out NEW_BUNDLE

Why: ``decoding.py`` tunes and calibrates on the posteriors it is given. Tuned on the mean of three
readings (``text_recognizer.decoding.readings``), its settings and calibration are right for ``readings=3`` and
off for one reading, which stays the default (the beam decoder's 2x-greedy time budget). The result is
``--bundle`` unchanged, plus ``three_readings = {"shift", "beam", "calibration"}`` from ``--three``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from text_recognizer.decoding.bundle import arpa_text, load_bundle, save_bundle
from text_recognizer.decoding.readings import SECTION


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True, help="bundle tuned on single readings (kept as it is)")
    parser.add_argument("--three", type=Path, required=True, help="bundle tuned on the mean of three readings")
    parser.add_argument("--shift", type=int, required=True, help="pixels the copies were moved by (tta_probe.py: 2)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    single, three = load_bundle(args.bundle), load_bundle(args.three)
    if arpa_text(single) != arpa_text(three) or single.get("model_sha256") != three.get("model_sha256"):
        raise SystemExit("the two bundles differ in language model or model: tune both from the same bundle and model")
    merged = {**single, SECTION: {"shift": args.shift, "beam": three["beam"], "calibration": three["calibration"]}}
    save_bundle(merged, args.out)
    load_bundle(args.out)  # checks what was written
    print(f"{args.bundle} + settings for three readings ({args.shift} px) from {args.three} -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
