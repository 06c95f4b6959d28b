"""Line detection F1 under other vectorisation settings, without running the segmenter again per setting.

    PYTHONPATH=. python benchmarks/vectorize_settings.py --pages copiste=../shared/data/copiste_dun_jour/val \
        --pages sources=data/prepared/*/pages/val --setting MIN_SCORE=0.8,MIN_HEIGHT_SHARE=0,MIN_LENGTH_SHARE=0 \
        --setting MIN_SCORE=0.85 [--segmenter FILE]

Why: the segmenter's network is most of a page's time, and the vectorisation's constants
(``text_recognizer/segmentation/vectorize.py``: the core score floor, the sliver shares, padding, split, reach)
only change what is done with its maps. This computes the maps once per page, then vectorises and scores
(``segmentation.scoring.score_page``, IoU 0.5, the lines each page counts) under each ``--setting``, and prints
precision / recall / F1 per group of pages, pooled over the group's lines. An empty setting (``--setting ""``) is
the module's current constants. How the sliver filter and the 0.85 floor were chosen
(``benchmarks/results/page_reading.md``, fifty-fifth session).
"""

from __future__ import annotations

import argparse
import glob
from pathlib import Path

from text_recognizer.data.folder import open_image
from text_recognizer.segmentation import vectorize as vectorize_module
from text_recognizer.segmentation.learned import LearnedSegmenter, map_darkness, map_ink, working_page
from text_recognizer.segmentation.scoring import detection_scores, score_page
from training.segmenter.page_evaluation import load_page


def parse_setting(text: str) -> dict[str, float]:
    """``"MIN_SCORE=0.85,REACH=2"`` -> ``{"MIN_SCORE": 0.85, "REACH": 2.0}``; names must be the module's constants."""
    setting = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        if not name.isupper() or not hasattr(vectorize_module, name):
            raise SystemExit(f"--setting: {name!r} is not a constant of text_recognizer.segmentation.vectorize")
        setting[name] = float(value)
    return setting


def page_maps(xml: Path, segmenter: LearnedSegmenter) -> dict:
    """One page's maps, ink map and true lines: what scoring a setting needs."""
    page = load_page(xml)
    gray, size = working_page(open_image(page.image), segmenter.work_side)
    region, core = segmenter.maps(gray)
    return {"region": region, "core": core, "ink": map_ink(gray, region.shape) if segmenter.hug_ink else None,
            "darkness": map_darkness(gray, region.shape),
            "size": size, "true": [line.polygon for line in page.lines], "counted": page.counted,
            "regions": page.regions}


def found_polygons(page: dict, threshold: float, setting: dict[str, float]) -> list[list[tuple[float, float]]]:
    """The page's line polygons (page pixels) vectorised with ``setting`` in place of the module's constants."""
    saved = {name: getattr(vectorize_module, name) for name in setting}
    try:
        for name, value in setting.items():
            setattr(vectorize_module, name, value)
        lines = vectorize_module.vectorize(page["region"], page["core"], threshold, page["ink"], page["darkness"])
    finally:
        for name, value in saved.items():
            setattr(vectorize_module, name, value)
    sx, sy = page["size"][0] / page["region"].shape[1], page["size"][1] / page["region"].shape[0]
    return [[(x * sx, y * sy) for x, y in polygon] for polygon, _ in lines]


def detection(pages: list[dict], threshold: float, setting: dict[str, float]) -> dict[str, float]:
    """Precision, recall and F1 pooled over ``pages``' lines."""
    matched = found = true = 0
    for page in pages:
        score = score_page(found_polygons(page, threshold, setting), page["true"], page["size"], page["counted"],
                           page["regions"])
        matched, found, true = matched + score.matched, found + score.found, true + score.true
    return detection_scores(matched, found, true)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1] if __doc__ else None)
    parser.add_argument("--pages", action="append", required=True,
                        help="NAME=FOLDER (a glob of PAGE/ALTO folders allowed); repeat for several groups")
    parser.add_argument("--setting", action="append", default=None,
                        help="NAME=VALUE,... of vectorize's constants; repeat (default: the current constants)")
    parser.add_argument("--segmenter", default=None, help="segmenter weights (default: the bundled one)")
    args = parser.parse_args(argv)
    segmenter = LearnedSegmenter.load(args.segmenter)
    groups: dict[str, list[dict]] = {}
    for spec in args.pages:
        name, _, pattern = spec.partition("=")
        folders = sorted(glob.glob(pattern)) if pattern else []
        if not name or not folders:
            raise SystemExit(f"--pages {spec!r}: expected NAME=FOLDER with at least one folder")
        groups[name] = [page_maps(xml, segmenter) for folder in folders for xml in sorted(Path(folder).glob("*.xml"))]
    for text in args.setting or [""]:
        setting = parse_setting(text)
        scores = {name: detection(pages, segmenter.threshold, setting) for name, pages in groups.items()}
        cells = [f"{name} ({len(groups[name])} pages) {s['precision']:.3f} / {s['recall']:.3f} / {s['f1']:.3f}"
                 for name, s in scores.items()]
        print(f"{text or 'current constants'}: " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
