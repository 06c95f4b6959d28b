"""Settings from environment variables: types, validation with the variable's name, API keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.settings import Settings


def test_values_are_typed_from_the_environment(tmp_path):
    s = Settings.from_env(
        {
            "TEXT_RECOGNIZER_BATCH_SIZE": "4",
            "TEXT_RECOGNIZER_CORS_ORIGINS": "https://a.example, https://b",
            "TEXT_RECOGNIZER_API_KEYS": "k1,,k2",
            "TEXT_RECOGNIZER_RATE_LIMIT": "10 per second",
            "TEXT_RECOGNIZER_ACCESS_LOG": "off",
            "TEXT_RECOGNIZER_CHECKPOINT": "/m.pt",
        }
    )
    assert s.batch_size == 4 and s.checkpoint == Path("/m.pt") and s.access_log is False
    assert s.cors_origins == ("https://a.example", "https://b") and s.api_keys == ("k1", "k2")
    assert s.rate_limit == "10 per second"
    assert Settings.from_env({}) == Settings()  # nothing set: the defaults; access control and CORS off
    assert Settings().load_api_keys() == frozenset() and Settings().cors_origins == ()


@pytest.mark.parametrize(
    "env, words",
    [
        ({"TEXT_RECOGNIZER_BATCH_SIZE": "0"}, "TEXT_RECOGNIZER_BATCH_SIZE must be at least 1"),
        ({"TEXT_RECOGNIZER_MAX_BATCH": "many"}, "TEXT_RECOGNIZER_MAX_BATCH must be an integer"),
        ({"TEXT_RECOGNIZER_RATE_LIMIT": "lots"}, "TEXT_RECOGNIZER_RATE_LIMIT must look like"),
        ({"TEXT_RECOGNIZER_ACCESS_LOG": "maybe"}, "TEXT_RECOGNIZER_ACCESS_LOG must be true or false"),
        ({"TEXT_RECOGNIZER_READINGS": "2"}, "TEXT_RECOGNIZER_READINGS must be 1 or 3"),
    ],
)
def test_bad_values_name_the_variable(env, words):
    with pytest.raises(ValueError, match=words):
        Settings.from_env(env)


def test_key_file(tmp_path):
    keys = tmp_path / "keys"
    keys.write_text("# comment\n  alpha  \n\nbravo\n")
    assert Settings(api_keys=("env",), api_keys_file=keys).load_api_keys() == {"alpha", "bravo", "env"}
    keys.write_text("# only a comment\n")
    with pytest.raises(ValueError, match="holds no key"):
        Settings(api_keys_file=keys).load_api_keys()
    with pytest.raises(ValueError, match="cannot be read"):
        Settings(api_keys_file=tmp_path / "nope").load_api_keys()


def test_batch_size_reaches_the_recognizer(tiny_checkpoint):
    from api.serving import load_serving

    serving = load_serving(Settings(checkpoint=tiny_checkpoint, batch_size=3, workers=1))
    try:
        assert serving.recognizer.batch_size == 3
    finally:
        serving.executor.shutdown()


def test_readings_reach_the_recognizer():
    """The bundled model's bundle has settings for three readings; the server reads with them."""
    from api.serving import load_serving

    assert Settings.from_env({"TEXT_RECOGNIZER_READINGS": "3"}).readings == 3 and Settings().readings == 1
    serving = load_serving(Settings(readings=3, workers=1))
    try:
        assert serving.recognizer.shift > 0
    finally:
        serving.executor.shutdown()


def test_readings_without_settings_for_them_stop_the_start(tmp_path):
    """A bundle tuned for one reading only: the server refuses to start and says why."""
    from api.serving import StartupError, load_serving
    from text_recognizer.decoding.bundle import load_bundle, save_bundle
    from text_recognizer.decoding.readings import SECTION
    from text_recognizer.recognizer import DEFAULT_CHECKPOINT

    bundle = load_bundle(DEFAULT_CHECKPOINT.with_suffix(".decoder.pt"))
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(DEFAULT_CHECKPOINT.read_bytes())
    save_bundle({k: v for k, v in bundle.items() if k != SECTION}, tmp_path / "model.decoder.pt")
    with pytest.raises(StartupError, match="no settings for three readings"):
        load_serving(Settings(checkpoint=checkpoint, readings=3, workers=1))
