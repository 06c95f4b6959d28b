"""CER of checkpoints on each source's val lines and on the fixed sets, side by side, in one run.

    PYTHONPATH=. python benchmarks/source_cer.py --candidate NEW.pt                     # against the bundled model
    PYTHONPATH=. python benchmarks/source_cer.py --candidate A.pt B.pt --baseline OLD.pt  # two candidates at once
    PYTHONPATH=. python benchmarks/source_cer.py --candidate NEW.pt --decoder beam --language fr --sets sources

Why: a model trained on many collections must be judged collection by collection; a pooled CER hides the source
that got worse. For every prepared source of ``data/`` (its ``val/`` documents, never trained on) and the fixed sets
under ``--shared`` (IAM val, Copiste val, Stanford 1905, Washington 1755, where present), reads every line with each
checkpoint (the same decoder settings) and prints a Markdown table: lines, CER natural spacing of each, and each
candidate / baseline ratio (several candidates share the baseline's run), then the sources pooled by their
reference characters (one large val set; a source with no val lines, whose snapshot lacks its images, is left out
and named). ``--json`` writes the figures for results files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from text_recognizer.decoding.options import add_decoder_arguments, decoder_kwargs
from text_recognizer.recognizer import LineRecognizer
from training.evaluate import evaluate_folder
from training.sources.manifest import DEFAULT_MANIFEST_DIR, load_sources
from training.sources.prepare import prepared_folder

REPO = Path(__file__).resolve().parents[1]
FIXED = {"IAM val": "iam/val", "Copiste val": "copiste_dun_jour/val", "Stanford 1905": "stanford_memorials_1905",
         "Washington 1755": "gw_washington_1755"}


def folders(args) -> dict[str, Path]:
    found: dict[str, Path] = {}
    if args.sets in ("all", "fixed"):
        found.update({name: args.shared / rel for name, rel in FIXED.items() if (args.shared / rel).is_dir()})
    if args.sets in ("all", "sources"):
        for source in load_sources(args.manifests):
            val = prepared_folder(args.root, source) / "val"
            if (val / "labels.tsv").is_file():
                found[source.name] = val
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidate", type=Path, nargs="+", required=True, help="checkpoint(s) being measured")
    parser.add_argument("--baseline", type=Path, default=None, help="checkpoint to compare with (default: bundled)")
    parser.add_argument("--sets", choices=("all", "fixed", "sources"), default="all")
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data", help="the fixed sets' folder")
    parser.add_argument("--root", type=Path, default=REPO / "data", help="text-recognizer-data's --root")
    parser.add_argument("--manifests", type=Path, default=DEFAULT_MANIFEST_DIR)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    add_decoder_arguments(parser)
    args = parser.parse_args(argv)
    kwargs = decoder_kwargs(args)
    readers = {"baseline": LineRecognizer(args.baseline, **kwargs)}
    names = [f"candidate {i + 1}" if len(args.candidate) > 1 else "candidate" for i in range(len(args.candidate))]
    readers.update({name: LineRecognizer(path, **kwargs) for name, path in zip(names, args.candidate, strict=True)})
    for name, path in zip(names, args.candidate, strict=True):
        print(f"{name}: {path}")
    rows = []
    print("| set | lines | baseline CER | " + " | ".join(f"{name} CER | ratio" for name in names) + " |")
    print("|---|---:|---:|" + "---:|---:|" * len(names))
    empty, pooled = [], {"lines": 0, "characters": 0, **{role: 0.0 for role in readers}}
    for name, folder in folders(args).items():
        scores = {}
        for role, reader in readers.items():
            result = evaluate_folder(reader, folder)
            scores[role], lines = result["cer_natural"], result["n"]
        if not lines:  # a source whose snapshot lacks every val image: no row of 0% against 0%
            empty.append(name)
            continue
        ratios = {role: scores[role] / scores["baseline"] if scores["baseline"] else float("nan") for role in names}
        rows.append({"set": name, "lines": lines, **scores, **{f"ratio {role}": v for role, v in ratios.items()}})
        cells = " | ".join(f"{scores[role]:.2%} | {ratios[role]:.3f}" for role in names)
        print(f"| {name} | {lines:,} | {scores['baseline']:.2%} | {cells} |", flush=True)
        if name not in FIXED:  # the sources pooled by their reference characters, as one large val set
            characters = sum(len(text) for text in result["references"])
            pooled["lines"] += lines
            pooled["characters"] += characters
            for role in readers:
                pooled[role] += scores[role] * characters
    if pooled["characters"]:
        means = {role: pooled[role] / pooled["characters"] for role in readers}
        cells = " | ".join(f"{means[role]:.2%} | {means[role] / means['baseline']:.3f}" for role in names)
        print(f"| data/ sources, pooled by characters | {pooled['lines']:,} | {means['baseline']:.2%} | {cells} |")
        rows.append({"set": "data/ sources, pooled by characters", "lines": pooled["lines"], **means,
                     **{f"ratio {role}": means[role] / means["baseline"] for role in names}})
    if empty:
        print(f"no val lines (left out): {', '.join(empty)}")
    if args.json:
        figures = {"candidates": [str(p) for p in args.candidate], "decoder": args.decoder,
                   "language": getattr(args, "language", None), "rows": rows}
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
