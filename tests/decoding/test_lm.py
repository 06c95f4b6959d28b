"""Tests for text_recognizer.decoding.bundle: building the character LM and the decoder bundle."""

from __future__ import annotations

import gzip

import pytest
import torch

from text_recognizer.codec import Codec
from text_recognizer.decoding.bundle import (
    LanguageModelError,
    arpa_text,
    bundle_path,
    decoder_bundle_for,
    lexicon_words,
    load_bundle,
    make_bundle,
    save_bundle,
    word_lm_entry,
)
from text_recognizer.decoding.lm_builder import build_arpa, read_texts
from text_recognizer.decoding.word_lm import build_word_arpa
from text_recognizer.recognizer import DEFAULT_CHECKPOINT
from training.decoder.build_lm import main

CODEC = Codec(" abcdehlorstw")


def test_read_texts_from_files_and_dataset_folders(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("hello  world\n\n  the end \n", encoding="utf-8")
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "labels.tsv").write_text("file\ttext\nx.png\tLeeds , Ontario\ny.png\tit 's here .\n", encoding="utf-8")
    assert read_texts([tmp_path / "a.txt", folder]) == ["hello world", "the end", "Leeds, Ontario", "it's here."]
    with pytest.raises(ValueError, match="neither"):
        read_texts([tmp_path / "missing.txt"])
    with pytest.raises(ValueError, match="sources"):
        read_texts(str(tmp_path / "a.txt"))


def test_build_arpa_drops_lines_the_model_cannot_write() -> None:
    arpa = build_arpa(["hello world", "HELLO!"], CODEC, order=2)
    assert "ngram 2=" in arpa and "H" not in arpa and "\th\te\t" not in arpa
    assert "\th |\t" not in arpa and "o |" in arpa  # spaces are the token |
    with pytest.raises(ValueError, match="order"):
        build_arpa(["hello"], CODEC, order=7)
    with pytest.raises(ValueError, match="no usable text"):
        build_arpa(["HELLO"], CODEC)
    piped = build_arpa(["a | a"], Codec("a |"), order=2)  # an alphabet that writes | itself: spaces are ▁
    assert "a \u2581" in piped and "\u2581 |" in piped
    with pytest.raises(ValueError, match="both"):
        build_arpa(["a"], Codec("a|\u2581"))


def test_bundle_round_trip_and_errors(tmp_path) -> None:
    bundle = make_bundle(build_arpa(["hello world"], CODEC, 3), CODEC, 3, "test", beam={"beam_width": 4})
    path = save_bundle(bundle, tmp_path / "m.decoder.pt")
    loaded = load_bundle(path, CODEC)
    assert loaded["beam"] == {"beam_width": 4} and arpa_text(loaded).startswith("\n\\data\\")
    with pytest.raises(LanguageModelError, match="alphabet"):
        load_bundle(path, Codec("xyz"))
    with pytest.raises(LanguageModelError, match="does not exist"):
        load_bundle(tmp_path / "none.pt", CODEC)
    (tmp_path / "junk.pt").write_bytes(b"not a torch file")
    with pytest.raises(LanguageModelError, match="could not be read"):
        load_bundle(tmp_path / "junk.pt", CODEC)
    tampered = dict(bundle, lm=dict(bundle["lm"], arpa_gz=gzip.compress(b"\\data\\ changed")))
    save_bundle(tampered, tmp_path / "t.pt")
    with pytest.raises(LanguageModelError, match="checksum"):
        load_bundle(tmp_path / "t.pt", CODEC)
    save_bundle({"kind": "other"}, tmp_path / "o.pt")
    with pytest.raises(LanguageModelError, match="not a text_recognizer decoder bundle"):
        load_bundle(tmp_path / "o.pt", CODEC)


def test_bundle_carries_a_word_lm(tmp_path) -> None:
    lines = ["hello world", "hello there world"]
    word_arpa = build_word_arpa(lines, 2, 1)
    entry = word_lm_entry(word_arpa, 2, 1, "test", ["branner", "lathrop"], "names.txt")
    bundle = make_bundle(build_arpa(lines, CODEC, 3), CODEC, 3, "test", word_lm=entry)
    path = save_bundle(bundle, tmp_path / "w.decoder.pt")
    stored = torch.load(path, weights_only=True)["word_lm"]
    assert isinstance(stored["arpa_gz"], torch.Tensor) and isinstance(stored["lexicon_gz"], torch.Tensor)
    loaded = load_bundle(path, CODEC)
    assert arpa_text(loaded, "word_lm") == word_arpa and loaded["word_lm"]["unit"] == "word"
    assert lexicon_words(loaded) == lexicon_words(bundle) == ["branner", "lathrop"]
    assert arpa_text(make_bundle(None, CODEC, None, "test"), "word_lm") is None  # optional
    assert lexicon_words(make_bundle(None, CODEC, None, "test")) == []
    no_lexicon = make_bundle(None, CODEC, None, "test", word_lm=word_lm_entry(word_arpa, 2, 1, "test"))
    assert lexicon_words(load_bundle(save_bundle(no_lexicon, tmp_path / "n.pt"), CODEC)) == []
    changed = dict(bundle, word_lm=dict(entry, lexicon_gz=gzip.compress(b"someone")))
    save_bundle(changed, tmp_path / "l.pt")
    with pytest.raises(LanguageModelError, match="lexicon's checksum"):
        load_bundle(tmp_path / "l.pt", CODEC)
    with pytest.raises(ValueError, match="key"):
        arpa_text(loaded, "words")
    tampered = dict(bundle, word_lm=dict(bundle["word_lm"], arpa_gz=gzip.compress(b"\\data\\ changed")))
    save_bundle(tampered, tmp_path / "t.pt")
    with pytest.raises(LanguageModelError, match="word language model's checksum"):
        load_bundle(tmp_path / "t.pt", CODEC)


