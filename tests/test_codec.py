"""Tests for text_recognizer.codec: ids <-> characters, blank = 0."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from text_recognizer.codec import BLANK_ID, DEFAULT_CHARSET, Codec, UnknownCharacterError


def test_default_charset_is_iams_79_characters() -> None:
    codec = Codec()
    assert len(DEFAULT_CHARSET) == 79
    assert len(set(DEFAULT_CHARSET)) == 79
    assert codec.num_classes == 80


def test_blank_is_zero_and_never_a_character() -> None:
    codec = Codec()
    assert BLANK_ID == 0
    ids = codec.encode(DEFAULT_CHARSET)
    assert ids == list(range(1, 80))
    assert BLANK_ID not in ids
    # blank ids are skipped on decode
    assert codec.decode([0, ids[0], 0, 0, ids[1], 0]) == DEFAULT_CHARSET[:2]
    assert codec.decode([0, 0, 0]) == ""


@given(st.text(alphabet=DEFAULT_CHARSET, max_size=60))
def test_round_trip_default(text: str) -> None:
    codec = Codec()
    ids = codec.encode(text)
    assert all(1 <= i < codec.num_classes for i in ids)
    assert codec.decode(ids) == text


def test_round_trip_keeps_repeats_verbatim() -> None:
    codec = Codec()
    text = "bookkeeper  '' \"\" 1001"
    assert codec.decode(codec.encode(text)) == text


def test_round_trip_custom_charset() -> None:
    codec = Codec("ba")
    assert codec.encode("ab") == [2, 1]
    assert codec.decode([1, 2, 2]) == "baa"
    assert codec.num_classes == 3


def test_unknown_characters_raise_naming_them() -> None:
    codec = Codec()
    with pytest.raises(UnknownCharacterError) as info:
        codec.encode("naïve € text")
    message = str(info.value)
    assert "'ï'" in message and "'€'" in message
    assert isinstance(info.value, ValueError)
    assert codec.unknown_characters("naïve € text") == sorted({"ï", "€"})
    assert codec.unknown_characters("plain") == []


def test_decode_rejects_out_of_range_ids() -> None:
    codec = Codec("abc")
    with pytest.raises(ValueError, match="outside"):
        codec.decode([4])
    with pytest.raises(ValueError, match="outside"):
        codec.decode([-1])


@pytest.mark.parametrize("charset", ["abca", "aa", "x y "])
def test_duplicate_characters_rejected(charset: str) -> None:
    with pytest.raises(ValueError, match="repeated"):
        Codec(charset)


@pytest.mark.parametrize("charset", ["", None, 123])
def test_empty_or_non_string_charset_rejected(charset) -> None:
    with pytest.raises(ValueError, match="charset"):
        Codec(charset)


def test_to_dict_from_dict_round_trip() -> None:
    codec = Codec("xyz!")
    data = codec.to_dict()
    assert data == {"charset": "xyz!", "blank_id": 0}
    assert all(isinstance(v, (str, int)) for v in data.values())
    again = Codec.from_dict(data)
    assert again == codec
    assert again.encode("z!x") == codec.encode("z!x")
    assert Codec.from_dict({"charset": "ab"}) == Codec("ab")


def test_from_dict_rejects_other_blank_id() -> None:
    with pytest.raises(ValueError, match="blank"):
        Codec.from_dict({"charset": "ab", "blank_id": 2})


def test_from_texts_is_sorted_set_of_seen_characters() -> None:
    codec = Codec.from_texts(["cab", "bad"])
    assert codec.charset == "abcd"
    assert codec.decode(codec.encode("dab")) == "dab"


def test_latin_charset_is_nfc_distinct_and_holds_the_western_european_letters():
    import unicodedata

    from text_recognizer.codec import LATIN_CHARSET

    codec = Codec(LATIN_CHARSET)  # raises on a repeated character
    assert unicodedata.normalize("NFC", LATIN_CHARSET) == LATIN_CHARSET
    assert LATIN_CHARSET.startswith(DEFAULT_CHARSET)
    assert set("éèêëàâäçîïôöûùüÿœæñáíóúßÉÈÊÀÇŒÆÑ«»€°") <= set(LATIN_CHARSET)
    assert not set("’‘“”`–—") & set(LATIN_CHARSET)  # folded to ASCII (text_recognizer.normalization)
    assert codec.decode(codec.encode("L'été à Noël, «ça»")) == "L'été à Noël, «ça»"
