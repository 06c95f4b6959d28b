"""Checks a labelled dataset before training: unknown characters, unreadable images, CTC feasibility.

A sample is infeasible when the model's frame count for its image width is smaller than
``len(label) + adjacent repeats`` (see ``text_recognizer.ctc.feasibility``): its CTC loss would
be ``+inf``. These checks read only image headers, so they are cheap enough to run at load time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from text_recognizer.codec import Codec
from text_recognizer.ctc.feasibility import required_frames
from text_recognizer.data.folder import LineRecord, image_size
from text_recognizer.models.line_cnn import WindowGeometry

POLICIES = ("skip", "error")


class DataCheckError(ValueError):
    """The dataset has bad samples and the policy is ``error``."""


@dataclass
class DataReport:
    """What a check found: the kept records and, per problem, ``(file, reason)`` pairs."""

    kept: list[LineRecord] = field(default_factory=list)
    unknown_characters: list[tuple[str, str]] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    infeasible: list[tuple[str, str]] = field(default_factory=list)
    empty_labels: list[tuple[str, str]] = field(default_factory=list)

    @property
    def problems(self) -> dict[str, list[tuple[str, str]]]:
        return {
            "unknown characters": self.unknown_characters,
            "unreadable image": self.unreadable,
            "infeasible for CTC": self.infeasible,
            "empty label": self.empty_labels,
        }

    @property
    def num_skipped(self) -> int:
        return sum(len(v) for v in self.problems.values())

    def summary(self, limit: int = 10) -> str:
        """Human-readable report: counts, then up to ``limit`` examples per problem."""
        lines = [f"{len(self.kept)} samples kept, {self.num_skipped} with problems"]
        for name, items in self.problems.items():
            if items:
                lines.append(f"  {name}: {len(items)}")
                lines += _examples(items, limit, indent="    ")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"kept": len(self.kept), **{k.replace(" ", "_"): len(v) for k, v in self.problems.items()}}


def check_records(
    records: Sequence[LineRecord],
    codec: Codec,
    geometry: WindowGeometry,
    height: int,
    policy: str = "skip",
    allow_empty: bool = False,
) -> DataReport:
    """Sort records into kept and problematic; with ``policy="error"`` raise if any is bad."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    report = DataReport()
    for record in records:
        name = str(record.path)
        unknown = codec.unknown_characters(record.text)
        if unknown:
            report.unknown_characters.append((name, f"characters not in the character set: {unknown!r}"))
            continue
        if not record.text and not allow_empty:
            report.empty_labels.append((name, "label is empty"))
            continue
        try:
            width, image_height = image_size(record.path)
        except ValueError as error:
            report.unreadable.append((name, str(error)))
            continue
        if width == 0 or image_height == 0:
            report.unreadable.append((name, f"image has no pixels ({width}x{image_height})"))
            continue
        frames = geometry.num_frames(max(1, round(width * height / image_height)))
        needed = required_frames(record.text)
        if frames < needed:
            report.infeasible.append((name, f"{frames} frames for a label needing {needed}: {record.text!r}"))
            continue
        report.kept.append(record)
    if policy == "error" and report.num_skipped:
        raise DataCheckError("dataset check failed (use --bad-samples skip to drop them):\n" + report.summary())
    return report


def report_table(reports: dict[str, DataReport], limit: int = 5) -> str:
    """The feasibility report of several datasets as one table (one row per dataset), then up to
    ``limit`` examples of each problem, so a run's log shows what was checked and what was dropped."""
    columns = ["kept", *DataReport().problems]
    width = max([len("dataset"), *(len(name) for name in reports)])
    header = f"{'dataset':<{width}}  " + "  ".join(f"{c:>{max(len(c), 6)}}" for c in columns)
    lines = [header, "-" * len(header)]
    for name, report in reports.items():
        counts = [len(report.kept), *(len(v) for v in report.problems.values())]
        lines.append(f"{name:<{width}}  " + "  ".join(f"{n:>{max(len(c), 6)}}" for c, n in zip(columns, counts)))
    for name, report in reports.items():
        for problem, items in report.problems.items():
            if items:
                lines.append(f"{name}: {problem}:")
                lines += _examples(items, limit, indent="  ")
    return "\n".join(lines)


def _examples(items: list[tuple[str, str]], limit: int, indent: str) -> list[str]:
    """Up to ``limit`` ``file: reason`` lines, then how many more there are."""
    lines = [f"{indent}{file}: {reason}" for file, reason in items[:limit]]
    if len(items) > limit:
        lines.append(f"{indent}... and {len(items) - limit} more")
    return lines
