"""Latency and throughput of the HTTP API on loopback, with the model's time shown apart from HTTP.

Usage (from the repository root, as a module: it reuses the tests' server launcher)::

    python -m benchmarks.api_bench                          # an untrained default-size model, 64 px high
    python -m benchmarks.api_bench --checkpoint best.pt     # a real checkpoint
    python -m benchmarks.api_bench --quick --json api.json
    python -m benchmarks.api_bench --checkpoint text_recognizer/artifacts/default.pt --processes 1 2 \
        --modes single --concurrency 1 4 16 64 --soak 5000     # worker processes and memory over 5,000 requests

For each ``--processes`` count it starts ``python -m api.serve --workers N`` on a free loopback
port (each process gets CPUs // N inference threads), then for single requests
(``POST /v1/predict``, one PNG line) and batch requests (``POST /v1/predict/batch``, ``--batch``
lines) at each concurrency reports client latency p50/p95/p99, throughput, and, from the times the
server returns with every response, the medians of

* ``model``   - forward pass + CTC decoding (``inference_ms``);
* ``prep``    - image decoding + the stem (``preprocess_ms``);
* ``queue``   - waiting for a free inference worker (``queue_ms``);
* ``http``    - everything else: client latency - model - prep - queue (sockets, HTTP parsing,
  multipart, JSON, the event loop, the client itself).

The target is ``http / model < 0.2`` for single requests at concurrency 1. Without
``--checkpoint`` an untrained model of the default architecture at ``--height`` is used: its
weights are random but its compute, and so its timing, is that of a trained one. An in-process
``LineRecognizer.predict_tensors`` timing of the same line is printed as a cross-check of ``model``.

With ``--soak N`` the memory of every worker process (RSS, and PSS: shared library pages divided
among the processes that map them) is read from ``/proc`` after the first 500 requests and again
once the server has answered N; RSS must stay within 10% of its value at 500.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import torch
from PIL import Image

from tests.api.conftest import ROOT, Server  # the same loopback uvicorn launcher as the tests
from text_recognizer.checkpoint import Checkpoint, Provenance, save_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.data.synthetic import render_line
from text_recognizer.models import ModelConfig, build_model
from text_recognizer.recognizer import LineRecognizer

TEXTS = [
    "the quick brown fox jumps over",
    "a move to stop Mr. Gaitskell from",
    "nominating any more Labour life Peers",
    "is to be made at a meeting of",
    "Labour MPs tomorrow. Mr. Michael Foot",
    "has put down a resolution on the subject",
    "and he is to be backed by Mr. Will",
    "Griffiths, MP for Manchester Exchange.",
]


def untrained_checkpoint(height: int, directory: Path) -> Path:
    codec = Codec()
    config = ModelConfig(height=height, num_classes=codec.num_classes)
    torch.manual_seed(0)
    model = build_model(config)
    bundle = Checkpoint(
        config, codec, model.state_dict(), provenance=Provenance(data="untrained (benchmark)", epoch=0, step=0)
    )
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
                rows.append(
                    {
                        "latency": latency,
                        "model": body["inference_ms"],
                        "prep": body["preprocess_ms"],
                        "queue": body["queue_ms"],
                        "server": body["elapsed_ms"],
                    }
                )
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
        "mode": mode,
        "concurrency": concurrency,
        "requests": len(rows),
        "p50_ms": percentile(lat, 50),
        "p95_ms": percentile(lat, 95),
        "p99_ms": percentile(lat, 99),
        "req_per_s": len(rows) / wall,
        "lines_per_s": lines / wall,
        "model_ms": statistics.median(model),
        "prep_ms": statistics.median(r["prep"] for r in rows),
        "queue_ms": statistics.median(r["queue"] for r in rows),
        "http_ms": statistics.median(http),
        "http_over_model": statistics.median(http) / max(statistics.median(model), 1e-9),
    }


def wait_all_loaded(server: Server, processes: int, timeout: float = 120.0) -> None:
    """Readiness is per process: wait until every worker has logged that its model is loaded."""
    deadline = time.monotonic() + timeout
    while server.log().count("text_recognizer.api: serving ") < processes:
        if time.monotonic() > deadline:
            raise RuntimeError(f"not all {processes} workers loaded the model:\n{server.log()[-3000:]}")
        time.sleep(0.2)


def worker_pids(server_pid: int, processes: int) -> list[int]:
    """The processes that serve requests: the server itself, or its children minus multiprocessing's tracker."""
    if processes == 1:
        return [server_pid]
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if parent == server_pid and b"resource_tracker" not in command:
            children.append(int(stat.parent.name))
    return sorted(children)


def memory_mib(pid: int) -> dict:
    """RSS and PSS of one process, MiB (PSS splits shared pages among the processes mapping them)."""
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("Rss", "Pss"):
            out[key.lower()] = int(line.split()[1]) / 1024
    return out


