"""The manifest of the tiny source the tests make (``conftest.tiny_repo``), with the commit left to fill in."""

MANIFEST = """
name = "tiny"
title = "A tiny collection made by the tests"
repository = "someone/tiny-gt"
commit = "{commit}"
licence = "CC-BY-4.0"
licence_stated_in = ["LICENSE"]
attribution = "Tiny GT, CC-BY-4.0"
language = "fr"
centuries = [19]
script = "Latin"
hands = "2"
kind = "letters"
format = "alto"
include = ["data/*.xml", "data/*.png"]
exclude = ["data/*/page/*"]
document = "folder"
val_fraction = 0.5
pages = 4
lines = 12
"""
