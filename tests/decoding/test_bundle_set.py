"""A model's decoder bundles per language (bundle.py's language field, bundle_set.py): found beside the checkpoint,
old bundles English, defaults, clear errors for languages the model has no bundle for or cannot write."""

from __future__ import annotations

import hashlib
import warnings

import pytest

from tests.decoding.bilingual import IAM, LATIN, bundle_for, save_model
from text_recognizer.decoding.bundle import (
    LanguageModelError,
    bundle_language,
    bundle_path,
    language_bundle_paths,
    load_bundle,
    make_bundle,
    save_bundle,
)
from text_recognizer.decoding.bundle_set import BundleSet
from text_recognizer.decoding.language import AUTO, LanguageError
from text_recognizer.decoding.lm_builder import LanguageModelSpec, build_decoder_bundle


def bundles_of(checkpoint, codec=LATIN, choice=None, embedded=None) -> BundleSet:
    return BundleSet.for_model(choice, checkpoint, embedded, codec, lambda: "0" * 64)


def test_bundles_carry_their_language_and_old_ones_are_english(tmp_path) -> None:
    assert bundle_language(make_bundle(None, LATIN, None, "x")) == "en"
    assert bundle_language(make_bundle(None, LATIN, None, "x", language="fr")) == "fr"
    old = {k: v for k, v in make_bundle(None, LATIN, None, "x").items() if k != "language"}  # before the field
    assert bundle_language(load_bundle(save_bundle(old, tmp_path / "old.decoder.pt"), LATIN)) == "en"
    with pytest.raises(LanguageError):
        make_bundle(None, LATIN, None, "x", language="French")
    bad = save_bundle({**old, "language": "French"}, tmp_path / "bad.decoder.pt")
    with pytest.raises(LanguageModelError, match="language field"):
        load_bundle(bad)


def test_the_builder_stamps_the_language_and_refuses_an_alphabet_without_its_letters() -> None:
    spec = LanguageModelSpec(order=3, word_order=2, word_min_count=1)
    bundle, _ = build_decoder_bundle(["le chat est là", "où est la gare"], LATIN, spec, "test", language="fr")
    assert bundle["language"] == "fr"
    assert build_decoder_bundle(["the cat"], IAM, spec, "test")[0]["language"] == "en"  # the default
    with pytest.raises(ValueError, match="cannot write French"):
        build_decoder_bundle(["le chat est là"], IAM, spec, "test", language="fr")


def test_bundles_beside_the_checkpoint_one_per_language(tmp_path) -> None:
    checkpoint = save_model(tmp_path / "model.pt")
    assert bundle_path(checkpoint, "fr") == tmp_path / "model.fr.decoder.pt"
    assert bundles_of(checkpoint).bundles == {} and bundles_of(checkpoint).default_language is None
    save_bundle(bundle_for("en"), bundle_path(checkpoint))
    only = bundles_of(checkpoint)
    assert only.languages == ("en",) and only.default_language == "en" and only.resolve(AUTO) == "en"
    save_bundle(bundle_for("fr"), bundle_path(checkpoint, "fr"))
    save_bundle(bundle_for("fr"), tmp_path / "model.x.fr.decoder.pt")  # another file's, not this model's
    (tmp_path / "other.de.decoder.pt").write_bytes(b"")
    assert language_bundle_paths(checkpoint) == {"fr": tmp_path / "model.fr.decoder.pt"}
    both = bundles_of(checkpoint)
    assert both.languages == ("en", "fr") and both.primary_language == "en" and both.primary["language"] == "en"
    assert both.default_language == "en" and both.resolve(None) == "en" and both.resolve(AUTO) == AUTO
    assert both.resolve("fr") == "fr" and both.resolve("EN") == "en"
    message = r"no decoder bundle for German \(de\). It reads English \(en\), French \(fr\)"
    with pytest.raises(LanguageError, match=message):
        both.resolve("de")
    # only the French one: French is the primary and the default
    bundle_path(checkpoint).unlink()
    french = bundles_of(checkpoint)
    assert french.languages == ("fr",) and french.primary_language == "fr" and french.default_language == "fr"
    with pytest.raises(LanguageError, match=r"no decoder bundle for English \(en\). It reads French \(fr\)"):
        french.resolve("en")


