"""A tqdm progress bar on stderr, or a stand-in with the same methods when the bar is off or tqdm is missing.

Why: the CLI's loops (lines, pages, PAGE files) show progress only for long runs and must work in the base install,
which lacks tqdm; with one stand-in their code reads the same either way.
"""

from __future__ import annotations

import sys

#: More input files than this show a progress bar with ``--progress auto`` (the line and page CLIs).
PROGRESS_THRESHOLD = 5


class NoBar:
    """Stands in for a tqdm bar when the bar is off or tqdm is not installed (the base install lacks it)."""

    def __enter__(self) -> NoBar:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None

    @staticmethod
    def write(text: str, file=None) -> None:
        print(text, file=file or sys.stderr)


def progress_bar(total: int, show: bool, unit: str = "line"):
    if show:
        try:
            from tqdm import tqdm
        except ImportError:
            return NoBar()
        return tqdm(total=total, unit=unit, file=sys.stderr, dynamic_ncols=True)
    return NoBar()
