"""Segment a folder of page images with kraken's baseline segmenter and its bundled default model (``blla.mlmodel``),
writing ``<page>.xml`` (ALTO) per page and ``seconds.json`` (``{page: {"wall": s, "cpu": s}}``: segmentation
time per page, wall clock and this process's CPU time), for
``benchmarks/page_eval.py --found OUT`` to score and read.

Runs in a separate environment with kraken installed (kraken 7.1.1 pins ``torch<=2.14``, the project uses
2.14.1, so installing it beside the project would replace torch); see benchmarks/results/page_reading.md for
how that environment was made:

    OMP_NUM_THREADS=1 /tmp/kraken-venv/bin/python benchmarks/kraken_segment.py PAGES_DIR OUT_DIR

It does what ``kraken -a -i PAGE OUT.xml segment -bl`` does (the same model, configuration and ALTO
serialisation), with the model loaded once and each page's segmentation timed alone (the image already
decoded). The pages are those with an ALTO/PAGE file in ``PAGES_DIR``; each image is the file with the XML's
stem and an image suffix.
"""

from __future__ import annotations

import argparse
import json
import time
from importlib import resources
from pathlib import Path

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff")


def page_images(folder: Path) -> list[Path]:
    images = []
    for xml in sorted(folder.glob("*.xml")):
        image = next((p for p in sorted(folder.glob(f"{xml.stem}.*")) if p.suffix.lower() in IMAGE_SUFFIXES), None)
        if image is not None:
            images.append(image)
    return images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", type=Path, help="folder of page images with their PAGE/ALTO files")
    parser.add_argument("out", type=Path, help="folder for <page>.xml (ALTO) and seconds.json")
    parser.add_argument("--model", type=Path, default=None, help="segmentation model (default: kraken's blla.mlmodel)")
    parser.add_argument("--limit", type=int, default=None, help="the first N pages only")
    args = parser.parse_args()

    import torch
    from kraken import serialization
    from kraken.configs import SegmentationInferenceConfig
    from kraken.lib.util import open_image
    from kraken.tasks import SegmentationTaskModel

    torch.set_num_threads(1)
    model_path = args.model or Path(str(resources.files("kraken").joinpath("blla.mlmodel")))
    model = SegmentationTaskModel.load_model(model_path)
    # what `kraken -d cpu --threads 1 segment -bl` passes: accelerator "cpu", devices "auto", float32, one thread
    config = SegmentationInferenceConfig(accelerator="cpu", device="auto", precision="32-true", num_threads=1)
    args.out.mkdir(parents=True, exist_ok=True)
    seconds = {}
    for image_path in page_images(args.pages)[: args.limit]:
        image = open_image(str(image_path))
        image.load()
        start, cpu = time.perf_counter(), time.process_time()
        result = model.predict(im=image, config=config)
        seconds[image_path.stem] = {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu}
        xml = serialization.serialize(result, image_size=image.size, template="alto", template_source="native")
        (args.out / f"{image_path.stem}.xml").write_text(xml, encoding="utf-8")
        print(f"{image_path.stem}\t{len(result.lines)} lines\t{seconds[image_path.stem]['wall']:.2f} s "
              f"({seconds[image_path.stem]['cpu']:.2f} CPU s)", flush=True)
        (args.out / "seconds.json").write_text(json.dumps(seconds, indent=1), encoding="utf-8")
    count = max(1, len(seconds))
    print(f"{len(seconds)} pages, {sum(s['wall'] for s in seconds.values()) / count:.2f} s/page, "
          f"{sum(s['cpu'] for s in seconds.values()) / count:.2f} CPU s/page ({model_path.name})")


if __name__ == "__main__":
    main()
