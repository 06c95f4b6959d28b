"""Ship a trained segmenter: copy ``best.pt`` (``training/segmenter/train.py``) with its card filled in.

    python -m training.segmenter.export training/logs/seg/best.pt text_recognizer/artifacts/segmenter.pt \
        --version seg-2026.12.06a --licence "CC-BY-4.0 (Copiste d'un jour, BAnQ) + IAM: non-commercial research" \
        --measured "Copiste val F1 0.98"

The weights are stored in float32 with what reading a page needs (working size, threshold); the card keeps
what training wrote (data, steps, validation) and adds the version, licence and measured numbers that the
model card (``text_recognizer/artifacts/MODEL_CARD.md``) repeats.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from text_recognizer.data.download import sha256_file
from text_recognizer.segmentation.learned import LearnedSegmenter, save_segmenter


def export(source: Path, target: Path, version: str, licence: str, measured: list[str],
           threshold: float | None = None, hug_ink: bool = True) -> Path:
    segmenter = LearnedSegmenter.load(source)
    card = {**segmenter.card, "version": version, "licence": licence, "measured": list(measured),
            "source_sha256": sha256_file(source)}
    return save_segmenter(target, segmenter.model.float(), segmenter.work_side,
                          segmenter.threshold if threshold is None else threshold, card, hug_ink)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a segmenter file (a run's best.pt)")
    parser.add_argument("target", type=Path, help="where to write it (the package's: artifacts/segmenter.pt)")
    parser.add_argument("--version", required=True, help="a name for these weights (in the card)")
    parser.add_argument("--licence", required=True, help="the terms the training data put on the weights")
    parser.add_argument("--measured", action="append", default=[], help="a measured result for the card (repeat)")
    parser.add_argument("--threshold", type=float, default=None, help="map threshold (default: the source's)")
    parser.add_argument("--polygons", choices=("ink", "region"), default="ink",
                        help="line polygons that hug the line's ink (the default), or its whole predicted region")
    args = parser.parse_args(argv)
    path = export(args.source, args.target, args.version, args.licence, args.measured, args.threshold,
                  args.polygons == "ink")
    print(f"{args.source} -> {path} ({path.stat().st_size / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
