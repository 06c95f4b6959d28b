"""Latency and throughput of the HTTP API on loopback, with the model's time shown apart from HTTP.

Usage (from the repository root, as a module: it reuses the tests' server launcher)::

    python -m benchmarks.api_bench                          # an untrained default-size model, 64 px high
    python -m benchmarks.api_bench --checkpoint best.pt     # a real checkpoint
    python -m benchmarks.api_bench --quick --json api.json

It starts ``uvicorn api.app:app`` on a free loopback port, then for single requests
(``POST /v1/predict``, one 64-px-high PNG line) and batch requests (``POST /v1/predict/batch``,
``--batch`` lines) at concurrency 1, 4 and 16 reports client latency p50/p95/p99, throughput, and,
from the times the server returns with every response, the medians of

* ``model``   - forward pass + CTC decoding (``inference_ms``);
* ``prep``    - image decoding + the stem (``preprocess_ms``);
* ``queue``   - waiting for a free inference worker (``queue_ms``);
* ``http``    - everything else: client latency - model - prep - queue (sockets, HTTP parsing,
  multipart, JSON, the event loop, the client itself).

The target is ``http / model < 0.2`` for single requests at concurrency 1. Without
``--checkpoint`` an untrained model of the default architecture at ``--height`` is used: its
weights are random but its compute, and so its timing, is that of a trained one. An in-process
``LineRecognizer.predict_tensors`` timing of the same line is printed as a cross-check of ``model``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import torch
from PIL import Image

from tests.api.conftest import Server  # the same loopback uvicorn launcher as the tests
from text_recognizer.checkpoint import Checkpoint, Provenance, save_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.data.synthetic import render_line
from text_recognizer.models import ModelConfig, build_model
from text_recognizer.recognizer import LineRecognizer

TEXTS = ["the quick brown fox jumps over", "a move to stop Mr. Gaitskell from", "nominating any more Labour life Peers",
         "is to be made at a meeting of", "Labour MPs tomorrow. Mr. Michael Foot", "has put down a resolution on the subject",
         "and he is to be backed by Mr. Will", "Griffiths, MP for Manchester Exchange."]


def untrained_checkpoint(height: int, directory: Path) -> Path:
    codec = Codec()
    config = ModelConfig(height=height, num_classes=codec.num_classes)
    torch.manual_seed(0)
    model = build_model(config)
    bundle = Checkpoint(config, codec, model.state_dict(), provenance=Provenance(data="untrained (benchmark)", epoch=0, step=0))
    return save_checkpoint(bundle, directory / "bench.pt")


def png_lines(height: int) -> list[bytes]:
    out = []
    for i, text in enumerate(TEXTS):
        buffer = io.BytesIO()
        render_line(text, np.random.default_rng(i), height=height).save(buffer, format="PNG")
        out.append(buffer.getvalue())
    return out


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def run(url: str, images: list[bytes], mode: str, concurrency: int, requests: int, batch: int) -> dict:
    def worker(index: int) -> list[dict]:
        rows = []
        with httpx.Client(base_url=url, timeout=120) as http:
            for i in range(index, requests, concurrency):
                if mode == "single":
                    files = {"file": ("line.png", images[i % len(images)], "image/png")}
                    path = "/v1/predict"
                else:
                    files = [("files", (f"{k}.png", images[(i + k) % len(images)], "image/png")) for k in range(batch)]
                    path = "/v1/predict/batch"
                start = time.perf_counter()
                r = http.post(path, files=files)
                latency = (time.perf_counter() - start) * 1000
                if r.status_code != 200:
                    raise RuntimeError(f"{path}: {r.status_code} {r.text[:200]}")
                body = r.json()
                rows.append({"latency": latency, "model": body["inference_ms"], "prep": body["preprocess_ms"], "queue": body["queue_ms"],
                             "server": body["elapsed_ms"]})
        return rows

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        rows = [row for chunk in pool.map(worker, range(concurrency)) for row in chunk]
    wall = time.perf_counter() - start
    lat = [r["latency"] for r in rows]
    http = [r["latency"] - r["model"] - r["prep"] - r["queue"] for r in rows]
    model = [r["model"] for r in rows]
    lines = len(rows) * (1 if mode == "single" else batch)
    return {
        "mode": mode, "concurrency": concurrency, "requests": len(rows),
        "p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95), "p99_ms": percentile(lat, 99),
        "req_per_s": len(rows) / wall, "lines_per_s": lines / wall,
        "model_ms": statistics.median(model), "prep_ms": statistics.median(r["prep"] for r in rows),
        "queue_ms": statistics.median(r["queue"] for r in rows), "http_ms": statistics.median(http),
        "http_over_model": statistics.median(http) / max(statistics.median(model), 1e-9),
    }


def in_process_model_ms(checkpoint: Path, image: bytes, threads: int, repeats: int = 50) -> float:
    torch.set_num_threads(threads)
    recognizer = LineRecognizer(checkpoint)
    tensor = recognizer.preprocess(Image.open(io.BytesIO(image)))
    for _ in range(5):
        recognizer.predict_tensors([tensor])
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        recognizer.predict_tensors([tensor])
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, default=None, help="checkpoint to serve (default: an untrained default-size model)")
    parser.add_argument("--height", type=int, default=64, help="line image height in pixels (and model height without --checkpoint)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16], help="client concurrency levels")
    parser.add_argument("--requests", type=int, default=200, help="requests per (mode, concurrency) cell")
    parser.add_argument("--batch", type=int, default=8, help="lines per batch request")
    parser.add_argument("--quick", action="store_true", help="60 requests per cell")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    requests = 60 if args.quick else args.requests

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = args.checkpoint or untrained_checkpoint(args.height, Path(tmp))
        images = png_lines(args.height)
        server = Server({"TEXT_RECOGNIZER_CHECKPOINT": str(checkpoint), "TEXT_RECOGNIZER_MAX_BATCH": str(max(32, args.batch))})
        try:
            server.wait_healthy(timeout=120)
            health = httpx.get(server.url + "/health").json()
            results = []
            for mode in ("single", "batch"):
                run(server.url, images, mode, 1, 10, args.batch)  # warm-up
                for concurrency in args.concurrency:
                    results.append(run(server.url, images, mode, concurrency, requests, args.batch))
        finally:
            server.stop()
        baseline = in_process_model_ms(checkpoint, images[0], health["torch_threads"])

    widths = [Image.open(io.BytesIO(b)).size for b in images]
    print(f"# API benchmark: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"{health['workers']} worker(s) x {health['torch_threads']} torch thread(s), model {health['model_version']}")
    print(f"# lines {args.height} px high, {min(w for w, _ in widths)}-{max(w for w, _ in widths)} px wide; batch = {args.batch} lines; "
          f"in-process model time for one line: {baseline:.2f} ms\n")
    print("| mode | conc | reqs | p50 ms | p95 ms | p99 ms | req/s | lines/s | model ms | prep ms | queue ms | http ms | http/model |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['mode']} | {r['concurrency']} | {r['requests']} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['p99_ms']:.1f} | "
              f"{r['req_per_s']:.1f} | {r['lines_per_s']:.1f} | {r['model_ms']:.2f} | {r['prep_ms']:.2f} | {r['queue_ms']:.2f} | "
              f"{r['http_ms']:.2f} | {r['http_over_model']:.2f} |")
    target = next(r for r in results if r["mode"] == "single" and r["concurrency"] == min(args.concurrency))
    verdict = "meets" if target["http_over_model"] < 0.2 else "MISSES"
    print(f"\nsingle line, concurrency {target['concurrency']}: HTTP overhead {target['http_ms']:.2f} ms = "
          f"{100 * target['http_over_model']:.0f}% of model time {target['model_ms']:.2f} ms ({verdict} the < 20% target)")
    if args.json:
        args.json.write_text(json.dumps({"health": health, "in_process_model_ms": baseline, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
