"""The alphabet of a training run: IAM's built-in characters, the characters of the training labels, or a
charset file; Unicode normalisation of labels; and carrying a model's output layer over to a new alphabet.

Why: the bundled model knows IAM's 79 ASCII characters, so lines in French, German or early-modern
English (é, ß, ſ) were dropped as "unknown characters". A run can now take its alphabet from its
data (``--charset data``, with ``--charset-min-count`` to leave out characters too rare to learn,
reported with their counts) or from a file (``--charset FILE``), and ``--init-from`` a checkpoint
with another alphabet keeps the output weights of the characters both share (matched by character,
not by position) and starts the new ones from fresh initialisation. The codec travels in the
checkpoint (``Codec.to_dict``), so readers need nothing else.

Labels are normalised to NFC (composed: "é" is one character) by default, or NFD (decomposed: "e" +
combining accent, a smaller alphabet), before counting and encoding, so one visual character never
ends up as two classes because files disagree on composition.

    python -m training.loop.alphabet --data DIR [DIR...] [--min-count N] [--output charset.txt]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from text_recognizer.codec import DEFAULT_CHARSET, LATIN_CHARSET, Codec
from text_recognizer.data.folder import read_labels
from text_recognizer.data.page import cut_layout_folder, is_layout_folder
from text_recognizer.data.tokenization import detokenize
from text_recognizer.normalization import NORMALIZATIONS, normalizer
from training.loop.data import SYNTHETIC, _resolve_named

BUILTIN = "iam"  # --charset iam: the default alphabet (the bundled model's)
LATIN = "latin"  # --charset latin: IAM's characters plus Western European letters and signs (codec.LATIN_CHARSET)
#: how much less likely a new accented letter starts than its base letter (a logit offset; see remap_output_rows)
ACCENT_START_OFFSET = 3.0
FROM_DATA = "data"  # --charset data: the training labels' characters


def describe(character: str) -> str:
    """``'é' (U+00E9 LATIN SMALL LETTER E WITH ACUTE)``: readable in reports, even for spaces and marks."""
    name = unicodedata.name(character, "unnamed")
    return f"{character!r} (U+{ord(character):04X} {name})"


@dataclass
class Alphabet:
    """A codec and how it was chosen: character counts in the labels and the characters left out."""

    codec: Codec
    source: str
    counts: Counter = field(default_factory=Counter)
    excluded: dict[str, int] = field(default_factory=dict)

    def summary(self, limit: int = 20) -> str:
        lines = [f"alphabet: {len(self.codec.charset)} characters ({self.source})"]
        new = [c for c in self.codec.charset if c not in DEFAULT_CHARSET]
        if new:
            lines.append(f"  beyond IAM's: {''.join(new)!r}")
        if self.excluded:
            lines.append(f"  left out (below the minimum count; their lines are skipped): {len(self.excluded)}")
            ranked = sorted(self.excluded.items(), key=lambda item: (-item[1], item[0]))
            lines += [f"    {describe(c)}: {n}" for c, n in ranked[:limit]]
            if len(ranked) > limit:
                lines.append(f"    ... and {len(ranked) - limit} more")
        return "\n".join(lines)


def alphabet_from_texts(texts: Iterable[str], min_count: int = 1, always: str = "") -> Alphabet:
    """Every character seen at least ``min_count`` times in ``texts`` (plus ``always``), sorted by code point."""
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"min_count (--charset-min-count) must be an integer >= 1, got {min_count!r}")
    counts: Counter = Counter()
    for text in texts:
        counts.update(text)
    for control in [c for c in counts if c in "\n\r"]:
        del counts[control]  # line breaks never belong to a line's text
    kept = {c for c, n in counts.items() if n >= min_count} | set(always)
    excluded = {c: n for c, n in counts.items() if c not in kept}
    if not kept:
        raise ValueError(f"no character occurs at least {min_count} times in the training labels")
    return Alphabet(Codec("".join(sorted(kept))), f"from the training labels, min count {min_count}", counts, excluded)


def read_charset(path: str | Path, normalization: str = "NFC") -> Codec:
    """A charset file: UTF-8, one character per line (a line holding one space is the space; empty lines
    are skipped; a base character with combining marks counts as its code points under NFD)."""
    path = Path(path)
    try:
        content = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise ValueError(f"--charset file {path} does not exist") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"--charset file {path} is not UTF-8: {error}") from None
    normalise = normalizer(normalization)
    characters: list[str] = []
    for number, line in enumerate(content.split("\n"), start=1):
        line = normalise(line.removesuffix("\r"))
        if not line:
            continue
        if len(line) > 1 and not all(unicodedata.combining(c) for c in line[1:]):
            raise ValueError(f"--charset file {path}:{number} holds {line!r}: write one character per line")
        characters += [c for c in line if c not in characters]
    if not characters:
        raise ValueError(f"--charset file {path} holds no characters")
    return Codec("".join(characters))


def write_charset(codec: Codec, path: str | Path) -> Path:
    """The inverse of :func:`read_charset`."""
    path = Path(path)
    path.write_text("".join(f"{c}\n" for c in codec.charset), encoding="utf-8")
    return path


def training_texts(config, model) -> list[str]:
    """The normalised labels of a run's training folders (``config``: ``DataConfig``, ``model``:
    ``ModelConfig``); named datasets are prepared first, PAGE/ALTO folders cut (and cached)."""
    normalise = normalizer(config.unicode_normalization)
    named = tuple(d for d in config.data if d != SYNTHETIC)
    folders, _ = _resolve_named(dataclasses.replace(config, data=named), model) if named else ([], [])
    texts = []
    for folder in folders:
        if is_layout_folder(folder):
            texts += [r.text for r in cut_layout_folder(folder, normalize=normalise).records]
        else:
            texts += [normalise(detokenize(r.text) if config.detokenize else r.text) for r in read_labels(folder)]
    return texts


def resolve_alphabet(config) -> Alphabet:
    """The alphabet an ``ExperimentConfig`` asks for (``--charset``); a resumed run keeps its checkpoint's."""
    data = config.data
    if data.charset == BUILTIN:
        return Alphabet(Codec(), "IAM's built-in characters, as the bundled model")
    if data.charset == LATIN:
        return Alphabet(Codec(LATIN_CHARSET), "one Latin-script alphabet for English, French and Western Europe")
    if data.charset == FROM_DATA:
        texts = training_texts(data, config.model)
        if not texts and SYNTHETIC not in data.data:
            raise ValueError("--charset data needs labelled training folders in --data")
        # synthetic lines are generated from IAM's characters: keep them when they are part of the data
        always = DEFAULT_CHARSET if SYNTHETIC in data.data else ""
        return alphabet_from_texts(texts, data.charset_min_count, always=always)
    return Alphabet(read_charset(data.charset, data.unicode_normalization), f"from {data.charset}")


