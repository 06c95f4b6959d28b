"""Export a training checkpoint for serving: weights, model config, codec and a model card only.

    python -m training.release.export_model training/logs/<run>/best.pt text_recognizer/artifacts/default.pt \
        --data "IAM train + train_extra" --val-cer 0.131 --licence "non-commercial research (IAM)"

The training state (optimiser, RNG, counters) is dropped, float weights are stored in float32,
and the model card that ``/v1/model`` and the recognizer report (the checkpoint's provenance and
licence) is set from the flags; the training recipe stays in the provenance.

``--format torchscript`` or ``--format onnx`` writes a model that runs without this package
(dynamic batch and width; inputs, outputs and the embedded charset: ``text_recognizer/export.py``),
with the checkpoint's decoder bundle beside it (``model.onnx`` -> ``model.decoder.pt``):

    python -m training.release.export_model text_recognizer/artifacts/default.pt model.onnx --format onnx

A serving checkpoint takes along the decoder bundle tuned for its source (``--decoder-bundle``, else
the file beside the source, ``best.pt`` -> ``best.decoder.pt``), written beside the target and
re-stamped with the target's sha256. Why: a bundle records the sha256 of the checkpoint it was tuned
and calibrated for, and exporting rewrites the file (new bytes, the same float32 weights), so without
the re-stamp every load of the exported model would warn that its bundle belongs to another model.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from text_recognizer.checkpoint import load_checkpoint, save_checkpoint
from text_recognizer.data.download import sha256_file
from text_recognizer.decoding.bundle import (
    LanguageModelError,
    bundle_language,
    bundle_path,
    load_bundle,
    save_bundle,
)
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


def tuned_bundle(source: Path, explicit: Path | None) -> dict | None:
    """The decoder bundle tuned for ``source``: ``explicit``, else the file beside ``source``, else ``None``.

    A bundle tuned for another model (or one that does not say which) is refused when given
    explicitly (``ValueError``) and left behind with a note when it merely lies beside the source:
    carrying it would stamp another model's LM weights and calibration as this one's.
    """
    path = explicit if explicit is not None else bundle_path(source)
    if explicit is None and not path.is_file():
        return None
    bundle = load_bundle(path, load_checkpoint(source).codec)
    tuned_for, source_sha = bundle.get("model_sha256"), sha256_file(source)
    if tuned_for == source_sha:
        return bundle
    why = (f"decoder bundle {path} was tuned for the model with sha256 {tuned_for}, not {source} ({source_sha}); "
           "re-tune it for this one: python -m training.decoder tune" if tuned_for else
           f"decoder bundle {path} does not record which model it was tuned for")
    if explicit is not None:
        raise ValueError(why)
    print(f"note: {why}; not carried to the exported model", file=sys.stderr)
    return None


def language_bundles(source: Path, given: list[str]) -> dict[str, dict]:
    """``XX=PATH`` items -> ``{language: bundle}``, each tuned for ``source`` and of the language it is given as."""
    bundles: dict[str, dict] = {}
    for item in given:
        language, sep, path = item.partition("=")
        if not sep or not language or not path:
            raise ValueError(f"--language-bundle takes XX=BUNDLE (e.g. fr=best.fr.decoder.pt), got {item!r}")
        bundle = tuned_bundle(source, Path(path))
        if bundle_language(bundle) != language:
            raise ValueError(f"--language-bundle {item}: the bundle is for {bundle_language(bundle)!r}, "
                             f"not {language!r}")
        if language in bundles:
            raise ValueError(f"--language-bundle gives {language!r} twice")
        bundles[language] = bundle
    return bundles


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
    parser.add_argument("--decoder-bundle", type=Path, default=None,
                        help="decoder bundle tuned for SOURCE (python -m training.decoder tune), written beside "
                             "TARGET and re-stamped for it; default: SOURCE's own .decoder.pt if there is one")
    parser.add_argument("--language-bundle", action="append", default=[], metavar="XX=BUNDLE",
                        help="another language's decoder bundle tuned for SOURCE (e.g. fr=best.fr.decoder.pt), "
                             "written beside TARGET as <target>.<xx>.decoder.pt and re-stamped for it; repeatable")
    args = parser.parse_args(argv)
    try:
        languages = language_bundles(args.source, args.language_bundle)
    except (ValueError, LanguageModelError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:  # checked before anything is written; ONNX / TorchScript take the source's bundle as LineRecognizer finds it
        explicit_or_checkpoint = args.decoder_bundle is not None or args.format == "checkpoint"
        decoder = tuned_bundle(args.source, args.decoder_bundle) if explicit_or_checkpoint else None
    except (ValueError, LanguageModelError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.format != "checkpoint":
        from text_recognizer.recognizer import LineRecognizer

        try:  # the ONNX / TorchScript metadata records the source's sha256, so the bundle travels as tuned
            recognizer = LineRecognizer(args.source, decoder_bundle=args.decoder_bundle)
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
    if decoder is not None:
        decoder = {**decoder, "model_sha256": sha256_file(path)}  # same weights, new file (see the module docstring)
        print(f"decoder bundle (LM, beam settings, calibration) -> {save_bundle(decoder, bundle_path(path))}")
    for language, bundle in languages.items():
        bundle = {**bundle, "model_sha256": sha256_file(path)}
        print(f"{language} decoder bundle -> {save_bundle(bundle, bundle_path(path, language))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
