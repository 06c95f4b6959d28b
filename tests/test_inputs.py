"""Tests for text_recognizer.inputs: files, folders and glob patterns -> image files."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from text_recognizer.inputs import resolve_inputs


def make_tree(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    for name in ("b.png", "a.jpg", "sub/c.png"):
        Image.new("L", (20, 10), 255).save(root / name)
    (root / "labels.tsv").write_text("file\ttext\n")
    (root / "page.xml").write_text("<x/>")


def test_folder_gives_sorted_images_only(tmp_path):
    make_tree(tmp_path)
    resolved = resolve_inputs([tmp_path])
    assert resolved.files == [tmp_path / "a.jpg", tmp_path / "b.png"]
    assert resolved.problems == []


def test_recursive_folder_and_glob(tmp_path):
    make_tree(tmp_path)
    assert resolve_inputs([tmp_path], recursive=True).files == [tmp_path / "a.jpg", tmp_path / "b.png",
                                                                  tmp_path / "sub" / "c.png"]
    assert resolve_inputs([str(tmp_path / "**" / "*.png")]).files == [tmp_path / "b.png", tmp_path / "sub" / "c.png"]


def test_explicit_file_is_kept_whatever_its_suffix_and_duplicates_go(tmp_path):
    make_tree(tmp_path)
    resolved = resolve_inputs([tmp_path / "labels.tsv", tmp_path / "b.png", str(tmp_path / "*.png"), tmp_path])
    assert resolved.files == [tmp_path / "labels.tsv", tmp_path / "b.png", tmp_path / "a.jpg"]


def test_problems_are_reported_not_raised(tmp_path):
    make_tree(tmp_path)
    (tmp_path / "empty").mkdir()
    inputs = [tmp_path / "missing.png", str(tmp_path / "*.gif"), tmp_path / "empty", tmp_path / "b.png"]
    resolved = resolve_inputs(inputs)
    assert resolved.files == [tmp_path / "b.png"]
    reasons = dict(resolved.problems)
    assert reasons[str(tmp_path / "missing.png")] == "no such file or folder"
    assert reasons[str(tmp_path / "*.gif")] == "pattern matches no files"
    assert "no image files" in reasons[str(tmp_path / "empty")]


def test_single_string_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="inputs must be a sequence"):
        resolve_inputs(str(tmp_path))
