"""Tests for text_recognizer.page_options: the page reader's flags, the same in every tool that reads pages."""

from __future__ import annotations

import argparse

from text_recognizer.page_options import MIN_LINE_CONFIDENCE, add_page_reader_arguments


def test_the_flags_default_to_the_readers_defaults() -> None:
    parser = argparse.ArgumentParser()
    add_page_reader_arguments(parser, prefix="with --page: ")
    args = parser.parse_args([])
    assert args.segmenter is None and args.min_line_confidence == MIN_LINE_CONFIDENCE
    assert parser.parse_args(["--segmenter", "classical", "--min-line-confidence", "0"]).min_line_confidence == 0
    assert "with --page: how lines are found" in parser.format_help()
