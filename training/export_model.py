"""Export a training checkpoint for serving: weights, model config, codec and a model card only.

    python training/export_model.py training/logs/<run>/best.pt text_recognizer/artifacts/default.pt \
        --data "IAM train + train_extra" --val-cer 0.131 --licence "non-commercial research (IAM)"

The training state (optimiser, RNG, counters) is dropped, float weights are stored in float32,
and the model card that ``/v1/model`` and the recognizer report (the checkpoint's provenance and
licence) is set from the flags; the training recipe stays in the provenance.

``--format torchscript`` or ``--format onnx`` writes a model that runs without this package
(dynamic batch and width; inputs, outputs and the embedded charset: ``text_recognizer/export.py``),
with the checkpoint's decoder bundle beside it (``model.onnx`` -> ``model.decoder.pt``):

    python training/export_model.py text_recognizer/artifacts/default.pt model.onnx --format onnx
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from text_recognizer.checkpoint import load_checkpoint, save_checkpoint
from text_recognizer.ctc.lm import bundle_path
from text_recognizer.export import FORMATS as EXPORT_FORMATS
from text_recognizer.export import export_recognizer


def export(source: Path, target: Path, card: dict) -> Path:
    """Copy ``source`` to ``target`` for serving; ``card`` sets provenance fields and ``licence`` (None: keep)."""
    bundle = load_checkpoint(source)
    card = {k: v for k, v in card.items() if v is not None}
    licence = card.pop("licence", bundle.licence)
    state = {k: v.float() if v.is_floating_point() else v for k, v in bundle.model_state.items()}
    provenance = dataclasses.replace(bundle.provenance, **card)
    return save_checkpoint(
        bundle.replace(model_state=state, train_state=None, extra={}, provenance=provenance, licence=licence), target
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="export_model.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", type=Path, help="training checkpoint (best.pt)")
    parser.add_argument("target", type=Path, help="where to write the serving checkpoint")
    parser.add_argument("--data", default=None, help="training data description")
    parser.add_argument("--val-cer", type=float, default=None, help="reported validation CER")
    parser.add_argument("--val-data", default=None, help="what the CER was measured on")
    parser.add_argument("--licence", default=None, help="licence / usage note for the weights")
    parser.add_argument("--version", default=None, help="model version string")
    parser.add_argument("--format", choices=("checkpoint", *EXPORT_FORMATS), default="checkpoint",
                        help="checkpoint: a serving checkpoint for this package; torchscript / onnx: a model "
                             "that runs without it (onnx needs requirements-onnx.txt)")
    args = parser.parse_args(argv)
    if args.format != "checkpoint":
        from text_recognizer.recognizer import LineRecognizer

        try:
            recognizer = LineRecognizer(args.source)
            recognizer.metadata.update({k: v for k, v in {"version": args.version, "licence": args.licence,
                                                          "val_cer": args.val_cer}.items() if v is not None})
            path = export_recognizer(recognizer, args.target, args.format)
        except (ValueError, ImportError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(f"exported {args.source} -> {path} ({args.format}, {path.stat().st_size / 2**20:.1f} MiB)")
        if recognizer.bundle is not None:
            print(f"decoder bundle (LM, beam settings, calibration) -> {bundle_path(path)}")
        return 0
    card = {"data": args.data, "val_cer": args.val_cer, "val_data": args.val_data, "licence": args.licence,
            "model_version": args.version}
    path = export(args.source, args.target, card)
    print(f"exported {args.source} -> {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
