"""Beam search + LM vs greedy on cached logits: library comparison, tuning, calibration, report.

    PYTHONPATH=. python benchmarks/decode_logits.py --data ../shared/data/iam/val --out /tmp/lm/val.pt   # once per set
    python -m training.decoder.build_lm --out /tmp/lm/default.decoder.pt                     # train + train_extra
    PYTHONPATH=. python benchmarks/decoding.py --cache /tmp/lm --bundle /tmp/lm/default.decoder.pt \\
        --bundle-out text_recognizer/artifacts/default.decoder.pt --report /tmp/lm/report.md

IAM val is sorted by file name and split in two: LM weight, word bonus and the confidence
calibration are chosen on the first half ("tune"); CER and calibration are reported on the second
half ("held") and on all of val. The out-of-domain sets are only measured. Times are decode-only
seconds over the same lines in this process, printed as ratios against greedy.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import time
from pathlib import Path

import torch

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.data.tokenization import detokenize
from text_recognizer.decoding import calibration as cal
from text_recognizer.decoding.beam import BeamOptions
from text_recognizer.decoding.bundle import arpa_text, load_bundle, make_bundle, save_bundle
from text_recognizer.decoding.decoder import Geometry, LineDecoder, line_features
from text_recognizer.metrics import cer
from text_recognizer.recognizer import DEFAULT_CHECKPOINT
from training.decoder.tune import calibration_data

OOD = ("stanford_memorials_1905", "gw_washington_1755")
GEOMETRY = Geometry(16, 4)  # positions are not scored here


def load_set(cache: Path, name: str) -> dict:
    data = torch.load(cache / f"{name}.pt")
    data["natural"] = [detokenize(r) for r in data["references"]]
    return data


def decode_paths(decoder: LineDecoder, log_probs: list[torch.Tensor]) -> tuple[list[list[int]], float]:
    start = time.perf_counter()
    paths = [decoder.path(lp) for lp in log_probs]
    return paths, time.perf_counter() - start


def texts(decoder: LineDecoder, paths, log_probs) -> list[str]:
    return [decoder.assemble(line_features(p, lp), GEOMETRY).text for p, lp in zip(paths, log_probs)]


def score(refs: list[str], hyps: list[str]) -> float:
    """CER against natural-spacing references (what ``training/evaluate.py`` reports as cer_natural)."""
    return cer(refs, hyps)


def pyctcdecode_rows(codec: Codec, train_lines: list[str], lps, refs, greedy_s: float) -> list[dict]:
    """The other library: pyctcdecode with a word 3-gram (same estimator) through the kenlm module."""
    try:
        import kenlm
        import pyctcdecode
    except ImportError:
        return [{"library": "pyctcdecode", "note": "not installed (pip install pyctcdecode==0.5.0 ufal-kenlm==26.4.1)"}]
    import tempfile

    from text_recognizer.decoding.ngram import estimate_kneser_ney, write_arpa

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = write_arpa(estimate_kneser_ney([line.split() for line in train_lines], 3), Path(tmp) / "w3.arpa")
        model = kenlm.Model(str(path))
    unigrams = sorted({w for line in train_lines for w in line.split()})
    alphabet = pyctcdecode.Alphabet([""] + list(codec.charset), False)
    arrays = [lp.numpy() for lp in lps]
    for beam, alpha, beta in ((8, 0.0, 0.0), (8, 0.5, 1.0), (16, 0.5, 1.0)):
        lm = pyctcdecode.LanguageModel(model, unigrams, alpha=alpha, beta=beta) if alpha > 0 else None
        decoder = pyctcdecode.BeamSearchDecoderCTC(alphabet, lm)
        start = time.perf_counter()
        hyps = [decoder.decode(a, beam_width=beam) for a in arrays]
        seconds = time.perf_counter() - start
        rows.append({"library": "pyctcdecode 0.5.0", "lm": "word 3-gram" if lm else "none", "beam": beam,
                     "lm_weight": alpha, "word_bonus": beta, "cer": score(refs, hyps), "seconds": seconds,
                     "ratio": seconds / greedy_s})
    return rows


def decile_ratio(confidences: list[float], pairs: list[tuple[str, str]]) -> tuple[float, float, float]:
    """CER of the 10% least-confident lines, of the 10% most-confident, and their ratio."""
    order = sorted(range(len(pairs)), key=lambda i: confidences[i])
    k = max(1, len(order) // 10)
    low = cer([pairs[i][0] for i in order[:k]], [pairs[i][1] for i in order[:k]])
    high = cer([pairs[i][0] for i in order[-k:]], [pairs[i][1] for i in order[-k:]])
    return low, high, low / max(high, 1e-9)


def deciles(confidences: list[float], pairs: list[tuple[str, str]]) -> list[tuple[float, float]]:
    order = sorted(range(len(pairs)), key=lambda i: confidences[i])
    rows = []
    for d in range(10):
        idx = order[d * len(order) // 10 : (d + 1) * len(order) // 10]
        rows.append((sum(confidences[i] for i in idx) / len(idx),
                     cer([pairs[i][0] for i in idx], [pairs[i][1] for i in idx])))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/lm"), help="folder of decode_logits.py outputs")
    parser.add_argument("--bundle", type=Path, required=True,
                        help="decoder bundle with the LM (python -m training.decoder.build_lm)")
    parser.add_argument("--bundle-out", type=Path, default=None,
                        help="write the bundle with tuned settings + calibration")
    parser.add_argument("--report", type=Path, default=None, help="markdown report")
    parser.add_argument("--checkpoint", type=Path, default=DEFAULT_CHECKPOINT,
                        help="the model whose logits were cached (the bundle records its sha256)")
    parser.add_argument("--weights", default="0.8,1.0,1.2,1.4", help="LM weights to try")
    parser.add_argument("--bonuses", default="0.5,1.0,1.5,2.0,2.5", help="word bonuses to try")
    parser.add_argument("--beam-width", type=int, default=8)
    parser.add_argument("--word-lm-weights", default="0.2,0.3,0.4",
                        help="word-LM weights in the whole-line re-scoring to try (if the bundle has a word LM)")
    parser.add_argument("--word-lm-bonuses", default="1.0,1.5", help="re-scoring scores per word to try")
    parser.add_argument("--oov-penalties", default="4.0,5.0,6.0", help="re-scoring penalties per unknown word to try")
    parser.add_argument("--rescore-lm-weights", default="0.85",
                        help="character-LM weights in the whole-line re-scoring to try")
    parser.add_argument("--corrections", type=int, default=12,
                        help="lexicon words tried per unknown word (0: no corrections)")
    parser.add_argument("--blank-penalties", default="0,1.0,1.5,2.0",
                        help="blank penalties to try last, with the other settings chosen (the grids above "
                             "use the bundle's, or BeamOptions' default)")
    parser.add_argument("--train-text", nargs="*",
                        default=["../shared/data/iam/train", "../shared/data/iam/train_extra"],
                        help="text for pyctcdecode's word LM")
    parser.add_argument("--skip-pyctcdecode", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    codec = load_checkpoint(args.checkpoint).codec  # the cached logits' model's alphabet
    bundle = load_bundle(args.bundle, codec)
    val = load_set(args.cache, "val")
    n = len(val["files"])
    assert val["files"] == sorted(val["files"])
    halves = {"tune": range(0, n // 2), "held": range(n // 2, n), "all": range(n)}
    lps = [lp.float() for lp in val["log_probs"]]
    refs = val["natural"]
    report: list[str] = []
    log = {}

    def sub(values, part):
        return [values[i] for i in halves[part]]

    # 1. greedy and the library comparison on the tuning half
    greedy = LineDecoder(codec, "greedy")
    tune_lps, tune_refs = sub(lps, "tune"), sub(refs, "tune")
    g_paths, g_s = decode_paths(greedy, tune_lps)
    rows = [{"library": "greedy", "lm": "none", "beam": 1, "cer": score(tune_refs, texts(greedy, g_paths, tune_lps)),
             "seconds": g_s, "ratio": 1.0}]
    for beam, w, b, use_lm in ((8, 0.0, 0.0, False), (8, 1.2, 1.5, True), (16, 1.2, 1.5, True)):
        dec = LineDecoder(codec, "beam", bundle, use_lm=use_lm, beam_width=beam, lm_weight=w, word_bonus=b,
                          word_lm_weight=0.0)
        paths, s = decode_paths(dec, tune_lps)
        rows.append({"library": "flashlight-text 0.0.7", "lm": "char 6-gram" if use_lm else "none", "beam": beam,
                     "lm_weight": w, "word_bonus": b, "cer": score(tune_refs, texts(dec, paths, tune_lps)),
                     "seconds": s, "ratio": s / g_s})
        print(rows[-1], flush=True)
    if not args.skip_pyctcdecode:
        from text_recognizer.decoding.lm_builder import read_texts

        rows += pyctcdecode_rows(codec, read_texts(args.train_text), tune_lps, tune_refs, g_s)
        print(rows[-3:], flush=True)
    log["libraries"] = rows
    report += ["### Libraries (tuning half of IAM val, decode only, no model time)", "",
               "| library | LM | beam | LM weight | bonus | CER | decode s | x greedy |",
               "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "cer" in r:
            report.append(f"| {r['library']} | {r['lm']} | {r['beam']} | {r.get('lm_weight', '-')} "
                          f"| {r.get('word_bonus', '-')} "
                          f"| {100 * r['cer']:.2f}% | {r['seconds']:.1f} | {r['ratio']:.0f} |")
        else:
            report.append(f"| {r['library']} | {r['note']} |")

    # 2. tune LM weight x word bonus on the tuning half (character LM alone), then the word LM's re-ranking
    grid = []
    for w, b in itertools.product(map(float, args.weights.split(",")), map(float, args.bonuses.split(","))):
        dec = LineDecoder(codec, "beam", bundle, beam_width=args.beam_width, lm_weight=w, word_bonus=b,
                          word_lm_weight=0.0)
        paths, s = decode_paths(dec, tune_lps)
        grid.append((score(tune_refs, texts(dec, paths, tune_lps)), w, b))
        print(f"tune w={w} b={b}: {100 * grid[-1][0]:.2f}%", flush=True)
    best_cer, best_w, best_b = min(grid)
    log["grid"] = grid
    options = BeamOptions.from_dict(bundle.get("beam"), beam_width=args.beam_width, lm_weight=best_w,
                                    word_bonus=best_b, word_lm_weight=0.0)  # the rest as the grid ran
    report += ["", f"Grid (beam {args.beam_width}): best LM weight {best_w}, word bonus {best_b} "
               f"({100 * best_cer:.2f}% on the tuning half).", ""]
    if bundle.get("word_lm"):
        word_grid = [(best_cer, 0.0, 0.0, 0.0, 0.0)]
        for a, c, p, r in itertools.product(*(map(float, v.split(",")) for v in (
                args.word_lm_weights, args.word_lm_bonuses, args.oov_penalties, args.rescore_lm_weights))):
            dec = LineDecoder(codec, "beam", bundle, **{**options.to_dict(), "word_lm_weight": a, "word_lm_bonus": c,
                                                        "oov_penalty": p, "rescore_lm_weight": r,
                                                        "corrections": args.corrections})
            paths, _ = decode_paths(dec, tune_lps)
            word_grid.append((score(tune_refs, texts(dec, paths, tune_lps)), a, c, p, r))
            print(f"tune word LM weight={a} bonus={c} oov={p} char LM={r}: {100 * word_grid[-1][0]:.2f}%", flush=True)
        word_cer, a, c, p, r = min(word_grid)
        log["word_grid"] = word_grid
        options = BeamOptions(**{**options.to_dict(), "word_lm_weight": a, "word_lm_bonus": c, "oov_penalty": p,
                                 "rescore_lm_weight": r, "corrections": args.corrections})
        report += [f"Whole-line re-scoring grid ({args.corrections} lexicon corrections per unknown word): best "
                   f"word-LM weight {a}, score per word {c}, penalty per unknown word {p}, character-LM weight {r} "
                   f"({100 * word_cer:.2f}% on the tuning half; 0 weight: no re-scoring).", ""]

    blank_grid = []
    for q in map(float, args.blank_penalties.split(",")):
        dec = LineDecoder(codec, "beam", bundle, **{**options.to_dict(), "blank_penalty": q})
        paths, _ = decode_paths(dec, tune_lps)
        blank_grid.append((score(tune_refs, texts(dec, paths, tune_lps)), q))
        print(f"tune blank penalty={q}: {100 * blank_grid[-1][0]:.2f}%", flush=True)
    blank_cer, q = min(blank_grid)
    log["blank_grid"] = blank_grid
    options = BeamOptions(**{**options.to_dict(), "blank_penalty": q})
    report += [f"Blank penalty grid: best {q} ({100 * blank_cer:.2f}% on the tuning half).", ""]

    # 3. CER on held-out half and all val; paths for calibration
    decoders = {"greedy": greedy,
                "beam (no LM)": LineDecoder(codec, "beam", bundle, use_lm=False, beam_width=args.beam_width),
                "beam (character LM only)": LineDecoder(codec, "beam", bundle,
                                                        **{**options.to_dict(), "word_lm_weight": 0.0}),
                "beam": LineDecoder(codec, "beam", bundle, **options.to_dict())}
    all_paths = {name: decode_paths(dec, lps)[0] for name, dec in decoders.items()}
    report += ["| decoder | tune half | held-out half | all val |", "|---|---|---|---|"]
    for name, dec in decoders.items():
        hyps = texts(dec, all_paths[name], lps)
        cells = [f"{100 * score(sub(refs, p), sub(hyps, p)):.2f}%" for p in ("tune", "held", "all")]
        report.append(f"| {name} | " + " | ".join(cells) + " |")
        log[f"cer_{name}"] = cells

    # 4. calibration: fit on the tuning half, report on the held-out half (and OOD sets)
    calibrations = {}
    ood = {name: load_set(args.cache, name) for name in OOD if (args.cache / f"{name}.pt").is_file()}
    for name in ("greedy", "beam"):
        dec = decoders[name]
        tune = calibration_data(dec.codec, sub(all_paths[name], "tune"), tune_lps, tune_refs)
        fitted = {level: cal.fit(*tune[level]) for level in ("char", "word", "line")}
        calibrations[name] = fitted
        held = calibration_data(dec.codec, sub(all_paths[name], "held"), sub(lps, "held"), sub(refs, "held"))
        report += ["", f"### Calibration, {name} (fit on the tuning half, measured on the held-out half)", ""]
        for level in ("char", "word", "line"):
            conf = [cal.apply(fitted[level], f) for f in held[level][0]]
            ece = cal.expected_calibration_error(conf, held[level][1])
            report.append(f"- {level}: ECE {ece:.4f} over {len(conf)} {level}s"
                          + (" (outcome: 1 - line CER)" if level == "line" else ""))
            log[f"ece_{name}_{level}"] = ece
            if level == "word":
                report += ["", "| word confidence | words | mean confidence | share exactly right |",
                           "|---|---|---|---|"]
                for row in cal.reliability_table(conf, held[level][1]):
                    report.append(f"| {row['low']:.1f}-{row['high']:.1f} | {row['n']} | {row['confidence']:.3f} "
                                  f"| {row['accuracy']:.3f} |")
                report.append("")
        # line confidence ranking: today's number vs the calibrated line confidence
        report += ["", "| set | lines | CER | worst-10% / best-10% CER, today's confidence "
                   "| same, new line confidence |",
                   "|---|---|---|---|---|"]
        sets = {"IAM val held-out half": (sub(all_paths[name], "held"), sub(lps, "held"), sub(refs, "held")),
                "IAM val all": (all_paths[name], lps, refs)}
        for set_name, data in ood.items():
            o_lps = [lp.float() for lp in data["log_probs"]]
            sets[set_name] = ([dec.path(lp) for lp in o_lps], o_lps, data["natural"])
        for set_name, (paths, s_lps, s_refs) in sets.items():
            d = calibration_data(dec.codec, paths, s_lps, s_refs)
            # out-of-domain: spaces next to punctuation ignored (both sides detokenised), as in shared/data's README
            pairs = d["line_cer"] if set_name.startswith("IAM") else [(r, detokenize(h)) for r, h in d["line_cer"]]
            new = [cal.apply(fitted["line"], f) for f in d["line"][0]]
            old_low, old_high, old_ratio = decile_ratio(d["old_line"], pairs)
            low, high, ratio = decile_ratio(new, pairs)
            total = cer([p[0] for p in pairs], [p[1] for p in pairs])
            report.append(f"| {set_name} | {len(pairs)} | {100 * total:.2f}% | "
                          f"{100 * old_low:.1f}% / {100 * old_high:.1f}% = "
                          f"{old_ratio:.1f}x | {100 * low:.1f}% / {100 * high:.1f}% = {ratio:.1f}x |")
            log[f"deciles_{name}_{set_name}"] = deciles(new, pairs)
        report.append("")
        report += ["CER by line-confidence decile (" + name + "): " + "; ".join(
            f"{s}: " + ", ".join(f"{100 * c:.0f}%" for _, c in log[f'deciles_{name}_{s}']) for s in sets), ""]

    if args.bundle_out:
        out = make_bundle(arpa_text(bundle), codec, bundle["lm"]["order"], bundle["lm"]["source"],
                          beam=options.to_dict(), calibration=calibrations, word_lm=bundle.get("word_lm"))
        out["model_sha256"] = hashlib.sha256(args.checkpoint.read_bytes()).hexdigest()  # the cached logits' model
        save_bundle(out, args.bundle_out)
        print(f"bundle with tuned settings and calibration -> {args.bundle_out}")
    text = "\n".join(report)
    print(text)
    if args.report:
        args.report.write_text(text + "\n", encoding="utf-8")
        args.report.with_suffix(".json").write_text(json.dumps(log, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
