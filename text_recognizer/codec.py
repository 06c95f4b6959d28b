"""Characters <-> integer ids for CTC.

Blank convention: id 0 is the CTC blank and never stands for a character; character ``k`` of the
character set has id ``k + 1``. The character set travels inside every checkpoint (see
``Codec.to_dict``), so a model always decodes with the alphabet it was trained on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

BLANK_ID = 0

#: IAM's 79 characters (space, punctuation, digits, letters), the default alphabet.
DEFAULT_CHARSET = " !\"#&'()*+,-./0123456789:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

#: One Latin-script alphabet for English, French and the other major Western European languages (docs/alphabet.md).
#: IAM's 79 characters come first, so their output rows keep their places; then the rest of printable ASCII but the
#: backtick (it folds to ``'``); then the accented letters of French, German, Spanish, Italian, Portuguese, Dutch and
#: the Nordic languages in both cases; then the signs that occur in letters and notes. Chosen from the Copiste d'un
#: jour train labels (every character there except the typographic quotes, which fold to ASCII by
#: ``text_recognizer.normalization``) plus each language's letters: 161 characters, all NFC.
LATIN_CHARSET = (
    DEFAULT_CHARSET
    + "$%<=>@[\\]^_{|}~"
    + "àâäáãåæçèéêëìíîïñòóôöõøœùúûüÿß"
    + "ÀÂÄÁÃÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÖÕØŒÙÚÛÜŸ"
    + "«»€£°§¡¿"
)


class UnknownCharacterError(ValueError):
    """A text contains characters outside the codec's character set."""


@dataclass(frozen=True)
class Codec:
    """Maps text to id sequences and back, with blank = 0.

    ``charset`` is an ordered string of distinct characters; the blank is not part of it.
    """

    charset: str = DEFAULT_CHARSET
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.charset, str) or not self.charset:
            raise ValueError(f"charset must be a non-empty string, got {self.charset!r}")
        duplicates = sorted({c for c in self.charset if self.charset.count(c) > 1})
        if duplicates:
            raise ValueError(f"charset has repeated characters: {duplicates!r}")
        object.__setattr__(self, "_index", {c: i + 1 for i, c in enumerate(self.charset)})

    @property
    def num_classes(self) -> int:
        """Number of model outputs: the characters plus the blank."""
        return len(self.charset) + 1

    def unknown_characters(self, text: str) -> list[str]:
        """Sorted characters of ``text`` that the codec cannot encode."""
        return sorted({c for c in text if c not in self._index})

    def encode(self, text: str) -> list[int]:
        """Text -> ids (each >= 1). Raises ``UnknownCharacterError`` naming every unknown character."""
        unknown = self.unknown_characters(text)
        if unknown:
            raise UnknownCharacterError(
                f"text {text!r} has characters outside the character set: {unknown!r}"
            )
        return [self._index[c] for c in text]

    def decode(self, ids: Iterable[int]) -> str:
        """Ids -> text, verbatim (no CTC collapsing; see ``text_recognizer.decoding.greedy``). Blanks are skipped."""
        chars = []
        for i in ids:
            i = int(i)
            if i == BLANK_ID:
                continue
            if not 0 < i <= len(self.charset):
                raise ValueError(f"id {i} is outside [0, {self.num_classes})")
            chars.append(self.charset[i - 1])
        return "".join(chars)

    def to_dict(self) -> dict:
        return {"charset": self.charset, "blank_id": BLANK_ID}

    @classmethod
    def from_dict(cls, data: dict) -> Codec:
        if data.get("blank_id", BLANK_ID) != BLANK_ID:
            raise ValueError(f"unsupported blank id {data.get('blank_id')!r}; this version uses {BLANK_ID}")
        return cls(charset=data["charset"])

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> Codec:
        """A codec whose alphabet is exactly the characters seen in ``texts`` (sorted)."""
        return cls(charset="".join(sorted(set("".join(texts)))))
