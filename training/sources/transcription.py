"""One transcription guideline for every source: a collection's label -> a label in our alphabet, or no line.

Why: each collection writes what the ink shows with its own conventions (``M^r`` for a raised ``r``, ``>word<`` for a
crossed-out word, ``ſ`` for long s, ``q̃`` for an abbreviation stroke, ``[?]`` for a word the transcriber could not
read). Learned as they are, one model would be taught several outputs for the same ink, and characters no reader
expects. ``docs/transcription.md`` states each decision; this module is that document as code, applied in the
order of :data:`RULES`, and every rule is tested on the examples the document gives.

A label comes out in one of two ways: a normalised text (every character in the alphabet), or ``None`` with the
reason the line is left out (the ink holds something we cannot write, or the transcriber did not read it). Lines are
left out rather than guessed: a wrong label teaches worse than a missing one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from text_recognizer.codec import LATIN_CHARSET
from text_recognizer.normalization import fold_lookalikes

#: Letters with an abbreviation stroke (medieval and early-modern shorthand) -> the letter the stroke sits on.
#: The stroke is a mark over ink the model already writes; the expansion is an editor's reading, not the ink.
ABBREVIATION_LETTERS = {
    "\ua751": "p",  # ꝑ p with stroke through descender (per / par)
    "\ua753": "p",  # ꝓ p with flourish (pro)
    "\ua757": "q",  # ꝗ q with stroke through descender (quod)
    "\ua759": "q",  # ꝙ q with diagonal stroke (que / quam)
    "\u0111": "d",  # đ d with stroke
    "\u023c": "c",  # ȼ c with stroke (centimes in 19th-century registers)
    "\u017f": "s",  # ſ long s
    "\u1e9c": "s",  # ẜ long s with diagonal stroke
    "\u1e9d": "s",  # ẝ long s with high stroke
    "\u204a": "&",  # ⁊ Tironian et: the ink is a sign for "et", as & is
}

#: Marks a transcriber puts where interlinear text is inserted: not ink of the line, or a caret we do not teach.
INSERTION_MARKS = "\u22ce\u2038\u2380\u2041"  # ⋎ ‸ ⎀ ⁁

#: Line-end hyphens written as signs of their own -> the hyphen.
HYPHEN_SIGNS = {"\u00ac": "-", "\u2500": "-", "\u2e17": "=", "\u2e40": "="}  # ¬ ─ ⸗ ⹀

_DOUBLE_ESCAPED = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'"}

#: Crossed-out or deleted spans: eScriptorium's ``>words<`` and ``><`` (also ``<>``), and ``⟦words⟧``.
_CROSSED_OUT = re.compile(r">[^<>]*<|<>|\u27e6[^\u27e6\u27e7]*\u27e7")

#: What a transcriber writes for ink they could not read, or an editor's doubt: the line is left out.
_UNREAD = re.compile(
    r"\[\[|\]\]|\[[^\]]*\?[^\]]*\]|\[\s*\]|\[(?:illisible|ill\.|\.\.\.|…|sic)\]"  # editors' brackets
    r"|(?<![IVXLCDM])X{3,}(?![IVXLCDM])|@@|\?\?\?",  # XXX (not in a Roman numeral), @@, ???
    re.IGNORECASE)

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Outcome:
    """What the guideline made of one label: ``text`` (None when the line is left out) and why it was left out."""

    text: str | None
    reason: str | None = None


def undo_double_escape(text: str) -> str:
    """``&amp;`` typed into an attribute that is escaped again (``&amp;amp;`` in the file) -> ``&``."""
    for escaped, plain in _DOUBLE_ESCAPED.items():
        text = text.replace(escaped, plain)
    return text


def crossed_out_as_hash(text: str) -> str:
    """Each crossed-out or deleted span -> ``#``, IAM's mark for a crossed-out word (one output for that ink)."""
    return _CROSSED_OUT.sub("#", text)


def drop_superscript_marks(text: str) -> str:
    """``M^r`` -> ``Mr``, ``1^er`` -> ``1er``, ``^(2)`` -> ``(2)``: the raised letters stay, the marker goes.

    Why: IAM and Copiste write raised letters as plain ones; a model cannot learn when one collection's
    transcribers typed ``^`` and another's did not. Only the caret goes: the letters are the ink.
    """
    return text.replace("^", "")


def strip_marks_outside(text: str, alphabet: str) -> str:
    """Characters outside ``alphabet`` that are a letter of it plus combining marks -> that letter.

    ``ẽ``, ``ē``, ``q̃``, ``r̄``, ``ͣ`` (abbreviation strokes and raised letters written as combining marks), ``ĵ``: the
    base letter is the ink we can write; an accent the alphabet has (``é``, ``õ``, ``ñ``) is kept whole.
    """
    out: list[str] = []
    for char in text:
        if char in alphabet:
            out.append(char)
            continue
        decomposed = unicodedata.normalize("NFD", char)
        kept = "".join(c for c in decomposed if not unicodedata.combining(c))
        out.append(kept if kept else "")  # a lone combining mark (a stroke over the letter before) goes
    return unicodedata.normalize("NFC", "".join(out))


def normalise(text: str, alphabet: str = LATIN_CHARSET, leave_out: Iterable[str] = (),
              replace: dict[str, str] | None = None) -> Outcome:
    """A source label -> ``Outcome`` under the guideline (docs/transcription.md), rules in the document's order.

    ``leave_out``: a source's own signs that mean a line cannot be used (``€`` as a marker in a 1900 register);
    ``replace``: a source's own spellings of a sign (its manifest says why). Both come from the source's manifest.
    """
    text = undo_double_escape(text)
    for old, new in (replace or {}).items():
        text = text.replace(old, new)
    for sign in leave_out:
        if sign in text:
            return Outcome(None, f"source sign {sign!r}")
    if _UNREAD.search(text):
        return Outcome(None, "unread or doubtful text")
    text = unicodedata.normalize("NFC", text)
    text = fold_lookalikes(text)
    text = crossed_out_as_hash(text)
    text = drop_superscript_marks(text)
    text = "".join(ABBREVIATION_LETTERS.get(c, HYPHEN_SIGNS.get(c, c)) for c in text)
    text = "".join(c for c in text if c not in INSERTION_MARKS)
    text = strip_marks_outside(text, alphabet)
    text = _SPACES.sub(" ", text).strip()
    if not text:
        return Outcome(None, "empty")
    if "<" in text or ">" in text:
        return Outcome(None, "unpaired crossed-out mark")
    outside = sorted(set(c for c in text if c not in alphabet))
    if outside:
        return Outcome(None, "outside the alphabet: " + " ".join(f"{c} U+{ord(c):04X}" for c in outside))
    return Outcome(text)
