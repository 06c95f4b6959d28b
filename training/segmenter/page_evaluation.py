"""Score a page reader on a folder of PAGE/ALTO pages: line detection, page CER, and seconds per page.

    python training/evaluate.py --pages --data ../shared/data/stanford_memorials_1905_pages [--json]
    python benchmarks/page_eval.py --pages ../shared/data/copiste_dun_jour/val [--found kraken_xml/] [--json]

Why a page score beside the line CER: a page reader fails in two places, finding the lines and reading them,
and the line CER (lines cut by their true polygons) sees only the second. For every page, this module:

1. reads the true lines (``text_recognizer.data.layout``) and decides which count (``counted_lines``): lines
   with text; on pages whose lines are typed as handwritten or not (SegmOnto ``...:Handwritten`` line types,
   as the Stanford pages have), only the handwritten ones. The texts are normalised as training does
   (``>crossed out<`` marks as ``#``, NFC with look-alikes folded) and detokenised (``cer_natural``'s
   natural spacing);
2. finds the lines (the classical segmenter, or the lines of another tool's PAGE/ALTO files with ``found``)
   and reads them with ``PageReader`` (the cutter and batching of ``--page``);
3. scores them (``text_recognizer.segmentation.scoring.score_page``): one-to-one matching at polygon IoU >= 0.5,
   precision / recall / F1 over the lines that count, found lines on lines that do not count neutral, unmatched
   found lines lying mostly outside every text block ignored (the Copiste pages: their printed notice is not
   transcribed), and the page CER: matched pairs' edit distances, plus every character of the true lines missed
   and of the false lines' readings, over the true lines' characters;
4. reads the same counted lines through their *true* polygons with the same ``PageReader`` (its segmenter
   replaced by the true lines): the true-polygon CER, the best the reader can do with a perfect segmenter.
   ``page CER / true-polygon CER`` is what segmentation costs.

Seconds per page: segmentation alone (the image decoded), and end to end (decode, segment, cut, read), as wall
clock and as this process's CPU time. Wall clock is a measurement only when the machine runs nothing else (on a
shared machine it is an upper bound); CPU time is steadier under sharing but counts every thread's time.
With ``found``, end to end is decode, cut and read (the other tool's segmentation time comes from ``seconds.json``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from text_recognizer.data.folder import open_image
from text_recognizer.data.page import crossed_out_as_hash
from text_recognizer.data.tokenization import detokenize
from text_recognizer.metrics import char_edits
from text_recognizer.normalization import normalizer
from text_recognizer.page_reader import MIN_LINE_CONFIDENCE, PageReader, add_page_reader_arguments
from text_recognizer.stem import oriented_size

if TYPE_CHECKING:
    from text_recognizer.data.layout import LayoutLine, PageLayout

# lxml (text_recognizer.data.layout) and scipy (text_recognizer.segmentation) are the page extra's: they are
# imported where pages are read, so that training/evaluate.py, which adds this module's flags, runs without them.

Point = tuple[float, float]
_NORMALIZE = normalizer("NFC")
_STRUCTURE_TYPE = re.compile(r"structure\s*\{[^}]*?type:\s*([^;}]+)")


def reference_text(text: str) -> str:
    """A true line's text as readings are compared with it: crossed-out marks as ``#`` and NFC (as training
    reads the labels), natural spacing (as ``training/evaluate.py``'s ``cer_natural``)."""
    return detokenize(_NORMALIZE(crossed_out_as_hash(text)))


def reading_text(text: str) -> str:
    """A reading as it is compared: NFC, look-alikes folded (a no-op for a model's own alphabet)."""
    return _NORMALIZE(text)


def line_types(layout: PageLayout) -> list[str]:
    """Per line: its type (ALTO: the ``LABEL`` of the ``OtherTag``s its ``TAGREFS`` name; PAGE: ``type`` in its
    ``custom="structure {type:...}"``), ``""`` where it has none."""
    from lxml import etree

    root = layout.tree.getroot()
    if layout.format == "alto":
        namespace = etree.QName(root).namespace
        labels = {tag.get("ID"): tag.get("LABEL") or "" for tag in root.iter(f"{{{namespace}}}OtherTag")}
        return [" ".join(labels.get(ref, "") for ref in (line.element.get("TAGREFS") or "").split()).strip()
                if line.element is not None else "" for line in layout.lines]
    types = []
    for line in layout.lines:
        match = _STRUCTURE_TYPE.search(line.element.get("custom") or "") if line.element is not None else None
        types.append(match.group(1).strip() if match else "")
    return types


def counted_lines(layout: PageLayout) -> list[bool]:
    """Per line: does it count? Lines with text; where the page types its lines as handwritten or not (any
    type mentions ``handwritten``, as SegmOnto's ``DefaultLine:Handwritten``), only the handwritten ones."""
    types = [t.lower() for t in line_types(layout)]
    typed = any("handwritten" in t for t in types)
    return [bool(line.text and line.text.strip()) and (not typed or "handwritten" in kind)
            for line, kind in zip(layout.lines, types)]


def block_polygons(layout: PageLayout) -> list[list[Point]]:
    """The page's text block outlines (ALTO ``TextBlock`` shapes or boxes, PAGE ``TextRegion`` coords); blocks
    without geometry (eScriptorium's dummy block) are left out."""
    from lxml import etree

    from text_recognizer.data.layout import parse_points

    root = layout.tree.getroot()
    namespace = etree.QName(root).namespace
    polygons = []
    if layout.format == "alto":
        for block in root.iter(f"{{{namespace}}}TextBlock"):
            shape = block.find(f"{{{namespace}}}Shape/{{{namespace}}}Polygon")
            try:
                if shape is not None:
                    polygons.append(parse_points(shape.get("POINTS")))
                    continue
                box = [float(block.get(k)) for k in ("HPOS", "VPOS", "WIDTH", "HEIGHT")]
            except (TypeError, ValueError):
                continue
            x, y, w, h = box
            polygons.append([(x, y), (x + w, y), (x + w, y + h), (x, y + h)])
    else:
        for region in root.iter(f"{{{namespace}}}TextRegion"):
            coords = region.find(f"{{{namespace}}}Coords")
            try:
                points = parse_points(coords.get("points")) if coords is not None else []
            except ValueError:
                continue
            if points:
                polygons.append(points)
    return [polygon for polygon in polygons if len(polygon) >= 3]


@dataclass(frozen=True)
class GivenLine:
    """A line handed to ``PageReader`` as if a segmenter had found it: polygon and baseline in page pixels."""

    polygon: tuple[Point, ...]
    baseline: tuple[Point, ...] = ()


@dataclass
class TruePage:
    """A page's ground truth: its XML and image, the true lines with a polygon, which of them count, their
    compared texts, the text block outlines, and the lines left out (no usable polygon) with why."""

    xml: Path
    image: Path
    lines: list[LayoutLine]
    counted: list[bool]
    references: list[str]
    regions: list[list[Point]]
    skipped: list[tuple[str, str]] = field(default_factory=list)


def load_page(xml: Path) -> TruePage:
    """Read one PAGE/ALTO file and find its image; ``ValueError`` when the image is missing."""
    from text_recognizer.data.layout import read_layout

    layout = read_layout(xml)
    image = layout.find_image()
    if image is None:
        raise ValueError(f"{xml}: page image missing (looked for {', '.join(map(str, layout.image_candidates()))})")
    counted = counted_lines(layout)
    lines, flags, skipped = [], [], []
    for line, counts in zip(layout.lines, counted):
        if not line.polygon or len(line.polygon) < 3:
            skipped.append((line.id, line.polygon_error or "polygon has fewer than 3 points"))
            continue
        lines.append(line)
        flags.append(counts)
    references = [reference_text(line.text or "") for line in lines]
    return TruePage(xml, image, lines, flags, references, block_polygons(layout), skipped)


def found_lines(path: Path) -> list[GivenLine]:
    """The lines of another tool's PAGE/ALTO file (kraken's, say) as found lines."""
    from text_recognizer.data.layout import read_layout

    layout = read_layout(path)
    return [GivenLine(tuple(line.polygon), tuple(line.baseline or ()))
            for line in layout.lines if line.polygon and len(line.polygon) >= 3]


def _timed(segmenter: Callable, seconds: list[tuple[float, float]]) -> Callable:
    """``segmenter``, its (wall, CPU) seconds appended to ``seconds`` at every call."""
    def run(page):
        start, cpu = time.perf_counter(), time.process_time()
        lines = list(segmenter(page))
        seconds.append((time.perf_counter() - start, time.process_time() - cpu))
        return lines
    return run


def default_segmenter() -> Callable:
    from text_recognizer.segmentation.choose import load_segmenter

    return load_segmenter()


def evaluate_page(page: TruePage, recognizer=None, segmenter: Callable | None = None,
                  found: Sequence[GivenLine] | None = None, true_polygons: bool = True,
                  decoder: str | None = None, match_iou: float = 0.5,
                  min_confidence: float = MIN_LINE_CONFIDENCE) -> dict:
    """Score one page (see the module's docstring). ``recognizer=None``: detection only (no reading, no CER).
    ``found``: these lines instead of running ``segmenter`` (default: the package's, ``load_segmenter()``)."""
    from text_recognizer.segmentation.scoring import score_page

    segment_seconds: list[tuple[float, float]] = []
    segmenter = (lambda _: list(found)) if found is not None else (segmenter or default_segmenter())
    timed = _timed(segmenter, segment_seconds)
    start, cpu = time.perf_counter(), time.process_time()
    if recognizer is not None:
        result = PageReader(recognizer, timed, min_confidence=min_confidence).read(page.image, decoder=decoder)
        size = (result.width, result.height)
        polygons = [line.polygon for line in result.lines]
        readings: list[str] | None = [reading_text(line.text) for line in result.lines]
    else:
        image = open_image(page.image)
        size = oriented_size(image)
        polygons = [item.polygon for item in timed(image)]
        readings = None
    end_to_end = (time.perf_counter() - start, time.process_time() - cpu)
    score = score_page(polygons, [line.polygon for line in page.lines], size, page.counted, page.regions,
                       readings, page.references if readings is not None else None, threshold=match_iou)
    record = {"page": page.xml.stem, "found": score.found, "true": score.true, "matched": score.matched,
              "neutral": score.neutral, "ignored": score.ignored, "edits": score.edits,
              "characters": score.characters,
              "segment_seconds": segment_seconds[0][0] if found is None else None,
              "segment_cpu_seconds": segment_seconds[0][1] if found is None else None,
              "end_to_end_seconds": end_to_end[0] if recognizer is not None else None,
              "end_to_end_cpu_seconds": end_to_end[1] if recognizer is not None else None}
    if recognizer is not None and true_polygons:
        record.update(read_true_polygons(page, recognizer, decoder))
    return record


def read_true_polygons(page: TruePage, recognizer, decoder: str | None = None) -> dict:
    """The counted lines read through their true polygons (same cutter and batching): edits and seconds. Every
    line is kept, however low its confidence (``min_confidence=0``): the reader with a perfect segmenter."""
    chosen = [i for i, counts in enumerate(page.counted) if counts]
    given = [GivenLine(tuple(page.lines[i].polygon), tuple(page.lines[i].baseline or ())) for i in chosen]
    start = time.perf_counter()
    reader = PageReader(recognizer, lambda _: given, min_confidence=0.0)
    result = reader.read(page.image, decoder=decoder) if given else None
    seconds = time.perf_counter() - start
    texts = [reading_text(line.text) for line in result.lines] if result is not None else []
    edits = sum(char_edits(page.references[i], text) for i, text in zip(chosen, texts))
    return {"true_polygon_edits": edits, "true_polygon_seconds": seconds}


def _mean(values: Sequence[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def evaluate_pages(folder: str | Path, recognizer=None, segmenter: Callable | None = None,
                   found_dir: str | Path | None = None, true_polygons: bool = True, decoder: str | None = None,
                   limit: int | None = None, progress: Callable[[dict], None] | None = None,
                   match_iou: float = 0.5, segmenter_name: str | None = None,
                   min_confidence: float = MIN_LINE_CONFIDENCE) -> dict:
    """Score a page reader on every PAGE/ALTO file of ``folder`` (the first ``limit``); see the module's docstring.

    ``found_dir``: a folder of PAGE/ALTO files named like the pages' (``<page stem>.xml``), whose lines are the
    found lines (another segmenter's output); its optional ``seconds.json`` (``{page stem: seconds}`` or
    ``{page stem: {"wall": seconds, "cpu": seconds}}``) gives that segmenter's time per page. Returns the totals
    and a record per page (``per_page``)."""
    folder = Path(folder)
    xmls = sorted(folder.glob("*.xml"))[:limit]
    if not xmls:
        raise ValueError(f"{folder} holds no PAGE or ALTO files (*.xml)")
    found_dir = Path(found_dir) if found_dir is not None else None
    given_seconds = {}
    if found_dir is not None and (found_dir / "seconds.json").is_file():
        given_seconds = json.loads((found_dir / "seconds.json").read_text(encoding="utf-8"))
    records, skipped = [], []
    for xml in xmls:
        page = load_page(xml)
        skipped += [{"line": f"{xml.name}#{line}", "reason": reason} for line, reason in page.skipped]
        found = None
        if found_dir is not None:
            path = found_dir / xml.name
            if not path.is_file():
                raise ValueError(f"{path}: no found lines for page {xml.name}")
            found = found_lines(path)
        record = evaluate_page(page, recognizer, segmenter, found, true_polygons, decoder, match_iou, min_confidence)
        if found is not None:
            given = given_seconds.get(xml.stem)
            record["segment_seconds"] = given.get("wall") if isinstance(given, dict) else given
            record["segment_cpu_seconds"] = given.get("cpu") if isinstance(given, dict) else None
        records.append(record)
        if progress is not None:
            progress(record)
    if found_dir is not None:
        name = f"found: {found_dir}"
    elif segmenter_name is not None or segmenter is None:
        from text_recognizer.segmentation.choose import default_name

        name = segmenter_name or default_name()
    else:
        name = getattr(segmenter, "__name__", type(segmenter).__name__)
    result = summarize(records, skipped, name, read=recognizer is not None,
                       true_polygons=recognizer is not None and true_polygons)
    result["match_iou"] = match_iou
    return result


def summarize(records: list[dict], skipped: list[dict], segmenter: str, read: bool, true_polygons: bool) -> dict:
    """Totals over the page records: P/R/F1, page CER, true-polygon CER, their ratio, mean seconds per page."""
    from text_recognizer.segmentation.scoring import detection_scores

    total = {key: sum(r[key] for r in records) for key in ("found", "true", "matched", "neutral", "ignored",
                                                           "edits", "characters")}
    result = {"pages": len(records), "segmenter": segmenter, **total,
              **detection_scores(total["matched"], total["found"], total["true"]),
              "page_cer": None, "true_polygon_cer": None, "cer_ratio": None,
              "segment_seconds_per_page": _mean([r["segment_seconds"] for r in records]),
              "segment_cpu_seconds_per_page": _mean([r["segment_cpu_seconds"] for r in records]),
              "end_to_end_seconds_per_page": _mean([r["end_to_end_seconds"] for r in records]),
              "end_to_end_cpu_seconds_per_page": _mean([r["end_to_end_cpu_seconds"] for r in records]),
              "true_polygon_seconds_per_page": None}
    characters = total["characters"]
    if read and characters:
        result["page_cer"] = total["edits"] / characters
    if true_polygons and characters:
        edits = sum(r["true_polygon_edits"] for r in records)
        result["true_polygon_cer"] = edits / characters
        result["true_polygon_seconds_per_page"] = _mean([r["true_polygon_seconds"] for r in records])
        if edits:
            result["cer_ratio"] = result["page_cer"] / result["true_polygon_cer"]
    result["skipped_lines"] = skipped
    result["per_page"] = records
    return result


# --- the command line (training/evaluate.py --pages and benchmarks/page_eval.py) -------------------------------


def add_page_arguments(parser: argparse.ArgumentParser) -> None:
    """The page-evaluation flags both commands share."""
    group = parser.add_argument_group("pages")
    group.add_argument("--found", type=Path, default=None,
                       help="folder of PAGE/ALTO files (<page>.xml) from another segmenter: score and read their "
                            "lines instead of running ours (optional seconds.json: {page: segmentation seconds})")
    add_page_reader_arguments(group)  # --segmenter, --min-line-confidence (detection-only scores every found line)
    group.add_argument("--detection-only", action="store_true",
                       help="line detection only: no reading, no CER (fast)")
    group.add_argument("--no-true-polygons", action="store_true",
                       help="do not read the lines through their true polygons (no true-polygon CER, no ratio)")
    group.add_argument("--limit", type=int, default=None, help="the first N pages only (sorted by file name)")
    group.add_argument("--match-iou", type=float, default=0.5,
                       help="polygon IoU at which a found line matches a true one (0.5: the issue's and the READMEs')")


def _number(value, form: str) -> str:
    return "-" if value is None else format(value, form)


def format_table(result: dict) -> str:
    """A row per page, then the totals, as text."""
    rows = ["page\tfound\ttrue\tmatched\tneutral\tignored\tpage_cer\ttrue_cer\tseg_s\tend_to_end_s"]
    for r in result["per_page"]:
        page_cer = r["edits"] / r["characters"] if r["characters"] and result["page_cer"] is not None else None
        true_cer = (r["true_polygon_edits"] / r["characters"]
                    if r["characters"] and "true_polygon_edits" in r else None)
        rows.append(f"{r['page']}\t{r['found']}\t{r['true']}\t{r['matched']}\t{r['neutral']}\t{r['ignored']}\t"
                    f"{_number(page_cer, '.3f')}\t{_number(true_cer, '.3f')}\t{_number(r['segment_seconds'], '.2f')}\t"
                    f"{_number(r['end_to_end_seconds'], '.2f')}")
    rows.append(
        f"{result['pages']} pages, segmenter {result['segmenter']}, IoU >= {result.get('match_iou', 0.5):g}: "
        f"precision {result['precision']:.3f}  recall {result['recall']:.3f}  F1 {result['f1']:.3f}  "
        f"({result['matched']} matched, {result['found']} found, "
        f"{result['true']} true; {result['neutral']} neutral, {result['ignored']} ignored)")
    if result["page_cer"] is not None:
        rows.append(f"page CER {result['page_cer']:.4f}  true-polygon CER {_number(result['true_polygon_cer'], '.4f')}"
                    f"  ratio {_number(result['cer_ratio'], '.2f')}  ({result['characters']} true characters)")
    rows.append(f"seconds per page (wall / CPU): segmentation {_number(result['segment_seconds_per_page'], '.2f')} / "
                f"{_number(result['segment_cpu_seconds_per_page'], '.2f')}, end to end "
                f"{_number(result['end_to_end_seconds_per_page'], '.2f')} / "
                f"{_number(result['end_to_end_cpu_seconds_per_page'], '.2f')}, true polygons read "
                f"{_number(result['true_polygon_seconds_per_page'], '.2f')} "
                "(wall: upper bounds unless the machine is idle)")
    return "\n".join(rows)


def run_from_args(args, recognizer_factory: Callable[[], object], folder: Path) -> dict:
    """Evaluate ``folder`` as the page flags say (the recognizer built only when lines are read)."""
    recognizer = None if args.detection_only else recognizer_factory()
    if not 0.0 < args.match_iou <= 1.0:
        raise ValueError(f"--match-iou must be in (0, 1], got {args.match_iou}")
    from text_recognizer.segmentation.choose import default_name, load_segmenter

    segmenter = None if args.found is not None else load_segmenter(args.segmenter)
    return evaluate_pages(folder, recognizer, segmenter, found_dir=args.found, true_polygons=not args.no_true_polygons,
                          limit=args.limit, match_iou=args.match_iou, segmenter_name=args.segmenter or default_name(),
                          min_confidence=args.min_line_confidence)


def run_and_print(args, recognizer_factory: Callable[[], object], folder: Path,
                  errors: tuple[type[BaseException], ...] = (ValueError,)) -> int:
    """Evaluate ``folder`` (``run_from_args``), print the skipped lines on stderr and the table (or JSON with
    ``args.json``) on stdout; ``errors`` are printed as ``error:`` with exit status 2. Both page commands'
    ``main``."""
    try:
        result = run_from_args(args, recognizer_factory, folder)
    except errors as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for item in result["skipped_lines"]:
        print(f"skipped {item['line']}: {item['reason']}", file=sys.stderr)
    result["decoder"] = None if args.detection_only else args.decoder
    print(json_result(result) if args.json else format_table(result))
    return 0


def json_result(result: dict) -> str:
    return json.dumps(result, ensure_ascii=False)
