"""The decoder bundle: a model's language models, tuned beam settings and confidence calibration.

The bundle is a plain-types dict (``torch.load(..., weights_only=True)`` reads it): the gzipped ARPA
texts of the character LM and the optional word LM (stored as uint8 tensors, see ``save_bundle``),
the word LM's optional lexicon, the alphabet they were built for, the beam settings tuned for the
model, the confidence calibration and, optionally, a second set of both for reading each line three
times (``three_readings``, ``text_recognizer.decoding.readings``). ``decoder_bundle_for`` is the one
place that finds a checkpoint's own bundle: inside the checkpoint (``decoding.decoder``) if present, else
in the file ``<checkpoint>.decoder.pt``. The LMs are built by ``text_recognizer.decoding.lm_builder``
(command line: ``python -m training.decoder.build_lm``).

A bundle's LMs are of one language: its ``language`` field, an ISO 639-1 code (``"en"``, ``"fr"``). Bundles
written before the field existed have none and are English (``bundle_language``). A model reads other
languages with more bundles beside it, ``<checkpoint stem>.<language>.decoder.pt`` (``best.fr.decoder.pt``
beside ``best.pt``; ``language_bundle_paths`` finds them, ``bundle_set.py`` loads them).
"""

from __future__ import annotations

import gzip
import hashlib
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from text_recognizer.codec import Codec
from text_recognizer.decoding.language import LanguageError, check_language, described, missing_letters
from text_recognizer.decoding.readings import SECTION, check_three_readings

#: The LM token for a space (ARPA tokens cannot be blank) ...
SPACE_TOKEN = "|"
#: ... or, for an alphabet that holds ``|`` itself (the Latin alphabet), this one.
ALTERNATE_SPACE_TOKEN = "\u2581"  # ▁ lower one eighth block


def space_token_for(charset: str) -> str:
    """The LM token standing for a space with ``charset``: ``|`` unless the alphabet writes ``|``, then ``▁``.

    Why a rule on the alphabet rather than a field: the search (beam.py) and the LM builder derive the same token
    from the model's alphabet, and every bundle built before the rule (IAM alphabets, no ``|``) keeps ``|``.
    """
    for token in (SPACE_TOKEN, ALTERNATE_SPACE_TOKEN):
        if token not in charset:
            return token
    raise ValueError(f"the alphabet holds both {SPACE_TOKEN!r} and {ALTERNATE_SPACE_TOKEN!r}; the LM needs one of "
                     "them for spaces")
BUNDLE_KIND = "text_recognizer.decoder"
BUNDLE_VERSION = 1
#: The bundle's language models: the character LM of the search and the optional word LM that re-scores.
LM_KEYS = ("lm", "word_lm")
#: The language of a bundle without a ``language`` field (every bundle written before it existed).
DEFAULT_LANGUAGE = "en"


class LanguageModelError(ValueError):
    """A language model or decoder bundle is missing, corrupt or built for another alphabet."""


def make_bundle(arpa: str | None, codec: Codec, order: int | None, source: str, beam: dict | None = None,
                calibration: dict | None = None, word_lm: dict | None = None, language: str = DEFAULT_LANGUAGE) -> dict:
    """A decoder bundle of plain types (see the module docstring); ``word_lm`` from ``word_lm_entry``;
    ``language``: the ISO 639-1 code of the LMs' text."""
    lm = None
    if arpa is not None:
        space = space_token_for(codec.charset)
        lm = {"unit": "char", "order": order, "space_token": space, "source": source, **_packed(arpa)}
    return {"kind": BUNDLE_KIND, "version": BUNDLE_VERSION, "charset": codec.charset, "lm": lm,
            "beam": dict(beam or {}), "calibration": calibration, "word_lm": word_lm,
            "language": check_language(language)}


def bundle_language(bundle: dict) -> str:
    """The ISO 639-1 code of the bundle's language models; a bundle without the field is English."""
    return bundle.get("language") or DEFAULT_LANGUAGE


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


