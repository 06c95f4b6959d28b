"""Character language models for beam search, and the decoder bundle that carries one with a model.

Build a character n-gram model from text files and store it next to a checkpoint::

    python -m text_recognizer.ctc.lm --checkpoint best.pt --order 6 TEXT_OR_FOLDER...

Why characters: handwriting is full of words no lexicon holds (names, misspellings, hyphenated
halves), and a character model scores them all, while still knowing English spelling and which
words follow which over its 6-character window (KenLM in flashlight-text supports orders <= 6).
Spaces are the token ``|`` (ARPA tokens cannot be blank).

Text sources: a ``.txt`` file is one line of text per line; a folder (or a ``labels.tsv``) is a
dataset folder whose IAM-tokenised labels are turned into natural spacing (``detokenize``), the
spacing the recognizer outputs; ``--running-text`` books and speeches are cut into line-sized pieces
(``text_recognizer.data.running_text``). Never build it from validation or test text.

The same text also makes a small word bigram model (``word_lm.py``, ``--word-order 0`` for none)
that re-scores the readings left in the beam (and proposes lexicon corrections): characters steer
the search, words pick the winner.

The decoder bundle is a plain-types dict (``torch.load(..., weights_only=True)`` reads it): the
gzipped ARPA texts (stored as uint8 tensors, see ``save_bundle``), the alphabet they were built for,
the beam settings tuned for the model, the confidence calibration and, optionally, a second set of
both for reading each line three times (``three_readings``, ``text_recognizer.readings``). ``decoder_bundle_for`` is
the one place that finds it for a checkpoint: inside the checkpoint (``decoding.decoder``) if
present, else in the file ``<checkpoint>.decoder.pt``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import torch

from text_recognizer.codec import Codec
from text_recognizer.ctc.ngram import estimate_kneser_ney, format_arpa
from text_recognizer.ctc.word_lm import DEFAULT_MIN_COUNT, DEFAULT_WORD_ORDER, build_word_arpa, read_lexicon
from text_recognizer.data.running_text import read_running_text
from text_recognizer.readings import SECTION, check_three_readings

SPACE_TOKEN = "|"
BUNDLE_KIND = "text_recognizer.decoder"
BUNDLE_VERSION = 1
#: KenLM inside flashlight-text is compiled for orders up to 6.
MAX_ORDER = 6
#: The bundle's language models: the character LM of the search and the optional word LM that re-scores.
LM_KEYS = ("lm", "word_lm")
#: The default training text of the bundled model's LM (IAM train + train_extra, never val), in the
#: development data folder next to the repository (``../shared/data``).
_SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "iam"
DEFAULT_TEXT = (_SHARED / "train", _SHARED / "train_extra")


class LanguageModelError(ValueError):
    """A language model or decoder bundle is missing, corrupt or built for another alphabet."""


def read_texts(sources: Sequence[str | Path]) -> list[str]:
    """Lines of text from ``.txt`` files and dataset folders (labels detokenised to natural spacing)."""
    from text_recognizer.data.folder import read_labels
    from text_recognizer.data.tokenization import detokenize

    if isinstance(sources, (str, Path)) or not sources:
        raise ValueError(f"sources must be a non-empty list of files or folders, got {sources!r}")
    lines: list[str] = []
    for source in map(Path, sources):
        if source.is_dir() or source.name == "labels.tsv":
            folder = source if source.is_dir() else source.parent
            lines.extend(detokenize(record.text) for record in read_labels(folder))
        elif source.is_file():
            text = source.read_text(encoding="utf-8")
            lines.extend(line.strip() for line in text.splitlines())
        else:
            raise ValueError(f"text source {source} is neither a file nor a folder")
    lines = [" ".join(line.split()) for line in lines]
    return [line for line in lines if line]


def char_tokens(text: str) -> list[str]:
    """One LM token per character, spaces as ``|``."""
    return [SPACE_TOKEN if c == " " else c for c in text]


def build_arpa(lines: Iterable[str], codec: Codec, order: int = MAX_ORDER) -> str:
    """Estimate a character n-gram model (interpolated Kneser-Ney) and return its ARPA text.

    Lines with characters outside ``codec`` are dropped (they could never be decoded anyway).
    """
    if not isinstance(order, int) or isinstance(order, bool) or not 1 <= order <= MAX_ORDER:
        raise ValueError(f"order must be an integer in [1, {MAX_ORDER}] (KenLM's limit), got {order!r}")
    if SPACE_TOKEN in codec.charset:
        raise ValueError(f"the codec's charset uses {SPACE_TOKEN!r}, which the LM reserves for spaces")
    sentences = [char_tokens(line) for line in lines if line and not codec.unknown_characters(line)]
    if not sentences:
        raise ValueError("no usable text: every line was empty or had characters outside the model's charset")
    return format_arpa(estimate_kneser_ney(sentences, order))


def make_bundle(arpa: str | None, codec: Codec, order: int | None, source: str, beam: dict | None = None,
                calibration: dict | None = None, word_lm: dict | None = None) -> dict:
    """A decoder bundle of plain types (see the module docstring); ``word_lm`` from ``word_lm_entry``."""
    lm = None
    if arpa is not None:
        lm = {"unit": "char", "order": order, "space_token": SPACE_TOKEN, "source": source, **_packed(arpa)}
    return {"kind": BUNDLE_KIND, "version": BUNDLE_VERSION, "charset": codec.charset, "lm": lm,
            "beam": dict(beam or {}), "calibration": calibration, "word_lm": word_lm}


def word_lm_entry(arpa: str, order: int, min_count: int, source: str, lexicon: Sequence[str] | None = None,
                  lexicon_source: str = "") -> dict:
    """The bundle's optional word LM (``word_lm.py``), stored like the character LM, with its optional
    lexicon of known words (one per line, gzipped)."""
    entry = {"unit": "word", "order": order, "min_count": min_count, "source": source, **_packed(arpa)}
    if lexicon:
        packed = _packed("\n".join(lexicon))
        entry.update(lexicon_source=lexicon_source, lexicon_sha256=packed["sha256"], lexicon_gz=packed["arpa_gz"])
    return entry


def _packed(text: str) -> dict:
    data = text.encode("utf-8")
    return {"sha256": hashlib.sha256(data).hexdigest(), "arpa_gz": gzip.compress(data, mtime=0)}


#: Gzipped texts inside a bundle's LM entries, and the key of each one's checksum.
_PACKED = {"arpa_gz": "sha256", "lexicon_gz": "lexicon_sha256"}


def bundle_path(checkpoint: str | Path) -> Path:
    """Where the decoder bundle of ``checkpoint`` lives: ``best.pt`` -> ``best.decoder.pt``."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(checkpoint.stem + ".decoder.pt")


