"""Evaluate a checkpoint on a dataset folder (images + labels.tsv, or page images + PAGE-XML/ALTO files).

    python training/evaluate.py --checkpoint PATH --data DIR [--json] [--errors FILE.csv] [--decoder beam]
    python training/evaluate.py --pages --data PAGES_DIR [--found DIR] [--json]   # whole pages: find, then read

``--pages`` reads the PAGE/ALTO folder's pages whole, as ``--page`` does (lines found by the segmenter, or taken
from ``--found``'s files), and scores line detection, page CER and the true-polygon CER
(``training/segmenter/page_evaluation.py``; ``benchmarks/page_eval.py`` is the same).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import unicodedata
from pathlib import Path

from text_recognizer.checkpoint import CheckpointError
from text_recognizer.data.folder import DatasetFormatError, open_image, read_labels
from text_recognizer.data.page import cut_layout_folder, is_layout_folder
from text_recognizer.data.tokenization import cer_iam, cer_natural, wer_natural
from text_recognizer.decoding.options import add_decoder_arguments, decoder_kwargs
from text_recognizer.metrics import cer, line_cer, wer
from text_recognizer.recognizer import LineRecognizer
from text_recognizer.stem import oriented_size
from training.segmenter.page_evaluation import add_page_arguments


def evaluate_folder(recognizer: LineRecognizer, folder: Path) -> dict:
    """Predict every line of ``folder``; unreadable images and unknown characters are counted, not fatal."""
    references, predictions, files, skipped = [], [], [], []
    if is_layout_folder(folder):  # PAGE-XML / ALTO pages: lines cut out (and cached) first
        cut = cut_layout_folder(folder)
        records = cut.records
        skipped += [{"file": line, "reason": reason} for line, reason in cut.empty + cut.unreadable]
    else:
        records = read_labels(folder)
    tensors, sizes = [], []
    for record in records:
        try:
            image = open_image(record.path)
            tensors.append(recognizer.preprocess(image))
        except ValueError as error:
            skipped.append({"file": record.path.name, "reason": str(error)})
            continue
        sizes.append(oriented_size(image))
        files.append(record.path.name)
        references.append(unicodedata.normalize("NFC", record.text))
    # NFC on both sides: a model trained on decomposed (NFD) labels is scored on what the text looks like
    lines = recognizer.predict_tensors(tensors, sizes)
    predictions = [unicodedata.normalize("NFC", line.text) for line in lines]
    return {"lines": lines,
        # against the labels exactly as written: right for a user's own folder, but on IAM (tokenised
        # labels, "it 's") it mixes two spacing conventions, so IAM numbers quote the keys below
        "cer": cer(references, predictions), "wer": wer(references, predictions), "n": len(references),
        # IAM-style labels: CER/WER against natural-spacing references, and CER against IAM's own
        # tokenised references (predictions re-tokenised; comparable with published IAM numbers)
        "cer_natural": cer_natural(references, predictions), "wer_natural": wer_natural(references, predictions),
        "cer_iam": cer_iam(references, predictions),
        "skipped": skipped, "files": files, "references": references, "predictions": predictions,
    }


def write_errors(path: Path, result: dict) -> None:
    """Per-line CSV, worst lines first: file, reference, prediction, cer, line confidence, and the
    least-confident word with its confidence (where to look first)."""
    rows = sorted(
        zip(result["files"], result["references"], result["predictions"], result["lines"]),
        key=lambda row: -line_cer(row[1], row[2]),
    )
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["file", "reference", "prediction", "cer", "confidence", "weakest_word",
                         "weakest_word_confidence"])
        for file, ref, pred, line in rows:
            weakest = min(line.words, key=lambda w: w.confidence, default=None)
            writer.writerow([file, ref, pred, f"{line_cer(ref, pred):.4f}", f"{line.confidence:.4f}",
                             weakest.text if weakest else "", f"{weakest.confidence:.4f}" if weakest else ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="evaluate.py", description="CER and WER of a checkpoint on a dataset folder.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--checkpoint", type=Path, default=None, help="model checkpoint (default: the bundled model)")
    parser.add_argument("--data", type=Path, required=True,
                        help="dataset folder: images and labels.tsv, or page images and PAGE/ALTO *.xml")
    parser.add_argument("--json", action="store_true",
                        help="print {cer, wer, n, cer_natural, wer_natural, cer_iam} as JSON "
                             "(cer/wer: labels as written; *_natural: labels detokenised; cer_iam: both IAM-tokenised)")
    parser.add_argument("--errors", type=Path, default=None, help="write a per-line CSV, worst first")
    parser.add_argument("--device", default="cpu", help="torch device")
    parser.add_argument("--batch-size", type=int, default=16, help="lines per forward pass")
    parser.add_argument("--pages", action="store_true",
                        help="--data is a PAGE/ALTO folder: read its pages whole (segment, then read) and score "
                             "line detection (P/R/F1), page CER and true-polygon CER "
                             "(training/segmenter/page_evaluation.py)")
    add_page_arguments(parser)
    add_decoder_arguments(parser)
    args = parser.parse_args(argv)
    if args.pages:
        return evaluate_pages_main(args)
    try:
        recognizer = LineRecognizer(args.checkpoint, device=args.device, batch_size=args.batch_size,
                                    **decoder_kwargs(args))
        result = evaluate_folder(recognizer, args.data)
    except (CheckpointError, DatasetFormatError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for item in result["skipped"]:
        print(f"skipped {item['file']}: {item['reason']}", file=sys.stderr)
    if args.errors:
        write_errors(args.errors, result)
    if args.json:
        print(json.dumps({k: result[k] for k in ("cer", "wer", "n", "cer_natural", "wer_natural", "cer_iam")}))
    else:
        print(f"CER {result['cer']:.4f}  WER {result['wer']:.4f}  lines {result['n']}  "
              f"(natural-spacing refs: CER {result['cer_natural']:.4f}, WER {result['wer_natural']:.4f}; "
              f"IAM-tokenised refs: CER {result['cer_iam']:.4f})")
    return 0


def evaluate_pages_main(args) -> int:
    """``--pages``: the page evaluation of ``training/segmenter/page_evaluation.py`` on ``--data``."""
    from training.segmenter.page_evaluation import run_and_print  # lxml, scipy: loaded when used

    def recognizer():
        return LineRecognizer(args.checkpoint, device=args.device, batch_size=args.batch_size, **decoder_kwargs(args))

    return run_and_print(args, recognizer, args.data, (CheckpointError, ValueError))

if __name__ == "__main__":
    raise SystemExit(main())