def load(url: str, images: list[bytes], count: int, concurrency: int = 8) -> None:
    """``count`` single-line requests, only to age the server (their timings are not reported)."""
    run(url, images, "single", concurrency, count, 1)


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
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--checkpoint", type=Path, default=None, help="checkpoint to serve (default: an untrained default-size model)"
    )
    parser.add_argument(
        "--height", type=int, default=64, help="line image height in pixels (and model height without --checkpoint)"
    )
    parser.add_argument("--processes", type=int, nargs="+", default=[1], help="server worker processes to compare")
    parser.add_argument("--modes", nargs="+", default=["single", "batch"], choices=["single", "batch"])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16], help="client concurrency levels")
    parser.add_argument("--requests", type=int, default=200, help="requests per (mode, concurrency) cell")
    parser.add_argument("--batch", type=int, default=8, help="lines per batch request")
    parser.add_argument("--soak", type=int, default=0, help="read worker memory after 500 and after this many requests")
    parser.add_argument("--quick", action="store_true", help="60 requests per cell")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    requests = 60 if args.quick else args.requests
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

    results, memory = [], []
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = args.checkpoint or untrained_checkpoint(args.height, Path(tmp))
        images = png_lines(args.height)
        for processes in args.processes:
            env = {
                **os.environ,
                "PYTHONPATH": str(ROOT),
                "TEXT_RECOGNIZER_CHECKPOINT": str(checkpoint),
                "TEXT_RECOGNIZER_MAX_BATCH": str(max(32, args.batch)),
                "TEXT_RECOGNIZER_WORKERS": str(max(1, cpus // processes)),
            }
            server = Server(
                env, command=[sys.executable, "-m", "api.serve", "--workers", str(processes), "--log-level", "warning"]
            )
            try:
                server.wait_healthy(timeout=120)
                wait_all_loaded(server, processes)
                health = httpx.get(server.url + "/health").json()
                served = 0
                if args.soak:
                    load(server.url, images, 500)
                    served = 500
                    at_500 = {pid: memory_mib(pid) for pid in worker_pids(server.pid, processes)}
                for mode in args.modes:
                    run(server.url, images, mode, 1, 10, args.batch)  # warm-up
                    served += 10
                    for concurrency in args.concurrency:
                        row = run(server.url, images, mode, concurrency, requests, args.batch)
                        results.append({"processes": processes, **row})
                        served += row["requests"]
                if args.soak:
                    load(server.url, images, max(0, args.soak - served), concurrency=16)
                    for pid, first in at_500.items():
                        last = memory_mib(pid)
                        memory.append(
                            {
                                "processes": processes,
                                "pid": pid,
                                "requests": max(args.soak, served),
                                "rss_500": first["rss"],
                                "rss_end": last["rss"],
                                "pss_500": first["pss"],
                                "pss_end": last["pss"],
                                "growth": last["rss"] / first["rss"] - 1,
                            }
                        )
            finally:
                server.stop()
        baseline = in_process_model_ms(checkpoint, images[0], health["torch_threads"])

    widths = [Image.open(io.BytesIO(b)).size for b in images]
    print(
        f"# API benchmark: {platform.processor() or platform.machine()}, {cpus} CPUs, torch {torch.__version__}, "
        f"model {health['model_version']}; with P processes each runs {cpus} // P inference thread(s)"
    )
    print(
        f"# lines {args.height} px high, {min(w for w, _ in widths)}-{max(w for w, _ in widths)} px wide; "
        f"batch = {args.batch} lines; in-process model time for one line: {baseline:.2f} ms\n"
    )
    print(
        "| procs | mode | conc | reqs | p50 ms | p95 ms | p99 ms | req/s | lines/s | model ms | prep ms | queue ms "
        "| http ms | http/model |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['processes']} | {r['mode']} | {r['concurrency']} | {r['requests']} | {r['p50_ms']:.1f} | "
            f"{r['p95_ms']:.1f} | {r['p99_ms']:.1f} | {r['req_per_s']:.1f} | {r['lines_per_s']:.1f} | "
            f"{r['model_ms']:.2f} | {r['prep_ms']:.2f} | {r['queue_ms']:.2f} | {r['http_ms']:.2f} | "
            f"{r['http_over_model']:.2f} |"
        )
    if memory:
        print(
            "\n| procs | worker pid | requests served | RSS at 500 MiB | RSS at end MiB | RSS growth | "
            "PSS at 500 MiB | PSS at end MiB |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for m in memory:
            print(
                f"| {m['processes']} | {m['pid']} | {m['requests']} | {m['rss_500']:.1f} | {m['rss_end']:.1f} | "
                f"{100 * m['growth']:+.1f}% | {m['pss_500']:.1f} | {m['pss_end']:.1f} |"
            )
        worst = max(abs(m["growth"]) for m in memory)
        print(
            f"\nlargest RSS change between request 500 and the end: {100 * worst:.1f}% "
            f"({'within' if worst <= 0.10 else 'OUTSIDE'} the 10% bound)"
        )
    single = [r for r in results if r["mode"] == "single" and r["concurrency"] == min(args.concurrency)]
    if single:
        target = single[0]
        verdict = "meets" if target["http_over_model"] < 0.2 else "MISSES"
        print(
            f"\nsingle line, concurrency {target['concurrency']}: HTTP overhead {target['http_ms']:.2f} ms = "
            f"{100 * target['http_over_model']:.0f}% of model time {target['model_ms']:.2f} ms ({verdict} the < 20% "
            "target)"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"health": health, "in_process_model_ms": baseline, "results": results, "memory": memory}, indent=2
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
