"""The decoder bundles of one model, one per language: which it has, which it can use, and which one a
requested language means. The one rule for PyTorch and ONNX Runtime alike.

Where they come from (``BundleSet.for_model``):

- ``choice=False``: none (greedy decoding, raw confidences).
- ``choice=<path>`` (``--decoder-bundle``): that bundle alone, whatever its language.
- ``choice=None``: the model's own. Its *primary* bundle, the one it always had: inside the checkpoint
  (``decoding.decoder``) or ``<stem>.decoder.pt`` beside it; and one more per language beside it,
  ``<stem>.<xx>.decoder.pt`` (``default.fr.decoder.pt`` beside ``default.pt``), whose ``language`` field must
  say the language its name does. Two bundles for one language are an error.

A bundle the model cannot use (built for another alphabet, or for a language its alphabet cannot write,
``bundle.alphabet_problem``) is an error at once when it is the primary or the given one. A per-language one
is set aside with the reason instead: the model still reads its other languages, and asking for that one is
the error, so an old IAM-only model with a French bundle beside it reads English and says why it cannot
read French.

Defaults (``default_language``): the model's own bundle's language, also when there are several: ``auto``
(``language.py``: the language whose character LM suits each line's greedy reading best) is asked for, not
assumed, because on noisy readings of hard hands it picked the wrong language often enough to cost English
readers (Stanford 1905: 31.3% with ``en``, 35.5% with ``auto`` before its margin); with none, no language
(beam search without language models). The primary bundle is also the one greedy decoding takes its
calibration from (the model's, whatever the language) and the one an export writes as ``<stem>.decoder.pt``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from text_recognizer.codec import Codec
from text_recognizer.decoding.bundle import (
    LanguageModelError,
    alphabet_problem,
    bundle_language,
    bundle_path,
    decoder_bundle_for,
    language_bundle_paths,
    load_bundle,
    warn_if_tuned_for_another,
)
from text_recognizer.decoding.language import AUTO, LanguageError, described, parse_language


@dataclass(frozen=True)
class BundleSet:
    """``bundles``: language -> bundle the model can use, the primary one first; ``unusable``: language -> why
    the model cannot use the bundle it has for it; ``where``: the model, for messages."""

    bundles: Mapping[str, dict] = field(default_factory=dict)
    unusable: Mapping[str, str] = field(default_factory=dict)
    where: str = "the model"

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages this model can beam-decode with language models, sorted."""
        return tuple(sorted(self.bundles))

    @property
    def primary_language(self) -> str | None:
        return next(iter(self.bundles), None)

    @property
    def primary(self) -> dict | None:
        """The model's own bundle (see the module docstring), ``None`` without bundles."""
        language = self.primary_language
        return None if language is None else self.bundles[language]

    @property
    def default_language(self) -> str | None:
        """The model's own bundle's language (see the module docstring), ``None`` without bundles."""
        return self.primary_language

    def describe(self) -> str:
        """``"en (English), fr (French)"``: what this model reads, for messages."""
        return ", ".join(map(described, self.languages)) or "no language (it has no decoder bundle)"

    def resolve(self, language: str | None) -> str | None:
        """The language a request means: one of ``bundles``, ``"auto"`` (only with several to choose from) or
        ``None`` (no bundle at all: beam search without language models). ``None`` asks for the default.
        ``LanguageError`` for a language the model has no bundle for or cannot write, naming what it reads."""
        language = parse_language(language)
        if language is None:
            return self.default_language
        if language == AUTO:
            return AUTO if len(self.bundles) > 1 else self.primary_language
        if language in self.bundles:
            return language
        if language in self.unusable:
            raise LanguageError(f"cannot read {described(language)} with {self.where}: {self.unusable[language]}. "
                                f"It reads {self.describe()}")
        raise LanguageError(f"{self.where} has no decoder bundle for {described(language)}. It reads "
                            f"{self.describe()}")

    @classmethod
    def for_model(cls, choice: str | Path | bool | None, path: str | Path, embedded: dict | None, codec: Codec,
                  model_sha256: Callable[[], str | None]) -> BundleSet:
        """The bundles of the model in ``path`` (see the module docstring). ``embedded``: the checkpoint's own
        bundle (``{}`` or ``None``: none); ``model_sha256()``: the model's, checked against what each bundle
        was tuned for (a warning when they differ). ``LanguageModelError`` names a bad file and its problem."""
        where = str(path)
        sha256 = functools.cache(model_sha256)
        if choice is False:
            return cls(where=where)
        if choice is not None:
            primary, primary_from = load_bundle(choice, codec), str(choice)
        else:
            primary = decoder_bundle_for(path, embedded, codec)
            primary_from = f"checkpoint {path}" if embedded else str(bundle_path(path))
        bundles: dict[str, dict] = {}
        if primary is not None:
            bundles[bundle_language(primary)] = primary
        unusable: dict[str, str] = {}
        for language, file in (language_bundle_paths(path) if choice is None else {}).items():
            bundle = load_bundle(file)  # its shape and checksums; the alphabet is checked below
            if bundle_language(bundle) != language:
                raise LanguageModelError(f"{file} is named for {described(language)}, but its language models are "
                                         f"{described(bundle_language(bundle))} (a bundle without a language field "
                                         f"is English); rename it, or rebuild it with language={language!r}")
            if language in bundles:
                raise LanguageModelError(f"two decoder bundles for {described(language)}: {primary_from} and "
                                         f"{file}; keep one")
            problem = alphabet_problem(bundle, codec)
            if problem:
                unusable[language] = f"{problem} (in {file})"
            else:
                bundles[language] = bundle
        for bundle in bundles.values():
            warn_if_tuned_for_another(bundle, sha256, where)
        return cls(bundles, unusable, where)
