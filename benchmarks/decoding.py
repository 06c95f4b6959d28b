"""Beam search + LMs against greedy on cached log-probabilities: libraries, CER per decoder, calibration.

    python -m training.decoder cache --checkpoint M --data ../shared/data/iam/val --out /tmp/lm/val.pt  # once per set
    python -m training.decoder cache --checkpoint M --data ../shared/data/stanford_memorials_1905 \
        --out /tmp/lm/stanford_memorials_1905.pt                                   # out-of-domain sets: optional
    PYTHONPATH=. python benchmarks/decoding.py --checkpoint M --cache /tmp/lm --bundle BUNDLE --report /tmp/lm/r.md

It only measures a bundle as it is (the one decoder tuner, ``python -m training.decoder tune``, chooses its
settings and fits its calibration on the first half of IAM val by file name). Reported: decode time and CER
of flashlight-text and pyctcdecode on the tuning half, as ratios against greedy; CER of greedy, beam without
LM, beam with the character LM only and the bundle's full beam on the tuning half ("tune"), the other half
("held") and all of val; and the bundle's calibration on the held-out half (ECE per level, word reliability,
how well line confidence ranks lines, also on the out-of-domain sets). Times are decode-only seconds in this
process.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.data.tokenization import detokenize
from text_recognizer.decoding import calibration as cal
from text_recognizer.decoding.beam import BeamOptions
from text_recognizer.decoding.bundle import load_bundle
from text_recognizer.decoding.decoder import Geometry, LineDecoder, line_features
from text_recognizer.metrics import cer
from text_recognizer.recognizer import DEFAULT_CHECKPOINT
from training.decoder.lines import load_cache
from training.decoder.tune import calibration_data

OOD = ("stanford_memorials_1905", "gw_washington_1755")
GEOMETRY = Geometry(16, 4)  # positions are not scored here


def load_set(cache: Path, name: str) -> dict:
    """A cache (``training.decoder.lines``) as a dict, references also in natural spacing (``natural``)."""
    lines = load_cache(cache / f"{name}.pt")
    return {"files": lines.files, "references": lines.references, "log_probs": lines.log_probs,
            "natural": [detokenize(r) for r in lines.references]}


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
    parser.add_argument("--cache", type=Path, default=Path("/tmp/lm"),
                        help="folder of caches (python -m training.decoder cache): val.pt and out-of-domain sets")
    parser.add_argument("--bundle", type=Path, required=True, help="the decoder bundle to measure")
    parser.add_argument("--report", type=Path, default=None, help="markdown report (and .json beside it)")
    parser.add_argument("--checkpoint", type=Path, default=DEFAULT_CHECKPOINT,
                        help="the model whose logits were cached")
    parser.add_argument("--train-text", nargs="*",
                        default=["../shared/data/iam/train", "../shared/data/iam/train_extra"],
                        help="text for pyctcdecode's word LM")
    parser.add_argument("--skip-pyctcdecode", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    codec = load_checkpoint(args.checkpoint).codec  # the cached logits' model's alphabet
    bundle = load_bundle(args.bundle, codec)
    options = BeamOptions.from_dict(bundle.get("beam"))
    val = load_set(args.cache, "val")
    n = len(val["files"])
    halves = {"tune": range(0, n // 2), "held": range(n // 2, n), "all": range(n)}
    lps, refs = val["log_probs"], val["natural"]
    report: list[str] = []
    log: dict = {"bundle": str(args.bundle), "settings": options.to_dict()}

    def sub(values, part):
        return [values[i] for i in halves[part]]

    # 1. greedy and the library comparison on the tuning half
    greedy = LineDecoder(codec, "greedy")
    tune_lps, tune_refs = sub(lps, "tune"), sub(refs, "tune")
    g_paths, g_s = decode_paths(greedy, tune_lps)
    rows = [{"library": "greedy", "lm": "none", "beam": 1, "cer": score(tune_refs, texts(greedy, g_paths, tune_lps)),
             "seconds": g_s, "ratio": 1.0}]
    for beam, use_lm in ((8, False), (8, True), (options.beam_width, True)):
        dec = LineDecoder(codec, "beam", bundle, use_lm=use_lm, beam_width=beam, lm_weight=options.lm_weight,
                          word_bonus=options.word_bonus, word_lm_weight=0.0)
        paths, s = decode_paths(dec, tune_lps)
        rows.append({"library": "flashlight-text 0.0.7", "lm": "char 6-gram" if use_lm else "none", "beam": beam,
                     "lm_weight": options.lm_weight if use_lm else 0.0, "word_bonus": options.word_bonus,
                     "cer": score(tune_refs, texts(dec, paths, tune_lps)), "seconds": s, "ratio": s / g_s})
        print(rows[-1], flush=True)
    if not args.skip_pyctcdecode:
        from text_recognizer.decoding.lm_builder import read_texts

        rows += pyctcdecode_rows(codec, read_texts(args.train_text), tune_lps, tune_refs, g_s)
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

    # 2. CER per decoder on each half, with the bundle's settings
    decoders = {"greedy": greedy,
                "beam (no LM)": LineDecoder(codec, "beam", bundle, use_lm=False, beam_width=options.beam_width),
                "beam (character LM only)": LineDecoder(codec, "beam", bundle,
                                                        **{**options.to_dict(), "word_lm_weight": 0.0}),
                "beam": LineDecoder(codec, "beam", bundle, **options.to_dict())}
    all_paths = {name: decode_paths(dec, lps)[0] for name, dec in decoders.items()}
    report += ["", f"Settings: {options.to_dict()}", "", "| decoder | tune half | held-out half | all val |",
               "|---|---|---|---|"]
    for name, dec in decoders.items():
        hyps = texts(dec, all_paths[name], lps)
        cells = [f"{100 * score(sub(refs, p), sub(hyps, p)):.2f}%" for p in ("tune", "held", "all")]
        report.append(f"| {name} | " + " | ".join(cells) + " |")
        log[f"cer_{name}"] = cells

    # 3. the bundle's calibration, measured on the held-out half (and the out-of-domain sets)
    ood = {name: load_set(args.cache, name) for name in OOD if (args.cache / f"{name}.pt").is_file()}
    for name in ("greedy", "beam"):
        fitted = (bundle.get("calibration") or {}).get(name)
        if not fitted:
            report += ["", f"### Calibration, {name}: the bundle has none", ""]
            continue
        report += calibration_report(name, decoders[name], fitted, all_paths[name], lps, refs, halves, ood, log)

    text = "\n".join(report)
    print(text)
    if args.report:
        args.report.write_text(text + "\n", encoding="utf-8")
        args.report.with_suffix(".json").write_text(json.dumps(log, indent=1, default=str), encoding="utf-8")
    return 0


def calibration_report(name: str, dec: LineDecoder, fitted: dict, paths: list, lps: list, refs: list[str],
                       halves: dict, ood: dict, log: dict) -> list[str]:
    """ECE per level and word reliability on the held-out half; line-confidence ranking on every set."""
    held = calibration_data(dec.codec, [paths[i] for i in halves["held"]], [lps[i] for i in halves["held"]],
                            [refs[i] for i in halves["held"]])
    report = ["", f"### Calibration, {name} (the bundle's, measured on the held-out half)", ""]
    for level in ("char", "word", "line"):
        conf = [cal.apply(fitted[level], f) for f in held[level][0]]
        ece = cal.expected_calibration_error(conf, held[level][1])
        report.append(f"- {level}: ECE {ece:.4f} over {len(conf)} {level}s"
                      + (" (outcome: 1 - line CER)" if level == "line" else ""))
        log[f"ece_{name}_{level}"] = ece
        if level == "word":
            report += ["", "| word confidence | words | mean confidence | share exactly right |", "|---|---|---|---|"]
            for row in cal.reliability_table(conf, held[level][1]):
                report.append(f"| {row['low']:.1f}-{row['high']:.1f} | {row['n']} | {row['confidence']:.3f} "
                              f"| {row['accuracy']:.3f} |")
            report.append("")
    report += ["", "| set | lines | CER | worst-10% / best-10% CER, raw confidence | same, calibrated |",
               "|---|---|---|---|---|"]
    sets = {"IAM val held-out half": ([paths[i] for i in halves["held"]], [lps[i] for i in halves["held"]],
                                      [refs[i] for i in halves["held"]]),
            "IAM val all": (paths, lps, refs)}
    for set_name, data in ood.items():
        sets[set_name] = ([dec.path(lp) for lp in data["log_probs"]], data["log_probs"], data["natural"])
    for set_name, (s_paths, s_lps, s_refs) in sets.items():
        d = calibration_data(dec.codec, s_paths, s_lps, s_refs)
        # out-of-domain: spaces next to punctuation ignored (both sides detokenised), as in shared/data's README
        pairs = d["line_cer"] if set_name.startswith("IAM") else [(r, detokenize(h)) for r, h in d["line_cer"]]
        new = [cal.apply(fitted["line"], f) for f in d["line"][0]]
        old_low, old_high, old_ratio = decile_ratio(d["old_line"], pairs)
        low, high, ratio = decile_ratio(new, pairs)
        total = cer([p[0] for p in pairs], [p[1] for p in pairs])
        report.append(f"| {set_name} | {len(pairs)} | {100 * total:.2f}% | "
                      f"{100 * old_low:.1f}% / {100 * old_high:.1f}% = {old_ratio:.1f}x | "
                      f"{100 * low:.1f}% / {100 * high:.1f}% = {ratio:.1f}x |")
        log[f"deciles_{name}_{set_name}"] = deciles(new, pairs)
    report += ["", f"CER by line-confidence decile ({name}): " + "; ".join(
        f"{s}: " + ", ".join(f"{100 * c:.0f}%" for _, c in log[f"deciles_{name}_{s}"]) for s in sets), ""]
    return report


if __name__ == "__main__":
    raise SystemExit(main())