def save_bundle(bundle: dict, path: str | Path) -> Path:
    """Write ``bundle``; the gzipped ARPA goes in as a uint8 tensor (see ``_arpa_as_tensor``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(_arpa_as_tensor(bundle), path)
    return path


def _arpa_as_tensor(bundle: dict) -> dict:
    """``bundle`` with its LMs' ``arpa_gz`` bytes as uint8 tensors, stored raw in the file.

    Why: ``torch.save`` pickles with protocol 2, which writes ``bytes`` as latin-1 text in UTF-8,
    so gzipped data (half its bytes >= 0x80) grows by half on disk (7.8 MiB of LM -> 11.9 MiB),
    and ``weights_only`` loading refuses the protocols that write bytes as they are. A tensor is
    stored byte for byte. ``check_bundle`` turns it back into bytes, so callers only see bytes.
    """
    out = dict(bundle)
    for key in LM_KEYS:
        lm = bundle.get(key)
        if lm is not None:
            out[key] = {**lm, **{name: torch.frombuffer(bytearray(lm[name]), dtype=torch.uint8)
                                 for name in _PACKED if isinstance(lm.get(name), bytes)}}
    return out


def load_bundle(path: str | Path, codec: Codec | None = None) -> dict:
    """Read and check a decoder bundle; ``LanguageModelError`` names the file and the problem."""
    path = Path(path)
    if not path.is_file():
        raise LanguageModelError(f"decoder bundle {path} does not exist")
    try:
        bundle = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types for corrupt files
        raise LanguageModelError(f"decoder bundle {path} could not be read (corrupt?): {error}") from error
    return check_bundle(bundle, codec, str(path))


def check_bundle(bundle: object, codec: Codec | None, where: str) -> dict:
    """Validate a bundle's shape, its ARPA checksum and its alphabet against ``codec``."""
    if not isinstance(bundle, dict) or bundle.get("kind") != BUNDLE_KIND:
        raise LanguageModelError(f"{where} is not a text_recognizer decoder bundle")
    if bundle.get("version") != BUNDLE_VERSION:
        raise LanguageModelError(
            f"{where} has bundle version {bundle.get('version')}, this version reads {BUNDLE_VERSION}"
        )
    if codec is not None and bundle.get("charset") != codec.charset:
        raise LanguageModelError(
            f"{where} was built for the alphabet {bundle.get('charset')!r}, but the model's is {codec.charset!r}"
        )
    if SECTION in bundle:
        try:
            check_three_readings(bundle[SECTION], where)
        except ValueError as error:
            raise LanguageModelError(str(error)) from error
    for key in LM_KEYS:
        lm = bundle.get(key)
        if isinstance(lm, dict):
            lm = {**lm, **{name: _stored_bytes(lm[name], where) for name in _PACKED
                           if isinstance(lm.get(name), torch.Tensor)}}
            bundle = {**bundle, key: lm}
        if lm is None:
            continue
        for name, checksum in _PACKED.items():
            if name == "lexicon_gz" and name not in lm:
                continue  # a word LM without a lexicon
            what = {"arpa_gz": "word language model" if key == "word_lm" else "language model",
                    "lexicon_gz": "lexicon"}[name]
            try:
                data = gzip.decompress(lm[name])
            except (OSError, EOFError, KeyError, TypeError) as error:
                raise LanguageModelError(f"{where}: the {what} is corrupt ({error})") from error
            if hashlib.sha256(data).hexdigest() != lm.get(checksum):
                raise LanguageModelError(f"{where}: the {what}'s checksum does not match (corrupt file)")
    return bundle


