"""Preparing a fetched source: lines cut and labelled by the guideline, split by document, pages for the segmenter."""

from __future__ import annotations

import dataclasses
import json

import pytest
from PIL import Image

from text_recognizer.data.folder import read_labels
from text_recognizer.data.layout import read_layout
from training.sources.cli import main as data_main
from training.sources.fetch import fetch_source
from training.sources.manifest import load_sources
from training.sources.prepare import PREPARED, PrepareError, prepare_source, split_documents


@pytest.fixture
def fetched(tiny_repo, tmp_path):
    source = load_sources(tiny_repo["manifests"])[0]
    fetch_source(source, tmp_path, tiny_repo["bare"])
    return source, tmp_path


def test_lines_are_cut_labelled_and_split_by_document(fetched):
    source, root = fetched
    report = prepare_source(source, root, height=40)
    out = root / "prepared" / "tiny"
    train, val = read_labels(out / "train"), read_labels(out / "val")
    # 4 pages x 3 lines; the "[?]" line of each page is left out by the guideline
    assert len(train) + len(val) == 8 and len(train) == len(val) == 4
    assert {r.text for r in train} == {"Mr Baudelot # le 1er", "soeur & cousine"}
    assert report["left_out"] == {"unread or doubtful text": 4}
    assert report["documents"] == {"train": ["data/letters-a"], "val": ["data/letters-b"]} or \
        report["documents"] == {"train": ["data/letters-b"], "val": ["data/letters-a"]}
    rows = (out / "val" / "labels.tsv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "file\ttext\tdocument\tpage"
    assert all(row.split("\t")[2] == report["documents"]["val"][0] for row in rows[1:])
    with Image.open(out / "train" / train[0].path.name) as image:
        assert image.mode == "L" and image.height == 40
    assert json.loads((out / PREPARED).read_text(encoding="utf-8"))["lines"] == {"train": 4, "val": 4}


def test_pages_for_the_segmenter_keep_their_own_image(fetched):
    source, root = fetched
    prepare_source(source, root)
    pages = root / "prepared" / "tiny" / "pages"
    xmls = sorted(pages.glob("*/*.xml"))
    assert len(xmls) == 4
    for xml in xmls:
        layout = read_layout(xml)
        assert layout.find_image() == xml.with_suffix(".png")  # renamed with the page: no two share a name
        assert len(layout.lines) == 3


def test_the_split_is_stable_and_a_new_document_moves_no_other(fetched):
    source, _ = fetched
    source = dataclasses.replace(source, val_fraction=0.2)
    documents = [f"doc{i}" for i in range(20)]
    first = split_documents(documents, source)
    assert first == split_documents(list(reversed(documents)), source)
    assert sum(v == "val" for v in first.values()) == 4
    more = split_documents(documents + ["doc-new"], source)
    moved = [d for d in documents if first[d] != more[d]]
    assert len(moved) <= 1  # at most the document pushed out of val by the newcomer


def test_val_documents_pin_the_split(fetched):
    source, root = fetched
    pinned = dataclasses.replace(source, val_documents=("data/letters-a",))
    assert prepare_source(pinned, root)["documents"]["val"] == ["data/letters-a"]
    wrong = dataclasses.replace(source, val_documents=("data/none",))
    with pytest.raises(PrepareError, match="val_documents not in the source"):
        prepare_source(wrong, root)


def test_prepare_refuses_unfetched_or_other_commit(tiny_repo, tmp_path):
    source = load_sources(tiny_repo["manifests"])[0]
    with pytest.raises(PrepareError, match="not fetched"):
        prepare_source(source, tmp_path)
    fetch_source(source, tmp_path, tiny_repo["bare"])
    with pytest.raises(PrepareError, match="fetch it again"):
        prepare_source(dataclasses.replace(source, commit="e" * 40), tmp_path)


def test_the_command_fetches_prepares_and_tabulates(tiny_repo, tmp_path, capsys):
    common = ["--manifests", str(tiny_repo["manifests"]), "--root", str(tmp_path)]
    data_main([*common, "fetch", "tiny", "--from", str(tiny_repo["bare"])])
    data_main([*common, "prepare", "--all", "--workers", "2"])
    data_main([*common, "table"])
    out = capsys.readouterr().out
    assert "tiny: 8 files, 0 missing" in out
    assert "tiny: 4 train / 4 val lines, 4 left out (unread or doubtful text: 4)" in out
    assert "| tiny | CC-BY-4.0 | fr | 19th | 1 / 1 | 4 | 4 / 4 | 4 | 0 |" in out
    with pytest.raises(SystemExit) as stop:
        data_main([*common, "fetch", "nope"])
    assert stop.value.code == 2
    assert "unknown source(s) nope" in capsys.readouterr().err
