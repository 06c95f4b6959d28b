"""Tune decoder bundles on one half of a page collection's validation pages and measure them on the other half.

    PYTHONPATH=. python benchmarks/french_lm.py --checkpoint best.pt --val ../shared/data/copiste_dun_jour/val \\
        --work /tmp/frlm --bundle fr=fr.decoder.pt --bundle en=en_latin.decoder.pt \\
        [--extra-val iam=../shared/data/iam/val]

Why: a French bundle's beam settings must be chosen on lines it is not then measured on. The validation pages
are split by text (one writer copied each text, on one or two pages; ``imp_wikitexte_0051_1`` and ``_2`` stay
together): texts in sorted order, even-indexed ones tune (``tune/``), odd-indexed ones report (``report/``).
The model runs once per half (log-probabilities cached in ``--work``); each bundle is then tuned on the tuning
half with ``training.decoder.tune.tune_bundle`` (its default grid), written to ``--work/<name>.tuned.decoder.pt``,
and read back on the report half: greedy CER, and beam CER with the bundle's own settings before and after tuning.
``--extra-val NAME=FOLDER`` also reads a labels.tsv folder (IAM val, say) with every tuned bundle.
``--seen-text FILE`` (the LM's training lines): the report half is also read without its lines of 20 or more
characters that occur word for word in that text (Copiste's writers all copied the same consent notice), as
``report_unseen``.

References are the labels in Unicode NFC (lookalikes folded) in natural spacing (``detokenize``), as a model
trained with the default ``--detokenize`` writes them; ``--as-written`` keeps their spacing. Results go to
stdout as a table and to ``--work/results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.decoding.beam import BeamOptions
from text_recognizer.decoding.bundle import load_bundle, save_bundle
from text_recognizer.decoding.decoder import LineDecoder, line_features
from text_recognizer.metrics import cer
from training.decoder.halves import split_by_text
from training.decoder.lines import checkpoint_sha256, held_out_log_probs, held_out_records
from training.decoder.tune import TuneGrid, path_text, tune_bundle


def cached_half(checkpoint: Path, folder: Path, cache: Path, detokenized: bool) -> tuple[list, list[str]]:
    """The model's log-probabilities and the references of the lines in ``folder``, cached in ``cache``."""
    key = f"{checkpoint_sha256(checkpoint)[:16]}:{folder.resolve()}:{detokenized}"
    if cache.is_file():
        stored = torch.load(cache, weights_only=True)
        if stored["key"] == key:
            return stored["log_probs"], stored["references"]
    records = held_out_records([folder], detokenized)
    start = time.perf_counter()
    log_probs = held_out_log_probs(checkpoint, records)
    print(f"{folder}: {len(records)} lines through the model in {time.perf_counter() - start:.0f} s")
    references = [record.text for record in records]
    torch.save({"key": key, "log_probs": log_probs, "references": references}, cache)
    return log_probs, references


def beam_cer(bundle: dict, codec, log_probs: list, references: list[str]) -> float:
    options = BeamOptions.from_dict(bundle.get("beam"))
    decoder = LineDecoder(codec, "beam", bundle, **options.to_dict())
    texts = [path_text(codec, line_features(decoder.path(lp), lp)) for lp in log_probs]
    return cer(references, texts)


