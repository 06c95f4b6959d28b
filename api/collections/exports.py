"""A collection as files: a ``labels.tsv`` folder of its corrected lines (to fine-tune on), or PAGE-XML / ALTO
pages with the corrected text beside their images; both as one zip archive.

Why a zip: one download for a browser and one response body for the API; the folders inside are the formats
the training commands already read (``text-recognizer-train --finetune ... --data FOLDER``).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from PIL import Image

from api.collections.store import CollectionStore
from text_recognizer.data.linecut import cut_line
from text_recognizer.page_formats import render
from text_recognizer.page_result import PageLine, PageResult

FORMATS = ("labels", "page", "alto")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "page"


def labels_zip(store: CollectionStore, owner: str, collection_id: str) -> bytes:
    """``lines/labels.tsv`` and one PNG per corrected line, cut from its page by its polygon."""
    buffer = io.BytesIO()
    pages: dict[Path, Image.Image] = {}
    rows = ["file\ttext"]
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for index, (image_path, line) in enumerate(store.corrected_lines(owner, collection_id)):
            if not line["text"]:
                continue
            if image_path not in pages:
                with Image.open(image_path) as opened:
                    pages[image_path] = opened.convert("L")
            crop = cut_line(pages[image_path], line["polygon"], line["baseline"])
            png = io.BytesIO()
            crop.save(png, format="PNG")
            name = f"line_{index:05d}.png"
            archive.writestr(f"lines/{name}", png.getvalue())
            rows.append(f"{name}\t{line['text']}")
        archive.writestr("lines/labels.tsv", "\n".join(rows) + "\n")
    return buffer.getvalue()


def layout_zip(store: CollectionStore, owner: str, collection_id: str, fmt: str) -> bytes:
    """``pages/<name>.xml`` (PAGE-XML or ALTO, the corrected text where there is one) beside each page image."""
    collection = store.collection(owner, collection_id)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for position, summary in enumerate(collection["pages"]):
            page = store.page(owner, collection_id, summary["id"])
            image_path, _ = store.page_image(owner, collection_id, summary["id"])
            stem = f"{position + 1:04d}_{_safe(Path(page['filename']).stem)}"
            image_name = f"{stem}{image_path.suffix}"
            lines = tuple(PageLine(id=f"l{i + 1}", polygon=tuple(map(tuple, line["polygon"])),
                                   baseline=tuple(map(tuple, line["baseline"] or [])), text=line["text"],
                                   confidence=1.0 if line["corrected_text"] is not None else line["confidence"])
                          for i, line in enumerate(page["lines"]))
            result = PageResult(image=image_name, width=page["width"], height=page["height"], lines=lines)
            archive.write(image_path, f"pages/{image_name}")
            archive.writestr(f"pages/{stem}.xml", render(result, fmt))
    return buffer.getvalue()
