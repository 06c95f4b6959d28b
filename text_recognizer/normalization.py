"""Unicode normalisation of transcriptions, shared by data loading (training, evaluation) and alphabets.

Why: the same visible "é" may be stored composed (U+00E9, NFC) or decomposed ("e" + U+0301, NFD),
depending on the tool that wrote the file. Unnormalised, they would be two different labels and two
different classes. Every label is normalised with one form (NFC by default) before it is counted
or encoded.

Characters that handwriting does not tell apart are folded to one as well (``LOOKALIKES``): the
typographic apostrophe ``’`` and the ASCII ``'`` are the same stroke on paper, so a model cannot learn
which one a transcriber typed, and a reading that writes ``'`` where the label says ``’`` is not an
error. The rule is one direction, to the ASCII character IAM uses (docs/alphabet.md); a model never
outputs the folded-away characters because they are not in its alphabet. Guillemets ``« »`` look
different from ``"`` and stay.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

NORMALIZATIONS = ("NFC", "NFD", "none")

#: Characters written the same way by hand -> the one the alphabets keep.
LOOKALIKES = {
    "\u2019": "'",  # ’ right single quotation mark (the French typographic apostrophe)
    "\u2018": "'",  # ‘ left single quotation mark
    "\u201a": "'",  # ‚ single low-9 quotation mark
    "\u201b": "'",  # ‛ single high-reversed-9 quotation mark
    "\u02bc": "'",  # ʼ modifier letter apostrophe
    "\u00b4": "'",  # ´ acute accent, typed as an apostrophe
    "`": "'",  # grave accent, typed as an apostrophe
    "\u2032": "'",  # ′ prime
    "\u201c": '"',  # “ left double quotation mark
    "\u201d": '"',  # ” right double quotation mark
    "\u201e": '"',  # „ double low-9 quotation mark
    "\u201f": '"',  # ‟ double high-reversed-9 quotation mark
    "\u2033": '"',  # ″ double prime
    "\u2010": "-",  # ‐ hyphen
    "\u2011": "-",  # ‑ non-breaking hyphen
    "\u2012": "-",  # ‒ figure dash
    "\u2013": "-",  # – en dash
    "\u2014": "-",  # — em dash
    "\u2212": "-",  # − minus sign
    "\u00a0": " ",  # no-break space (French typesetting puts it before ; : ! ?)
    "\u202f": " ",  # narrow no-break space
    "\u2009": " ",  # thin space
    "\u2026": "...",  # … horizontal ellipsis
}
_FOLD = str.maketrans(LOOKALIKES)


def fold_lookalikes(text: str) -> str:
    """``text`` with every character of ``LOOKALIKES`` replaced by the one handwriting cannot tell it from."""
    return text.translate(_FOLD)


def normalizer(form: str) -> Callable[[str], str]:
    """The function that normalises a label: ``NFC`` or ``NFD`` (then lookalikes folded), or ``none``
    (identity: the text exactly as stored)."""
    if form not in NORMALIZATIONS:
        raise ValueError(f"unicode normalization must be one of {NORMALIZATIONS}, got {form!r}")
    if form == "none":
        return _identity
    return lambda text: fold_lookalikes(unicodedata.normalize(form, text))


def _identity(text: str) -> str:
    return text