def test_bundle_stores_the_lm_byte_for_byte_and_reads_old_bundles(tmp_path) -> None:
    import os

    text = [f"line {i} of the quick brown fox and the lazy dog, {i * 7919 % 1000}" for i in range(400)]
    codec = Codec(" ,0123456789abcdefghijklmnopqrstuvwxyz")
    bundle = make_bundle(build_arpa(text, codec, 6), codec, 6, "test")
    size = len(bundle["lm"]["arpa_gz"])
    path = save_bundle(bundle, tmp_path / "new.pt")
    stored = torch.load(path, weights_only=True)["lm"]["arpa_gz"]
    assert isinstance(stored, torch.Tensor) and stored.dtype == torch.uint8 and stored.numel() == size
    assert os.path.getsize(path) < size * 1.05 + 4096  # bytes pickled by torch.save grow by ~half
    loaded = load_bundle(path, codec)
    assert loaded["lm"]["arpa_gz"] == bundle["lm"]["arpa_gz"] and arpa_text(loaded) == arpa_text(bundle)
    torch.save(bundle, tmp_path / "old.pt")  # bundles written before the tensor form: bytes
    assert arpa_text(load_bundle(tmp_path / "old.pt", codec)) == arpa_text(bundle)
    wrong = dict(bundle, lm=dict(bundle["lm"], arpa_gz=torch.zeros(3, 2, dtype=torch.uint8)))
    torch.save(wrong, tmp_path / "wrong.pt")
    with pytest.raises(LanguageModelError, match="corrupt"):
        load_bundle(tmp_path / "wrong.pt", codec)


def test_bundle_is_found_inside_or_next_to_the_checkpoint(tmp_path) -> None:
    bundle = make_bundle(None, CODEC, None, "test")
    checkpoint = tmp_path / "best.pt"
    assert bundle_path(checkpoint) == tmp_path / "best.decoder.pt"
    assert decoder_bundle_for(checkpoint, {}, CODEC) is None
    save_bundle(bundle, bundle_path(checkpoint))
    assert decoder_bundle_for(checkpoint, {}, CODEC)["charset"] == CODEC.charset
    inside = make_bundle(build_arpa(["abc"], CODEC, 2), CODEC, 2, "inside")
    assert decoder_bundle_for(checkpoint, inside, CODEC)["lm"]["source"] == "inside"
    with pytest.raises(LanguageModelError, match="not a text_recognizer decoder bundle"):
        decoder_bundle_for(checkpoint, {"beam_width": 3}, CODEC)


def test_command_builds_a_bundle_from_a_text_file(tmp_path, capsys) -> None:
    text = tmp_path / "corpus.txt"
    text.write_text("the quick brown fox\njumps over the lazy dog\n", encoding="utf-8")
    out = tmp_path / "model.decoder.pt"
    assert main([str(text), "--checkpoint", str(DEFAULT_CHECKPOINT), "--order", "4", "--out", str(out),
                 "--arpa", str(tmp_path / "lm.arpa")]) == 0
    assert "2 lines" in capsys.readouterr().out
    bundle = torch.load(out, weights_only=True)
    assert bundle["lm"]["order"] == 4 and arpa_text(bundle) == (tmp_path / "lm.arpa").read_text(encoding="utf-8")
    assert "ngram 4=" in arpa_text(bundle)
    assert bundle["word_lm"]["order"] == 2 and "\tquick\t" in arpa_text(bundle, "word_lm")  # built by default
    assert main([str(text), "--checkpoint", str(DEFAULT_CHECKPOINT), "--order", "3", "--word-order", "0",
                 "--out", str(out)]) == 0
    assert torch.load(out, weights_only=True)["word_lm"] is None
    assert main([str(text), "--checkpoint", str(DEFAULT_CHECKPOINT), "--word-order", "-1", "--out", str(out)]) == 2
    names = tmp_path / "names.txt"
    names.write_text("Branner\nLathrop\n", encoding="utf-8")
    assert main([str(text), "--checkpoint", str(DEFAULT_CHECKPOINT), "--order", "3", "--lexicon", str(names),
                 "--out", str(out)]) == 0
    assert "lexicon of 2 words" in capsys.readouterr().out
    assert lexicon_words(load_bundle(out)) == ["branner", "lathrop"]
    assert main([str(text), "--checkpoint", str(DEFAULT_CHECKPOINT), "--word-order", "0", "--lexicon", str(names),
                 "--out", str(out)]) == 2
    assert main([str(text), "--checkpoint", str(DEFAULT_CHECKPOINT), "--order", "9", "--out", str(out)]) == 2
    assert main([str(tmp_path / "nope.txt"), "--checkpoint", str(DEFAULT_CHECKPOINT), "--out", str(out)]) == 2
    assert "error:" in capsys.readouterr().err
