"""A user's first fine-tuning, as issue 74 measures it: 12 pages of 12 writers, the first 70% of each page's
lines to train on, the rest held out; the bundled model against the fine-tuned one, greedy and with beam search
in the lines' language, on the held-out lines.

    PYTHONPATH=. python benchmarks/finetune_pages.py --work /tmp/ftp [--pages 12] [--share 0.7] [-- FLAGS...]

Pages: Copiste d'un jour ``val/`` (validation-only data: here it plays a user's own collection, and nothing is
tuned on the held-out lines), the first page of each of the first ``--pages`` texts in sorted order (one writer
copied each text), its lines in reading order; lines with crossed-out marks (``>...<``) are left out, as
``finetune_curves.py`` does. The run is ``text-recognizer-train --finetune default.pt --data TRAIN`` with its
defaults (it holds out 10% of the training lines itself to choose best.pt and to tune the decoder; the measured
lines are never seen) plus any ``FLAGS``, timed by the wall clock: run it alone on the machine. CER is
``training/evaluate.py``'s ``cer_natural``. Prints one JSON object and writes it to ``--work/results.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

from text_recognizer.data.page import cut_layout_folder
from training.decoder.halves import text_of

REPO = Path(__file__).resolve().parents[1]
VAL = REPO.parent / "shared" / "data" / "copiste_dun_jour" / "val"
BUNDLED = REPO / "text_recognizer" / "artifacts" / "default.pt"


def write_labels(folder: Path, records) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["file\ttext"] + [f"{Path(r.path).resolve()}\t{r.text}" for r in records]
    (folder / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def split(work: Path, pages: int, share: float) -> dict:
    """``work/train`` and ``work/held_out`` from the first page of each of the first ``pages`` texts."""
    first: dict[str, Path] = {}
    for xml in sorted(VAL.glob("*.xml")):
        first.setdefault(text_of(xml.stem), xml)
    chosen = [first[text] for text in sorted(first)[:pages]]
    train, held = [], []
    for xml in chosen:
        folder = work / "pages" / xml.stem
        folder.mkdir(parents=True, exist_ok=True)
        for path in VAL.glob(f"{xml.stem}.*"):
            if not (folder / path.name).exists():
                (folder / path.name).symlink_to(path.resolve())
        lines = [r for r in cut_layout_folder(folder).records if ">" not in r.text and "<" not in r.text]
        cut = math.floor(share * len(lines))
        train += lines[:cut]
        held += lines[cut:]
    write_labels(work / "train", train)
    write_labels(work / "held_out", held)
    return {"pages": [x.stem for x in chosen], "train_lines": len(train), "held_out_lines": len(held)}


def evaluate(checkpoint: Path, data: Path, *flags: str) -> float:
    out = subprocess.run([sys.executable, "training/evaluate.py", "--checkpoint", str(checkpoint), "--data",
                          str(data), "--json", *flags], cwd=REPO, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)["cer_natural"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--share", type=float, default=0.7, help="share of each page's lines to train on")
    parser.add_argument("--name", default="run", help="run folder under --work")
    parser.add_argument("flags", nargs="*", help="more fine-tuning flags (after --)")
    args = parser.parse_args(argv)
    results_path = args.work / "results.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    results["split"] = split(args.work, args.pages, args.share)
    held = args.work / "held_out"
    if "bundled" not in results:
        results["bundled"] = {"greedy": evaluate(BUNDLED, held),
                              "beam_fr": evaluate(BUNDLED, held, "--decoder", "beam", "--language", "fr")}
    run = args.work / args.name
    start = time.perf_counter()
    status = subprocess.run(["text-recognizer-train", "--finetune", str(BUNDLED), "--data", str(args.work / "train"),
                             "--run-dir", str(run), "--progress", "false", *args.flags], cwd=REPO,
                            stdout=(args.work / f"{args.name}.log").open("w"), stderr=subprocess.STDOUT).returncode
    minutes = (time.perf_counter() - start) / 60
    if status:
        raise SystemExit(f"fine-tuning failed ({status}): see {args.work / f'{args.name}.log'}")
    best = run / "best.pt"
    tuned = {"minutes": round(minutes, 2), "flags": args.flags, "greedy": evaluate(best, held),
             "beam": evaluate(best, held, "--decoder", "beam"),
             "verdict": json.loads((run / "finetune" / "verdict.json").read_text())}
    tuned["greedy_ratio"] = tuned["greedy"] / results["bundled"]["greedy"]
    tuned["beam_ratio"] = tuned["beam"] / results["bundled"]["beam_fr"]
    results[args.name] = tuned
    results_path.write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(json.dumps({"split": results["split"], "bundled": results["bundled"], args.name: tuned}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
