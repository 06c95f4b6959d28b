"""Time to cut and cache the lines of a PAGE-XML folder, and to reuse the cache.

    python benchmarks/page_cut_bench.py [--data ../shared/data/iam/val] [--pages 10] [--lines-per-page 20]

Builds ``--pages`` A4 pages at 300 dpi (2480x3508, greyscale PNG) from real IAM lines pasted one
below the other, every other line rotated by up to 3 degrees (so deskewing runs), with a PAGE 2019
file per page giving each line's polygon and baseline. Then it times ``cut_layout_folder`` on an
empty cache (parse, decode the page, cut, mask, deskew, write PNGs and manifest) and again on the
filled cache (hash the files, read the manifest), and prints pages/s and lines/s for both.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from PIL import Image, ImageChops

from text_recognizer.data.folder import read_labels
from text_recognizer.data.page import cut_layout_folder

IAM_VAL = next((p / "shared" / "data" / "iam" / "val" for p in Path(__file__).resolve().parents[1:4]
                if (p / "shared" / "data" / "iam" / "val").is_dir()), Path("../shared/data/iam/val"))
PAGE_NS = "http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"
SIZE = (2480, 3508)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def build_page(records, angle_max: float) -> tuple[Image.Image, str]:
    page = Image.new("L", SIZE, 255)
    xml_lines = []
    y = 120.0
    for number, record in enumerate(records):
        line = Image.open(record.path).convert("L")
        w, h = line.size
        angle = angle_max * (1 if number % 4 == 1 else -1) if number % 2 else 0.0
        c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        tx, ty = 150.0, y

        def forward(qx, qy, c=c, s=s, tx=tx, ty=ty):
            return (c * qx - s * qy + tx, s * qx + c * qy + ty)

        canvas = line.transform(SIZE, Image.Transform.AFFINE, (c, s, -c * tx - s * ty, -s, c, s * tx - c * ty),
                                resample=Image.Resampling.BILINEAR, fillcolor=255)
        page = ImageChops.darker(page, canvas)
        corners = (forward(0, 0), forward(w, 0), forward(w, h), forward(0, h))
        polygon = " ".join(f"{x:.0f},{yy:.0f}" for x, yy in corners)
        baseline = " ".join(f"{x:.0f},{yy:.0f}" for x, yy in (forward(0, 0.75 * h), forward(w, 0.75 * h)))
        xml_lines.append(f'<TextLine id="l{number}"><Coords points="{polygon}"/><Baseline points="{baseline}"/>'
                         f"<TextEquiv><Unicode>{_escape(record.text)}</Unicode></TextEquiv></TextLine>")
        y += h + 60 + w * abs(s)
    xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<PcGts xmlns="{PAGE_NS}"><Metadata><Creator>bench</Creator>'
           f"<Created>2026-11-30T00:00:00</Created><LastChange>2026-11-30T00:00:00</LastChange></Metadata>"
           f'<Page imageFilename="{{name}}" imageWidth="{SIZE[0]}" imageHeight="{SIZE[1]}"><TextRegion id="r">'
           f'<Coords points="0,0 {SIZE[0]},0 {SIZE[0]},{SIZE[1]} 0,{SIZE[1]}"/>' + "".join(xml_lines)
           + "</TextRegion></Page></PcGts>\n")
    return page, xml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=IAM_VAL, help="line folder with labels.tsv (real lines)")
    parser.add_argument("--pages", type=int, default=10, help="pages to build")
    parser.add_argument("--lines-per-page", type=int, default=20, help="lines per page")
    parser.add_argument("--angle", type=float, default=3.0, help="rotation of every other line, degrees")
    args = parser.parse_args()
    records = read_labels(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        folder, cache = Path(tmp) / "pages", Path(tmp) / "cache"
        folder.mkdir()
        for p in range(args.pages):
            chunk = records[p * args.lines_per_page : (p + 1) * args.lines_per_page]
            page, xml = build_page(chunk, args.angle)
            page.save(folder / f"page{p:03d}.png")
            (folder / f"page{p:03d}.xml").write_text(xml.replace("{name}", f"page{p:03d}.png"), encoding="utf-8")
        size_mb = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
        print(f"{args.pages} pages {SIZE[0]}x{SIZE[1]} ({size_mb:.1f} MiB of PNG + PAGE), "
              f"{args.pages * args.lines_per_page} real IAM lines, every other one rotated {args.angle:g} degrees")
        for label in ("cold cache (cut + write)", "warm cache (hash + manifest)"):
            start = time.perf_counter()
            cut = cut_layout_folder(folder, cache_root=cache)
            seconds = time.perf_counter() - start
            n = len(cut.records)
            print(f"{label:<30} {seconds:7.2f} s  {cut.pages / seconds:7.2f} pages/s  {n / seconds:8.1f} lines/s  "
                  f"({n} lines, {len(cut.unreadable) + len(cut.empty)} problems, {cut.cached_pages} pages cached)")


if __name__ == "__main__":
    main()