def test_an_explicit_bundle_is_the_only_one_and_false_is_none(tmp_path) -> None:
    checkpoint = save_model(tmp_path / "model.pt")
    save_bundle(bundle_for("en"), bundle_path(checkpoint))
    save_bundle(bundle_for("fr"), bundle_path(checkpoint, "fr"))
    given = save_bundle(bundle_for("fr"), tmp_path / "tuned.decoder.pt")
    assert bundles_of(checkpoint, choice=given).languages == ("fr",)
    assert bundles_of(checkpoint, choice=False).languages == ()
    with pytest.raises(LanguageError, match="no decoder bundle"):
        bundles_of(checkpoint, choice=False).resolve("en")
    embedded = bundles_of(checkpoint, embedded=bundle_for("la"))  # the checkpoint's own bundle, then the files
    assert embedded.primary_language == "la" and embedded.languages == ("fr", "la")


def test_files_that_contradict_each_other_are_errors(tmp_path) -> None:
    checkpoint = save_model(tmp_path / "model.pt")
    save_bundle(bundle_for("en"), bundle_path(checkpoint, "fr"))  # named French, English inside
    with pytest.raises(LanguageModelError, match=r"named for French \(fr\).*English"):
        bundles_of(checkpoint)
    save_bundle(bundle_for("fr"), bundle_path(checkpoint, "fr"))
    save_bundle(bundle_for("fr"), bundle_path(checkpoint))  # French twice
    with pytest.raises(LanguageModelError, match="two decoder bundles for French"):
        bundles_of(checkpoint)


def test_a_model_whose_alphabet_cannot_write_french(tmp_path) -> None:
    """An IAM-only model with French bundles: one built for another alphabet and one built for its own (whose
    LM lost every accented line); either way French is refused saying why, and English still reads."""
    checkpoint = save_model(tmp_path / "old.pt", IAM)
    save_bundle(bundle_for("en", IAM), bundle_path(checkpoint))
    save_bundle(bundle_for("fr", LATIN), bundle_path(checkpoint, "fr"))
    bundles = bundles_of(checkpoint, IAM)
    assert bundles.languages == ("en",) and bundles.default_language == "en" and "fr" in bundles.unusable
    message = (r"cannot read French \(fr\) with .*old.pt: the model's alphabet cannot write French \(fr\): it lacks "
               r"'àâçéèêëîïôùûüœ'; the bundle was built for another alphabet \(107 characters, the model's has 79\) "
               r"\(in .*old.fr.decoder.pt\). It reads English \(en\)")
    with pytest.raises(LanguageError, match=message):
        bundles.resolve("fr")
    stamped = dict(bundle_for("en", IAM), language="fr")  # built for the model's own alphabet
    save_bundle(stamped, bundle_path(checkpoint, "fr"))
    with pytest.raises(LanguageError, match="cannot write French"):
        bundles_of(checkpoint, IAM).resolve("fr")
    with pytest.raises(LanguageModelError, match="cannot write French"):  # given explicitly: refused at once
        bundles_of(checkpoint, IAM, choice=bundle_path(checkpoint, "fr"))


def test_a_bundle_tuned_for_another_model_warns(tmp_path) -> None:
    checkpoint = save_model(tmp_path / "model.pt")
    sha = hashlib.sha256(checkpoint.read_bytes()).hexdigest()
    save_bundle(dict(bundle_for("en"), model_sha256=sha), bundle_path(checkpoint))
    save_bundle(dict(bundle_for("fr"), model_sha256="f" * 64), bundle_path(checkpoint, "fr"))
    with pytest.warns(UserWarning, match="another model"):
        BundleSet.for_model(None, checkpoint, None, LATIN, lambda: sha)
    bundle_path(checkpoint, "fr").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BundleSet.for_model(None, checkpoint, None, LATIN, lambda: sha)
