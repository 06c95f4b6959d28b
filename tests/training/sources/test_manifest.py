"""Source manifests: the shipped ones load, name no evaluation source, and bad ones are refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.training.sources.tiny import MANIFEST
from training.sources.manifest import (
    DEFAULT_MANIFEST_DIR,
    FORBIDDEN,
    ManifestError,
    load_source,
    load_sources,
    squeezed,
)

GOOD = MANIFEST.format(commit="0123456789abcdef0123456789abcdef01234567")


def write(folder: Path, text: str, name: str = "tiny") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_manifests_load_and_state_their_licence():
    sources = load_sources(DEFAULT_MANIFEST_DIR)
    assert len(sources) >= 10
    for source in sources:
        assert source.licence_stated_in and source.attribution
        assert source.lines > 0 and source.pages > 0
        assert source.archive_url.endswith(source.commit)


def test_no_shipped_manifest_names_an_evaluation_source():
    for path in sorted(DEFAULT_MANIFEST_DIR.glob("*.toml")):
        text = squeezed(path.read_text(encoding="utf-8"))
        for name in FORBIDDEN:
            assert name not in text, f"{path.name} names {name!r}"


@pytest.mark.parametrize("forbidden", ["banq-dcn/Copiste-d-un-jour", "HTR-United/CREMMA-AN-TestamentsDePoilus",
                                       "jschaefer738b/JosephHookerHTR", "HTR-United/cremma-wikipedia",
                                       "PSL-Chartes-HTR-Students/HN2021-Memorials_Jane_Lathrop_Stanford",
                                       "Copiste d'un jour", "copiste_dun_jour", "chartes/testaments-poilus"])
def test_a_manifest_naming_an_evaluation_source_is_refused(tmp_path, forbidden):
    path = write(tmp_path, GOOD.replace("someone/tiny-gt", forbidden))
    with pytest.raises(ManifestError, match="evaluation source"):
        load_source(path)


@pytest.mark.parametrize("change, message", [
    (("commit = \"0123456789abcdef0123456789abcdef01234567\"", "commit = \"abc\""), "40 lowercase hex"),
    (("licence = \"CC-BY-4.0\"", "licence = \"CC-BY-NC-4.0\""), "a licence we can state"),
    (("format = \"alto\"", "format = \"tei\""), "format must be"),
    (("title = \"A tiny collection made by the tests\"\n", ""), "missing title"),
    (("kind = \"letters\"", "kind = \"letters\"\nweight = 3"), "unknown field"),
    (("name = \"tiny\"", "name = \"other\""), "file's stem"),
    (("centuries = [19]", "centuries = [19"), "not valid TOML"),
])
def test_bad_manifests_name_the_field(tmp_path, change, message):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(ManifestError, match=message):
        load_source(path)


def test_unknown_source_names_the_known_ones(tmp_path):
    write(tmp_path, GOOD)
    with pytest.raises(ManifestError, match="known: tiny"):
        load_sources(tmp_path, ["nope"])
