"""IAM tokenisation <-> natural spacing.

IAM transcriptions come from the tokenised LOB corpus: punctuation and some clitics are separate
tokens (``Leeds , Ontario``, ``it 's``, ``" prop up "``) although the ink has no such spaces. The
recognizer is trained on, and outputs, **natural spacing**: folder labels are passed through
``detokenize`` at load time (``DataConfig.detokenize``, on by default), so the model is never asked
to predict spaces that are not on the page.

The rule (``detokenize``), applied to the space-separated tokens of one line:

1. ``, . ; : ! ? ...`` and ``)`` attach to the token on their left (``Leeds , Ontario`` ->
   ``Leeds, Ontario``; ``star ... .`` -> ``star....``).
2. ``(`` attaches to the token on its right (``( Rialto`` -> ``(Rialto``).
3. Clitic tokens ``'s 'm 'd 'll 're 've n't`` (any case) attach to the left (``it 's`` -> ``it's``).
4. A stand-alone quote token (``"`` or ``'``) is an opening quote (attaches right) or a closing quote
   (attaches left). Quotes alternate within a line, starting with "opening", but because a quotation
   may have opened on an earlier line, the *first* quote of a line is taken as closing when it
   follows punctuation or a word and is followed by nothing, by punctuation, or (after ``. ! ?``) by
   anything: ``demonstrations . "`` -> ``demonstrations."``; ``: " We`` -> ``: "We``.
5. Everything else is kept, including spaced dashes (``Virginia - met``), ``#`` (IAM's mark for a
   crossed-out word) and hyphens.

It removes spaces only, never characters, so ``detokenize(t).replace(" ", "")`` equals
``t.replace(" ", "")``.

``tokenize_like_iam`` is the (heuristic) inverse, used to score natural-spacing predictions against
IAM's own references (``cer_iam``), which is how published IAM numbers are computed. It cannot be
exact because IAM is not consistent (``wife's`` but ``girl 's``; ``'s`` is split mostly after
pronouns); ``docs/datasets.md`` gives the round-trip agreement on the development data.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from text_recognizer.metrics import cer, wer

__all__ = ["detokenize", "tokenize_like_iam", "cer_iam", "cer_natural", "wer_natural"]

_ATTACH_LEFT = {",", ".", ";", ":", "!", "?", "...", ")", "..", "...."}
_ATTACH_RIGHT = {"("}
_QUOTES = {'"', "'"}
_CLITICS = {"'s", "'m", "'d", "'ll", "'re", "'ve", "n't"}
_SENTENCE_END = {".", "!", "?", "..."}
_PUNCT = _ATTACH_LEFT | _ATTACH_RIGHT | _QUOTES


def _is_clitic(token: str) -> bool:
    return token.lower() in _CLITICS


def _first_quote_closes(tokens: list[str], i: int) -> bool:
    prev = tokens[i - 1] if i > 0 else None
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    if prev is None or prev in {":", "("} or prev in _QUOTES:
        return False
    if prev in _SENTENCE_END:
        return True
    return nxt is None or nxt in _ATTACH_LEFT or nxt in _ATTACH_RIGHT or nxt in _QUOTES


def detokenize(text: str) -> str:
    """IAM-tokenised line -> natural spacing (see the module docstring for the rule)."""
    tokens = text.split()
    if not tokens:
        return text.strip()
    # glue[i]: how token i joins the previous output: True = no space before it
    glue = [False] * len(tokens)
    attach_next = False  # the previous token asked to be glued to this one
    opening = True  # the next quote of this line is an opening quote
    seen_quote = False
    for i, tok in enumerate(tokens):
        no_space = attach_next
        attach_next = False
        if tok in _ATTACH_LEFT or _is_clitic(tok):
            no_space = True
        elif tok in _ATTACH_RIGHT:
            attach_next = True
        elif tok in _QUOTES:
            if not seen_quote and _first_quote_closes(tokens, i):
                opening = False
            seen_quote = True
            if opening:
                attach_next = True
            else:
                no_space = True
            opening = not opening
        glue[i] = no_space and i > 0
    out = [tokens[0]]
    for tok, g in zip(tokens[1:], glue[1:]):
        out.append(tok if g else " " + tok)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# The inverse: natural text -> IAM-like tokens
# ---------------------------------------------------------------------------------------------

#: Words after which IAM splits ``'s`` (contractions of "is"/"has"); after other words it is
#: usually a possessive and stays attached.
_S_SPLIT_AFTER = {
    "it", "that", "there", "what", "she", "he", "let", "nobody", "everybody", "somebody", "here",
    "where", "who", "how", "everyone", "someone", "this",
}
_TRAILING = re.compile(r"^(.*?)((?:\.\.\.|[,;:!?)\"'.])+)$")
_LEADING = re.compile(r"^((?:[(\"'])+)(.*)$")
_CLITIC_TAIL = re.compile(r"^(.+?)('(?:m|d|ll|re|ve|s))$", re.IGNORECASE)
#: Tokens whose final period is part of the word in IAM (abbreviations, initials).
_ABBREVIATION = re.compile(
    r"^(?:[A-Za-z]\.)+$|^(?:Mr|Mrs|Dr|St|Fig|MR|MRS|DR|Mt|Rev|Jr|Sr|Co|cent|Cent|in|No|Prof|Lt|Col|Capt"
    r"|Sgt|ft|yds|lb|oz|viz|etc|ibid|op|cit|cf|vol|pp|Ps|Hab|Sol|Neh|Git|Levit|Gen|Deut|Matt|Isa|Jer)\.$"
)
_DOTS = re.compile(r"^(.*?)(\.+)$")


def _split_word(word: str) -> list[str]:
    """Split one natural-spacing word into IAM-like tokens."""
    if _is_clitic(word):
        return [word]
    if set(word) == {"."}:
        return [word] if len(word) <= 3 else ["...", word[3:]]
    head: list[str] = []
    m = _LEADING.match(word)
    if m and m.group(2):
        head = list(m.group(1))
        word = m.group(2)
    elif m:  # only quotes/brackets
        return list(word)
    tail: list[str] = []
    while word:
        if _ABBREVIATION.match(word):
            break
        dots = _DOTS.match(word)
        if dots and dots.group(1):
            stem, run = dots.group(1), dots.group(2)
            if len(run) == 1 and _ABBREVIATION.match(word):
                break
            tail[:0] = ["..."] * (len(run) >= 3) + ["."] * (len(run) % 3 if len(run) >= 3 else len(run))
            word = stem
            continue
        last = word[-1]
        if last in ",;:!?)\"'":
            if last == "'" and word[-2:-1] in ("s", "S") and not tail and "'" not in head:
                break  # plural possessive (settlers') stays attached
            tail.insert(0, last)
            word = word[:-1]
            continue
        break
    middle = [word] if word else []
    if word:
        c = _CLITIC_TAIL.match(word)
        if c:
            stem, clitic = c.group(1), c.group(2)
            if clitic.lower() != "'s" or stem.lower() in _S_SPLIT_AFTER:
                middle = [stem, clitic]
    return head + middle + tail


def tokenize_like_iam(text: str) -> str:
    """Natural spacing -> IAM-style tokens (heuristic inverse of ``detokenize``)."""
    tokens: list[str] = []
    for word in text.split():
        tokens.extend(_split_word(word))
    return " ".join(tokens)


def cer_natural(iam_references: Sequence[str], predictions: Sequence[str]) -> float:
    """CER of natural-spacing predictions against the detokenised IAM references."""
    return cer([detokenize(r) for r in iam_references], list(predictions))


def wer_natural(iam_references: Sequence[str], predictions: Sequence[str]) -> float:
    """WER of natural-spacing predictions against the detokenised IAM references.

    Against the tokenised references every "it's" read as written counts as word errors
    ("it 's" is two words), which inflates WER several points above what a reader sees.
    """
    return wer([detokenize(r) for r in iam_references], list(predictions))


def cer_iam(iam_references: Sequence[str], predictions: Sequence[str]) -> float:
    """CER against IAM's own tokenised references (comparable with published IAM numbers).

    Predictions are normalised with ``tokenize_like_iam(detokenize(p))``, so both natural-spacing
    and IAM-tokenised predictions are scored the same way.
    """
    return cer(list(iam_references), [tokenize_like_iam(detokenize(p)) for p in predictions])
