"""How often ``--language auto`` puts a line in the wrong language, by margin, from cached log-probabilities.

    PYTHONPATH=. python benchmarks/auto_language.py --checkpoint model/default.pt \\
        en=decoder/logits/val.pt:920 fr=decoder/fr/tune.logprobs.pt --margins 0 0.05 0.1 0.12 0.15 0.2 0.3

Why: ``auto`` (``text_recognizer.decoding.language``) scores each line's greedy reading under every language's
character LM and keeps the model's own language unless another beats it by ``AUTO_MARGIN`` log10 per character.
The margin is a trade: too small and noisy readings of hard English hands go to French, too large and French
lines stay English. Each argument is ``LANG=CACHE[:N]``: a cache of one language's lines
(``python -m training.decoder cache``'s or ``french_lm.py``'s, any dict with ``log_probs``), its first ``N`` lines
only when given (a tuning half). Prints,
per margin, the lines read in the wrong language in each set. Needs ``<checkpoint>.decoder.pt`` and
``<checkpoint>.<lang>.decoder.pt`` beside the checkpoint.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.decoding.beam import BeamDecoder, BeamOptions
from text_recognizer.decoding.bundle import arpa_text, bundle_language, bundle_path, language_bundle_paths, load_bundle
from text_recognizer.decoding.greedy import collapse
from text_recognizer.decoding.language import choose_language


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("sets", nargs="+", help="LANG=CACHE[:N]: cached lines of one language (first N only)")
    parser.add_argument("--margins", type=float, nargs="+", default=[0.0, 0.05, 0.1, 0.12, 0.15, 0.2, 0.3])
    args = parser.parse_args(argv)
    codec = load_checkpoint(args.checkpoint).codec
    own = load_bundle(bundle_path(args.checkpoint), codec)
    bundles = {bundle_language(own): own}
    for language, path in language_bundle_paths(args.checkpoint).items():
        bundles.setdefault(language, load_bundle(path, codec))
    scorers = {code: BeamDecoder(codec, BeamOptions(beam_width=1), arpa_text(bundle)).char_log10
               for code, bundle in bundles.items()}  # the model's own language first
    readings = {}
    for item in args.sets:
        language, _, rest = item.partition("=")
        path, _, count = rest.partition(":")
        log_probs = torch.load(path, weights_only=False)["log_probs"][: int(count) if count else None]
        readings[item] = (language, [codec.decode(collapse(lp.float().argmax(-1).tolist())) for lp in log_probs])
    for margin in args.margins:
        cells = []
        for item, (language, texts) in readings.items():
            wrong = sum(choose_language([text], scorers, margin) != language for text in texts)
            cells.append(f"{item}: {wrong}/{len(texts)}")
        print(f"margin {margin:.2f}: " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
