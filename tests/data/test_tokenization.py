"""Detokenisation of IAM transcriptions, its inverse, and the two CERs."""

from __future__ import annotations

from pathlib import Path

import pytest

from text_recognizer.data.tokenization import cer_iam, cer_natural, detokenize, tokenize_like_iam, wer_natural

DEV_VAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "iam" / "val"

CASES = [
    ("Leeds , Ontario", "Leeds, Ontario"),
    ("what 's that ?", "what's that?"),
    ("You 're a star ... .", "You're a star...."),
    ("They 'll be clapping", "They'll be clapping"),
    ('which would appear to " prop up " an out-dated', 'which would appear to "prop up" an out-dated'),
    ('last night : " We want to discuss', 'last night: "We want to discuss'),
    ('do if the British demonstrations . "', 'do if the British demonstrations."'),
    ("to be demonstrations . \" Yesterday Sir Roy's", "to be demonstrations.\" Yesterday Sir Roy's"),
    ('" The Right Approach " ( Rialto , " A " ) , and', '"The Right Approach" (Rialto, "A"), and'),
    ("told them , ' the police will act . ' At five", "told them, 'the police will act.' At five"),
    ('crushing our soul " ( see Hab. 2 , 10-11 ) .', 'crushing our soul" (see Hab. 2, 10-11).'),
    ("of Virginia - met today", "of Virginia - met today"),
    ("a # word", "a # word"),
    ("", ""),
]


@pytest.mark.parametrize(("iam", "natural"), CASES)
def test_detokenize(iam: str, natural: str) -> None:
    assert detokenize(iam) == natural
    assert detokenize(natural) == natural  # idempotent: natural text passes through
    assert detokenize(iam).replace(" ", "") == iam.replace(" ", "")  # only spaces are removed


@pytest.mark.parametrize(("iam", "natural"), CASES)
def test_tokenize_like_iam_inverts(iam: str, natural: str) -> None:
    assert tokenize_like_iam(natural) == iam


def test_tokenize_keeps_words_whole() -> None:
    assert tokenize_like_iam("Mr. Smith's U.S. trip at 9.35 p.m., 1,000 miles.") == (
        "Mr. Smith's U.S. trip at 9.35 p.m. , 1,000 miles ."
    )
    assert tokenize_like_iam("the settlers' parties, don't") == "the settlers' parties , don't"


def test_cers() -> None:
    refs = ["Leeds , Ontario", "it 's fine ."]
    natural = ["Leeds, Ontario", "it's fine."]
    assert cer_natural(refs, natural) == 0.0
    assert cer_iam(refs, natural) == 0.0
    assert cer_iam(refs, refs) == 0.0  # already tokenised predictions pass through
    assert cer_natural(refs, ["Leeds, Ontaria", "it's fine."]) == pytest.approx(
        1 / 24
    )  # 14 + 10 natural reference characters


def test_wer_natural_counts_words_as_written() -> None:
    refs = ["Leeds , Ontario", "it 's fine ."]
    assert wer_natural(refs, ["Leeds, Ontario", "it's fine."]) == 0.0
    assert wer_natural(refs, ["Leeds, Ontaria", "it's fine."]) == pytest.approx(1 / 4)  # 2 + 2 words


@pytest.mark.skipif(not (DEV_VAL / "labels.tsv").is_file(), reason="development copy not present")
def test_round_trip_on_iam_val() -> None:
    from text_recognizer.data.folder import read_labels

    texts = [r.text for r in read_labels(DEV_VAL)]
    same = sum(tokenize_like_iam(detokenize(t)) == t for t in texts)
    assert same / len(texts) > 0.99
    assert cer_iam(texts, [detokenize(t) for t in texts]) < 0.001