def bundle_path(checkpoint: str | Path, language: str | None = None) -> Path:
    """Where the decoder bundle of ``checkpoint`` lives: ``best.pt`` -> ``best.decoder.pt``; with a
    ``language``, where that language's lives: ``best.pt``, ``"fr"`` -> ``best.fr.decoder.pt``."""
    checkpoint = Path(checkpoint)
    infix = "" if language is None else f".{check_language(language)}"
    return checkpoint.with_name(f"{checkpoint.stem}{infix}.decoder.pt")


def language_bundle_paths(checkpoint: str | Path) -> dict[str, Path]:
    """The language -> file of the per-language bundles beside ``checkpoint`` (``<stem>.<xx>.decoder.pt``),
    sorted by language; the plain ``<stem>.decoder.pt`` is not among them."""
    checkpoint = Path(checkpoint)
    pattern = re.compile(re.escape(checkpoint.stem) + r"\.([a-z]{2})\.decoder\.pt")
    found = {}
    if checkpoint.parent.is_dir():
        for path in checkpoint.parent.iterdir():
            match = pattern.fullmatch(path.name)
            if match and path.is_file():
                found[match.group(1)] = path
    return dict(sorted(found.items()))


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
    if bundle.get("language") is not None:
        try:
            check_language(bundle["language"])
        except LanguageError as error:
            raise LanguageModelError(f"{where}: its language field is wrong: {error}") from error
    if codec is not None:
        problem = alphabet_problem(bundle, codec)
        if problem:
            raise LanguageModelError(f"{where}: {problem}")
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


def alphabet_problem(bundle: dict, codec: Codec) -> str | None:
    """Why a model with ``codec`` cannot decode with ``bundle`` (``None``: it can).

    A bundle is built for one alphabet (its ``charset``, the one its LMs' tokens index): another model's
    alphabet does not fit it. And a model whose alphabet lacks its language's letters cannot write that
    language, whatever bundle it is given (an IAM-only model has no accented letters for French).
    """
    language = bundle_language(bundle)
    lacking = missing_letters(language, codec.charset)
    charset = bundle.get("charset")
    if lacking:
        other = "" if charset == codec.charset else (f"; the bundle was built for another alphabet "
                                                     f"({len(charset or '')} characters, the model's has "
                                                     f"{len(codec.charset)})")
        return f"the model's alphabet cannot write {described(language)}: it lacks {lacking!r}{other}"
    if charset != codec.charset:
        return f"the bundle was built for the alphabet {charset!r}, but the model's is {codec.charset!r}"
    return None


def decoder_bundle_for(checkpoint: str | Path, embedded: dict | None, codec: Codec) -> dict | None:
    """The decoder bundle travelling with a checkpoint, or ``None``.

    ``embedded`` is the checkpoint's own decoder payload (``Checkpoint.decoding.decoder``; ``{}``
    means none): used when present, else the file ``<checkpoint>.decoder.pt`` next to it.
    """
    if embedded:
        return check_bundle(embedded, codec, f"checkpoint {checkpoint}")
    path = bundle_path(checkpoint)
    return load_bundle(path, codec) if path.is_file() else None


def warn_if_tuned_for_another(bundle: dict, model_sha256: Callable[[], str | None], model: str) -> None:
    """Warn when ``bundle`` was tuned and calibrated for another model than ``model``.

    A bundle records the sha256 of the model it was tuned for; with other weights its confidences and LM
    weights would be off, which still reads, so it is a warning, not an error.
    """
    tuned_for = bundle.get("model_sha256")
    if tuned_for and tuned_for != model_sha256():
        warnings.warn(f"the decoder bundle of {model} was tuned and calibrated for another model: confidences and "
                      "LM settings may be off; re-tune it: python -m training.decoder tune (docs/decoding.md)",
                      stacklevel=4)


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