def greedy_cer(codec, log_probs: list, references: list[str]) -> float:
    decoder = LineDecoder(codec, "greedy")
    return cer(references, [path_text(codec, line_features(decoder.path(lp), lp)) for lp in log_probs])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--val", type=Path, required=True, help="folder of validation PAGE/ALTO pages")
    parser.add_argument("--work", type=Path, required=True, help="folder for the halves, caches, tuned bundles")
    parser.add_argument("--bundle", action="append", default=[], metavar="NAME=PATH", help="bundle to tune and read")
    parser.add_argument("--extra-val", action="append", default=[], metavar="NAME=FOLDER",
                        help="a labels.tsv folder also read with each tuned bundle (no tuning on it)")
    parser.add_argument("--as-written", action="store_true", help="references as written, not detokenized")
    parser.add_argument("--lm-weights", type=float, nargs="+", default=list(TuneGrid.lm_weights),
                        help="the LM weights the tuning tries (training.decoder.tune.TuneGrid)")
    parser.add_argument("--word-bonuses", type=float, nargs="+", default=list(TuneGrid.word_bonuses),
                        help="the word bonuses the tuning tries")
    parser.add_argument("--as-tuned", action="store_true",
                        help="the bundles are tuned already: read them with their own settings, tune nothing")
    parser.add_argument("--seen-text", type=Path, default=None,
                        help="also read the report half without the lines found word for word in this text")
    args = parser.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    args.work.mkdir(parents=True, exist_ok=True)
    codec = load_checkpoint(args.checkpoint, map_location="cpu").codec
    sha = checkpoint_sha256(args.checkpoint)
    halves = split_by_text(args.val, args.work)
    detok = not args.as_written
    data = {name: cached_half(args.checkpoint, folder, args.work / f"{name}.logprobs.pt", detok)
            for name, folder in halves.items()}
    for item in args.extra_val:
        name, _, folder = item.partition("=")
        data[name] = cached_half(args.checkpoint, Path(folder), args.work / f"{name}.logprobs.pt", detok)
    if args.seen_text is not None:
        seen = args.seen_text.read_text(encoding="utf-8")
        report_lps, report_refs = data["report"]
        unseen = [i for i, ref in enumerate(report_refs) if len(ref) < 20 or ref not in seen]
        data["report_unseen"] = ([report_lps[i] for i in unseen], [report_refs[i] for i in unseen])
    results: dict = {"checkpoint": str(args.checkpoint), "sha256": sha, "detokenized": detok,
                     "grid": {"lm_weights": args.lm_weights, "word_bonuses": args.word_bonuses},
                     "lines": {name: len(refs) for name, (_, refs) in data.items()},
                     "greedy": {name: greedy_cer(codec, lps, refs) for name, (lps, refs) in data.items()},
                     "bundles": {}}
    print(f"lines: {results['lines']}; greedy CER: " + ", ".join(f"{k} {100 * v:.2f}%"
                                                                 for k, v in results["greedy"].items()))
    for item in args.bundle:
        name, _, path = item.partition("=")
        bundle = load_bundle(path, codec)
        start = time.perf_counter()
        if args.as_tuned:
            tuned, out = bundle, Path(path)
            row = {"bundle": path, "settings": BeamOptions.from_dict(bundle.get("beam")).to_dict(),
                   "tune_cer": beam_cer(bundle, codec, *data["tune"])}
            row["tune_cer_untuned"] = row["tune_cer"]
        else:
            grid = TuneGrid(lm_weights=tuple(args.lm_weights), word_bonuses=tuple(args.word_bonuses))
            tuned, report = tune_bundle(bundle, codec, *data["tune"], sha, grid)
            out = save_bundle(tuned, args.work / f"{name}.tuned.decoder.pt")
            row = {"bundle": path, "settings": report["settings"], "tune_cer": report["tuned_beam_cer"],
                   "tune_cer_untuned": report["default_beam_cer"], "note": report["note"]}
        row.update(tuned_bundle=str(out), tune_seconds=time.perf_counter() - start,
                   report_cer=beam_cer(tuned, codec, *data["report"]))
        row["report_cer_untuned"] = row["report_cer"] if args.as_tuned else beam_cer(bundle, codec, *data["report"])
        for extra in sorted(data.keys() - {"tune", "report"}):
            row[f"{extra}_cer"] = beam_cer(tuned, codec, *data[extra])
        results["bundles"][name] = row
        print(f"{name}: tune half {100 * row['tune_cer']:.2f}% (untuned {100 * row['tune_cer_untuned']:.2f}%), "
              f"report half {100 * row['report_cer']:.2f}% (untuned {100 * row['report_cer_untuned']:.2f}%)"
              + "".join(f", {k[:-4]} {100 * v:.2f}%" for k, v in row.items() if k.endswith("_cer")
                        and k[:-4] not in ("tune", "report"))
              + f"; settings {row['settings']}; {row['tune_seconds']:.0f} s", flush=True)
        (args.work / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    (args.work / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
