"""A model's decoder bundles carried to a fine-tuned model, the bundle of the user's language extended with
the user's text.

Why: a fine-tuned model that decodes with language models built from a user's few hundred lines alone has
forgotten everything its parent's models knew; measured on 149 French lines of 12 Copiste writers, its beam
read worse (15.4%) than the parent's French beam (11.8%). So every bundle of the parent travels, and the
user's lines and texts are mixed *into* the language models of their language (``ngram.interpolate``: the
static linear interpolation of the parent's and the user's n-gram models), never in place of them. The
user's share is chosen on the held-out lines (the one whose mixture gives them the highest log-probability),
the word LM is mixed the same way and its lexicon gains the user's words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from text_recognizer.codec import Codec
from text_recognizer.decoding.bundle import (
    arpa_text,
    bundle_language,
    lexicon_words,
    make_bundle,
    space_token_for,
    word_lm_entry,
)
from text_recognizer.decoding.language import choose_language
from text_recognizer.decoding.lm_builder import char_tokens
from text_recognizer.decoding.ngram import (
    BOS,
    EOS,
    NgramTable,
    estimate_kneser_ney,
    format_arpa,
    interpolate,
    parse_arpa,
    query,
)
from text_recognizer.decoding.word_lm import words

#: The user's shares tried (the parent keeps the rest); the held-out lines choose.
USER_WEIGHTS = (0.05, 0.1, 0.2, 0.3, 0.5)
#: The share when there are no held-out lines to choose with.
DEFAULT_USER_WEIGHT = 0.2


def _space(bundle: dict) -> str:
    return (bundle.get("lm") or {}).get("space_token") or space_token_for(bundle["charset"])


def _retokened(tables: list[NgramTable], old: str, new: str) -> list[NgramTable]:
    return [{tuple(new if token == old else token for token in gram): value for gram, value in table.items()}
            for table in tables]


def rebased(bundle: dict, codec: Codec) -> dict:
    """``bundle`` for a model whose alphabet grew by new characters: the same language models (the new
    characters are unknown to them until a user's text is mixed in), the model's alphabet.

    The space token is re-chosen for the new alphabet as ``make_bundle`` would (its ARPA tokens renamed when it
    changes). An alphabet that lost characters of the bundle's is refused: its LMs would index the wrong ones.
    """
    if bundle.get("charset") == codec.charset or bundle.get("lm") is None:
        return {**bundle, "charset": codec.charset}
    lost = "".join(sorted(set(bundle["charset"]) - set(codec.charset)))
    if lost:
        raise ValueError(f"the model's alphabet lacks {lost!r} of the bundle's: its language models do not fit it")
    old, new = _space(bundle), space_token_for(codec.charset)
    lm = dict(bundle["lm"])
    if old != new:
        arpa = format_arpa(_retokened(parse_arpa(arpa_text(bundle)), old, new))
        lm = dict(make_bundle(arpa, codec, lm["order"], lm["source"])["lm"])
    return {**bundle, "charset": codec.charset, "lm": lm}


def _token_probs(tables: Sequence[NgramTable], sentences: Sequence[Sequence[str]],
                 unseen_as_unk: bool = False) -> list[float]:
    """Each token's probability (``</s>`` included) under ``tables``; for a token the model never saw 0 (its
    share of a mixture, ``interpolate``'s rule), or with ``unseen_as_unk`` its ``<unk>`` probability."""
    order = len(tables)
    out = []
    for sentence in sentences:
        history = [BOS]
        for token in [*sentence, EOS]:
            gram = tuple(history[-(order - 1):] if order > 1 else []) + (token,)
            out.append(10 ** query(tables, gram) if unseen_as_unk or (token,) in tables[0] else 0.0)
            history.append(token)
    return out


def choose_weight(base: Sequence[NgramTable], user: Sequence[NgramTable], held_out: Sequence[Sequence[str]],
                  weights: Sequence[float] = USER_WEIGHTS) -> tuple[float, dict[float, float]]:
    """The user's share whose mixture gives the held-out token sequences the highest mean log10-probability per
    token (0 too: the parent's model alone), and that rate for every share tried.

    Why the held-out lines: they are the user's own writing that no model has seen, so they say how much of the
    user's text helps without rewarding a model for repeating its training lines."""
    if not held_out:
        return DEFAULT_USER_WEIGHT, {}
    p_base, p_user = _token_probs(base, held_out), _token_probs(user, held_out)
    rates = {}
    for weight in (0.0, *weights):
        total = sum(math.log10(max((1 - weight) * a + weight * b, 1e-99)) for a, b in zip(p_base, p_user))
        rates[weight] = total / len(p_base)
    best = max(rates, key=lambda w: (rates[w], -w))  # a tie keeps the smaller share
    return best, rates


def extend_bundle(bundle: dict, codec: Codec, texts: Sequence[str], held_out: Sequence[str],
                  source: str) -> tuple[dict, dict]:
    """``bundle`` (already ``rebased`` to ``codec``) with ``texts`` mixed into its character and word LMs, and a
    report: ``{"char_weight", "char_rates", "word_weight", "words_added", "lines"}``.

    Lines with characters the model cannot write are left out (they could never be decoded). The beam
    settings, calibration and three-readings settings are kept: the caller re-tunes them for the new model."""
    space = _space(bundle)
    usable = [text for text in texts if text.strip() and not codec.unknown_characters(text)]
    if not usable:
        raise ValueError("no usable text to extend the language models with")
    order = bundle["lm"]["order"]
    base = parse_arpa(arpa_text(bundle))
    user = estimate_kneser_ney([char_tokens(text, space) for text in usable], order)
    held = [char_tokens(text, space) for text in held_out if text.strip()]
    weight, rates = choose_weight(base, user, held)
    arpa = format_arpa(interpolate(base, user, weight)) if weight > 0 else arpa_text(bundle)
    report = {"lines": len(usable), "char_weight": weight, "char_rates": rates, "word_weight": None,
              "words_added": 0}
    word_lm = bundle.get("word_lm")
    if word_lm:
        base_words = parse_arpa(arpa_text(bundle, "word_lm"))
        user_words = estimate_kneser_ney([w for w in map(words, usable) if w], word_lm["order"])
        word_weight, _ = choose_weight(base_words, user_words, [w for w in map(words, held_out) if w])
        word_arpa = (format_arpa(interpolate(base_words, user_words, word_weight)) if word_weight > 0
                     else arpa_text(bundle, "word_lm"))
        known = lexicon_words(bundle)
        new_words = sorted({w for text in usable for w in words(text) if w.isalpha()} - set(known))
        lexicon = sorted(set(known) | set(new_words)) if known else None
        word_lm = word_lm_entry(word_arpa, word_lm["order"], word_lm["min_count"],
                                f"{word_lm['source']} + {source} (share {word_weight:g})", lexicon,
                                word_lm.get("lexicon_source", "") + (f" + {source}" if lexicon else ""))
        report.update(word_weight=word_weight, words_added=len(new_words) if known else 0)
    extended = make_bundle(arpa, codec, order, f"{bundle['lm']['source']} + {source} (share {weight:g})",
                           beam=bundle.get("beam"), calibration=bundle.get("calibration"), word_lm=word_lm,
                           language=bundle_language(bundle))
    for key in ("three_readings", "model_sha256"):
        if key in bundle:
            extended[key] = bundle[key]
    return extended, report


def detect_language(texts: Sequence[str], bundles: Mapping[str, dict]) -> str:
    """The language of ``texts`` among ``bundles``' (language -> bundle, the model's own first), by the rule
    ``--language auto`` reads a page with: another language must beat the first by a margin."""
    scorers = {}
    for language, bundle in bundles.items():
        tables, space = parse_arpa(arpa_text(bundle)), _space(bundle)

        def score(text: str, tables=tables, space=space) -> float:
            probs = _token_probs(tables, [char_tokens(text, space)], unseen_as_unk=True)
            return sum(math.log10(max(p, 1e-99)) for p in probs)

        scorers[language] = score
    return choose_language(list(texts), scorers)
