"""Export a training checkpoint for serving: weights, model config, codec and a model card only.

    python training/export_model.py training/logs/<run>/best.pt text_recognizer/artifacts/default.pt \
        --data "IAM train + train_extra" --val-cer 0.131 --licence "non-commercial research (IAM)"

The training state (optimiser, RNG, counters) is dropped, float weights are stored in float32,
and the metadata that ``/v1/model`` and the recognizer report is set from the flags.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from text_recognizer.checkpoint import load_checkpoint, save_checkpoint


def export(source: Path, target: Path, metadata: dict) -> Path:
    payload = load_checkpoint(source)
    state = {k: v.float() if v.is_floating_point() else v for k, v in payload["model_state"].items()}
    kept = {k: payload[k] for k in ("model_config", "codec", "loss")}
    merged = {**payload.get("metadata", {}), **{k: v for k, v in metadata.items() if v is not None}}
    return save_checkpoint({**kept, "model_state": state, "metadata": merged}, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="export_model.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="training checkpoint (best.pt)")
    parser.add_argument("target", type=Path, help="where to write the serving checkpoint")
    parser.add_argument("--data", default=None, help="training data description")
    parser.add_argument("--val-cer", type=float, default=None, help="reported validation CER")
    parser.add_argument("--val-data", default=None, help="what the CER was measured on")
    parser.add_argument("--licence", default=None, help="licence / usage note for the weights")
    parser.add_argument("--version", default=None, help="model version string")
    args = parser.parse_args(argv)
    path = export(args.source, args.target, {
        "data": args.data, "val_cer": args.val_cer, "val_data": args.val_data,
        "licence": args.licence, "version": args.version,
    })
    print(f"exported {args.source} -> {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