def decoder_bundle_for(checkpoint: str | Path, embedded: dict | None, codec: Codec) -> dict | None:
    """The decoder bundle travelling with a checkpoint, or ``None``.

    ``embedded`` is the checkpoint's own decoder payload (``Checkpoint.decoding.decoder``; ``{}``
    means none): used when present, else the file ``<checkpoint>.decoder.pt`` next to it.
    """
    if embedded:
        return check_bundle(embedded, codec, f"checkpoint {checkpoint}")
    path = bundle_path(checkpoint)
    return load_bundle(path, codec) if path.is_file() else None


def choose_bundle(choice: str | Path | bool | None, default: Callable[[], dict | None], codec: Codec,
                  model_sha256: Callable[[], str | None], model: str) -> dict | None:
    """The decoder bundle a recognizer uses, the one rule for PyTorch and ONNX Runtime alike.

    ``choice``: ``False`` for none (greedy decoding, raw confidences), a bundle path, or ``None`` for
    ``default()`` (the bundle that travels with the model). A bundle records the sha256 of the model it
    was tuned and calibrated for; when ``model_sha256()`` differs, a warning says so, because its
    confidences and LM weights would be off for ``model``.
    """
    if choice is False:
        return None
    bundle = load_bundle(choice, codec) if choice is not None else default()
    tuned_for = (bundle or {}).get("model_sha256")
    if tuned_for and tuned_for != model_sha256():
        warnings.warn(f"the decoder bundle of {model} was tuned and calibrated for another model: confidences and "
                      "LM settings may be off; rerun benchmarks/decoding.py (see README, Decoding)", stacklevel=3)
    return bundle


def _stored_bytes(stored: bytes | torch.Tensor, where: str) -> bytes:
    """The gzipped ARPA as bytes, from a loaded bundle (bytes) or a stored one (a uint8 tensor)."""
    if not isinstance(stored, torch.Tensor):
        return stored
    if stored.dtype != torch.uint8 or stored.dim() != 1:
        raise LanguageModelError(f"{where}: the language model is corrupt (a {stored.dtype} tensor "
                                 f"of shape {tuple(stored.shape)}, not bytes)")
    return stored.numpy().tobytes()


def arpa_text(bundle: dict, key: str = "lm") -> str | None:
    """The ARPA text of the bundle's character LM (``key="word_lm"``: its word LM), ``None`` if it has
    none; reads a bundle as loaded or as stored."""
    if key not in LM_KEYS:
        raise ValueError(f"key must be one of {LM_KEYS}, got {key!r}")
    lm = bundle.get(key)
    return None if lm is None else gzip.decompress(_stored_bytes(lm["arpa_gz"], "decoder bundle")).decode("utf-8")