def with_alphabet(config, codec: Codec):
    """``config`` with the model's output size set for ``codec``."""
    return dataclasses.replace(config, model=dataclasses.replace(config.model, num_classes=codec.num_classes))


def base_letters(characters: Iterable[str], old: Codec) -> dict[str, str]:
    """The characters of ``characters`` new to ``old`` whose base letter it knows: ``{"é": "e", "Ç": "C"}``.

    The base letter is the first code point of the NFD form; ``œ``, ``ß`` or ``€`` have none of their own.
    """
    found = {}
    for character in characters:
        base = unicodedata.normalize("NFD", character)[0]
        if character not in old.charset and base != character and base in old.charset:
            found[character] = base
    return found


def describe_new_rows(new: str, old: Codec) -> str:
    """How the output rows of ``new`` characters start, for the run's log."""
    seeded = "".join(base_letters(new, old))
    fresh = "".join(c for c in new if c not in seeded)
    parts = [f"{seeded!r} start from their base letters" if seeded else "",
             f"{fresh!r} start untrained" if fresh else ""]
    return "; ".join(p for p in parts if p)


def remap_output_rows(state: dict[str, torch.Tensor], fresh: dict[str, torch.Tensor], old: Codec, new: Codec,
                      prefix: str = "head.") -> tuple[dict[str, torch.Tensor], list[str]]:
    """Carry a checkpoint's output layer (``prefix`` keys: rows = blank + characters) over to ``new``.

    ``state`` is the checkpoint's state dict, ``fresh`` the new model's freshly initialised one. Rows
    of the blank and of the characters both codecs share are copied from ``state``. A new character whose
    base letter the old codec knows (``é`` from ``e``, ``Ç`` from ``C``: the first code point of its NFD form)
    starts from that letter's row with its bias lowered by ``ACCENT_START_OFFSET``: the model reads the accented
    letter as the plain one from the first step, so training only has to teach the accent, and the plain letter
    stays the reading until it has. Other new characters keep ``fresh``'s values. Returns the state to load and
    the new characters.
    """
    if old.charset == new.charset:
        return state, []
    rows_new = [0] + [new.encode(c)[0] for c in new.charset if c in old.charset]
    rows_old = [0] + [old.encode(c)[0] for c in new.charset if c in old.charset]
    out = dict(state)
    keys = [k for k in state if k.startswith(prefix)]
    if not keys:
        raise ValueError(f"no output layer ({prefix}*) in the checkpoint's weights to carry over")
    for key in keys:
        if key not in fresh or state[key].shape[0] != old.num_classes or fresh[key].shape[0] != new.num_classes:
            shape = tuple(state[key].shape)
            raise ValueError(f"output weight {key} has shape {shape}, expected {old.num_classes} rows")
        tensor = fresh[key].detach().clone().to(state[key].dtype)
        tensor[rows_new] = state[key][rows_old]
        for character, base in base_letters(new.charset, old).items():
            tensor[new.encode(character)[0]] = state[key][old.encode(base)[0]]
            if tensor.dim() == 1:  # the bias
                tensor[new.encode(character)[0]] -= ACCENT_START_OFFSET
        out[key] = tensor
    return out, [c for c in new.charset if c not in old.charset]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.loop.alphabet",
                                     description="Count the characters of training folders and write a charset file.")
    parser.add_argument("--data", nargs="+", required=True, help="dataset folders (labels.tsv, or PAGE/ALTO pages)")
    parser.add_argument("--min-count", type=int, default=1, help="leave out characters seen fewer times")
    parser.add_argument("--unicode-normalization", choices=NORMALIZATIONS, default="NFC", help="label normalisation")
    parser.add_argument("--detokenize", action="store_true", help="read IAM-tokenised labels with natural spacing")
    parser.add_argument("--output", type=Path, default=None, help="write the charset file (one character per line)")
    args = parser.parse_args(argv)
    from text_recognizer.models.config import ModelConfig
    from training.loop.config import DataConfig

    try:
        config = DataConfig(data=tuple(args.data), unicode_normalization=args.unicode_normalization,
                            detokenize=args.detokenize)
        alphabet = alphabet_from_texts(training_texts(config, ModelConfig()), args.min_count)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(alphabet.summary(limit=1000))
    if args.output:
        print(f"wrote {write_charset(alphabet.codec, args.output)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
