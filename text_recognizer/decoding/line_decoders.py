"""One model's line decoders, per decoder, readings per line and language, and the decoding of lines in a
chosen language or in the one ``auto`` picks.

Why one place: ``LineRecognizer`` (PyTorch) and ``OnnxLineRecognizer`` (ONNX Runtime) must decode alike, and a
beam ``LineDecoder`` loads its language models (seconds, and memory), so each is built once, when first asked
for, and kept.

What a language means (``language_for``): only beam search with language models reads differently per language.
Greedy decoding, and beam search without LMs (``use_lm=False``, or a model without bundles when no language is
named), read alike in every language: they decode with the primary bundle's settings and calibration, and their
lines carry no ``language``. Still, a named language must be one the model has a bundle for (``LanguageError`` naming
those it has) whatever the decoder: a user who asks for German and reads greedily is told the model has no German,
as with beam search, rather than getting a reading that silently ignored the request. For beam search, ``auto``
picks per line, or once for all the lines of one call with ``together=True`` (a page), by
``language.choose_language`` on the lines' greedy readings.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace

import torch

from text_recognizer.codec import Codec
from text_recognizer.decoding.bundle_set import BundleSet
from text_recognizer.decoding.decoder import Geometry, LineDecoder
from text_recognizer.decoding.greedy import DecodedLine, collapse
from text_recognizer.decoding.language import AUTO, choose_language, parse_language
from text_recognizer.decoding.names import DECODERS
from text_recognizer.decoding.readings import available_readings, bundle_for_readings

#: One line to decode: its valid ``(T, C)`` log-probabilities and the frame -> pixel mapping of its image.
Item = tuple[torch.Tensor, Geometry]


class LanguageDecoders:
    """The ``LineDecoder``s of one model with ``codec`` and ``bundles``; ``decoder``, ``readings`` and ``language``
    are its defaults (``language=None``: the bundles' default, see ``bundle_set.py``), ``use_lm=False`` searches
    without LMs, ``beam_options`` override the tuned ``BeamOptions`` of the default decoder and readings."""

    def __init__(self, codec: Codec, bundles: BundleSet, decoder: str = "greedy", readings: int = 1,
                 language: str | None = None, use_lm: bool = True, beam_options: dict | None = None):
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
        self.codec, self.bundles, self.use_lm = codec, bundles, use_lm
        self.name, self.readings = decoder, readings
        self.requested = parse_language(language)
        self._overrides = dict(beam_options or {})
        where = bundles.where
        # language (None: the primary bundle's) -> readings -> (bundle to decode with, shift of the copies)
        self._views = {key: {r: bundle_for_readings(bundle, r, where) for r in available_readings(bundle)}
                       for key, bundle in ((None, bundles.primary), *bundles.bundles.items())}
        self._decoders: dict[tuple[str, int, str | None], LineDecoder] = {}
        self._lock = threading.Lock()
        # the defaults are built now, so bad options, a missing flashlight-text or an unavailable language or
        # readings count fail when the recognizer is made, not on its first line
        self.language = self.language_for(decoder, None)
        self.view(readings, self.language)
        self.default = self.get(decoder, readings, self.concrete(self.language))
        if self.language == AUTO:
            for other in self.bundles.bundles:
                self.get(decoder, readings, other)

    def language_for(self, name: str, language: str | None) -> str | None:
        """What decoding with ``name`` in ``language`` (``None``: this one's default) means: a language of the
        bundles, ``"auto"``, or ``None`` where the language does not matter (see the module docstring).
        ``LanguageError`` for a language beam search cannot read with."""
        if name not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {name!r}")
        language = self.requested if language is None else parse_language(language)
        if language is not None:
            self.bundles.resolve(language)  # a language the model cannot read is refused by every decoder alike
        if name != "beam" or not self.use_lm:
            return None
        return self.bundles.resolve(language)

    def concrete(self, language: str | None) -> str | None:
        """The bundle a decoder is built with: ``auto`` builds the primary language's first."""
        return self.bundles.primary_language if language == AUTO else language

    def view(self, readings: int, language: str | None) -> tuple[dict | None, int]:
        """The bundle and copy shift for ``readings`` in ``language`` (``auto``: the primary's, whose shift the
        model's copies are made with before a language is chosen; every bundle is checked for ``readings``);
        a clear ``ValueError`` for an unavailable count."""
        for key in (self.bundles.languages if language == AUTO else ()):
            self.view(readings, key)
        key = self.concrete(language)
        if readings in self._views[key]:
            return self._views[key][readings]
        bundle = self.bundles.primary if key is None else self.bundles.bundles[key]
        return bundle_for_readings(bundle, readings, self.bundles.where)  # raises, saying why

    def readings_available(self, language: str | None = None) -> tuple[int, ...]:
        """Readings per line decodable in ``language`` (``None``: with the primary bundle; ``auto``: in all)."""
        keys = self.bundles.languages if language == AUTO else (language,)
        return tuple(r for r in self._views[None] if all(r in self._views.get(key, {}) for key in keys))

    def get(self, name: str, readings: int, language: str | None) -> LineDecoder:
        """The decoder ``name`` for ``readings`` with the bundle of ``language`` (a code of the bundles; ``None``:
        the primary bundle), built once."""
        key = (name, readings, None if name != "beam" else language)
        with self._lock:
            if key not in self._decoders:
                bundle, _ = self.view(readings, key[2])
                overrides = self._overrides if (name, readings) == (self.name, self.readings) else {}
                self._decoders[key] = LineDecoder(self.codec, name, bundle, use_lm=self.use_lm, **overrides)
            return self._decoders[key]

    def decode(self, items: Sequence[Item], name: str, readings: int, language: str | None,
               together: bool = False) -> list[DecodedLine]:
        """Decode ``items`` with ``name`` and ``readings`` in ``language`` as ``language_for`` gave it; ``auto``
        chooses per line, or once for all of them with ``together``. Lines read with a language's models carry
        its code."""
        if language is None:
            decoder = self.get(name, readings, None)
            return [decoder.decode(log_probs, geometry) for log_probs, geometry in items]
        if language == AUTO:
            chosen = self.choose([log_probs for log_probs, _ in items], name, readings, together)
        else:
            chosen = [language] * len(items)
        return [replace(self.get(name, readings, code).decode(log_probs, geometry), language=code)
                for code, (log_probs, geometry) in zip(chosen, items)]

    def choose(self, log_probs: Sequence[torch.Tensor], name: str, readings: int, together: bool) -> list[str]:
        """The ``auto`` language of each line of ``(T, C)`` log-probabilities (one for all with ``together``):
        its greedy reading scored with each language's character LM (``language.choose_language``)."""
        decoders = {code: self.get(name, readings, code) for code in self.bundles.bundles}  # primary first
        scorers = {code: decoder.beam.char_log10 for code, decoder in decoders.items() if decoder.has_lm}
        if not scorers:  # bundles without character LMs: nothing to tell the languages apart
            return [self.bundles.primary_language] * len(log_probs)  # type: ignore[list-item]
        texts = [self.codec.decode(collapse(lp.argmax(-1).tolist())) for lp in log_probs]  # the greedy readings
        if together:
            return [choose_language(texts, scorers)] * len(texts)
        return [choose_language([text], scorers) for text in texts]