def lexicon_words(bundle: dict) -> list[str]:
    """The known words of the bundle's word LM (empty without a word LM or lexicon)."""
    lm = bundle.get("word_lm") or {}
    if "lexicon_gz" not in lm:
        return []
    return gzip.decompress(_stored_bytes(lm["lexicon_gz"], "decoder bundle")).decode("utf-8").split("\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m text_recognizer.ctc.lm",
        description="Build a character n-gram language model from text and store it with a checkpoint.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("texts", nargs="*", type=Path, default=list(DEFAULT_TEXT),
                        help=".txt files (one line each) or dataset folders (labels.tsv, detokenised); "
                             "default: IAM train + train_extra. Never validation or test text")
    parser.add_argument("--running-text", nargs="+", type=Path, default=[], metavar="TXT_OR_FOLDER",
                        help="also running text (books, speeches: .txt files or folders of them), cut into "
                             "pieces the length of a written line (text_recognizer/data/running_text.py)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the piece lengths of --running-text")
    parser.add_argument("--checkpoint", type=Path, default=None,
                        help="model whose alphabet the LM uses; the bundle goes next to it "
                             "(default: the bundled model)")
    parser.add_argument("--order", type=int, default=MAX_ORDER, help=f"n-gram order, 1..{MAX_ORDER}")
    parser.add_argument("--word-order", type=int, default=DEFAULT_WORD_ORDER,
                        help="order of the word LM that re-scores the beam's readings (word_lm.py); 0: none")
    parser.add_argument("--word-min-count", type=int, default=DEFAULT_MIN_COUNT,
                        help="word n-grams (above single words) seen fewer times are pruned")
    parser.add_argument("--lexicon", nargs="+", type=Path, default=[], metavar="WORD_LIST",
                        help="word lists (first field of each line: a pronouncing dictionary works) whose words "
                             "the word LM's re-scoring treats as known (and offers as corrections)")
    parser.add_argument("--out", type=Path, default=None, help="bundle path (default: <checkpoint>.decoder.pt)")
    parser.add_argument("--arpa", type=Path, default=None, help="also write the plain ARPA file here")
    args = parser.parse_args(argv)
    from text_recognizer.checkpoint import CheckpointError, load_checkpoint
    from text_recognizer.recognizer import default_checkpoint

    try:
        checkpoint = args.checkpoint or default_checkpoint()
        codec = load_checkpoint(checkpoint).codec
        lines = read_texts(args.texts)
        if args.running_text:
            lines += read_running_text(args.running_text, seed=args.seed)
        arpa = build_arpa(lines, codec, args.order)
        source = ", ".join(map(str, [*args.texts, *args.running_text]))
        if args.word_order < 0:
            raise ValueError(f"--word-order must be >= 0, got {args.word_order}")
        word_lm = None
        if args.word_order:
            word_arpa = build_word_arpa(lines, args.word_order, args.word_min_count)
            lexicon = read_lexicon(args.lexicon) if args.lexicon else None
            word_lm = word_lm_entry(word_arpa, args.word_order, args.word_min_count, source, lexicon,
                                    ", ".join(map(str, args.lexicon)))
        elif args.lexicon:
            raise ValueError("--lexicon belongs to the word LM: it needs --word-order >= 1")
        out = args.out or bundle_path(checkpoint)
        previous = load_bundle(out, codec) if out.is_file() else {}
        bundle = make_bundle(arpa, codec, args.order, source=source, beam=previous.get("beam"),
                             calibration=previous.get("calibration"), word_lm=word_lm)
        save_bundle(bundle, out)
        if args.arpa:
            args.arpa.write_text(arpa, encoding="utf-8")
    except (CheckpointError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    words = (f", order-{args.word_order} word LM ({len(word_lm['arpa_gz']) / 2**20:.1f} MiB)" if word_lm else "")
    if word_lm and "lexicon_gz" in word_lm:
        words += f" and a lexicon of {len(lexicon)} words ({len(word_lm['lexicon_gz']) / 2**20:.1f} MiB)"
    print(f"{len(lines)} lines -> order-{args.order} character LM ({len(bundle['lm']['arpa_gz']) / 2**20:.1f} "
          f"MiB gzipped){words} in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
