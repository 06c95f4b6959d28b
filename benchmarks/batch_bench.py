"""``text-recognizer-batch`` (Ray Data) against the plain CLI loop over the same pages, its memory per worker, and a
run killed halfway then resumed.

    python benchmarks/batch_bench.py [--pages 'DIR/*.webp' ...] [--count 50] [--workers N] [--threads N]

1. The plain loop: ``python -m text_recognizer.recognizer --page FILES --format json`` (one process, torch's
   default threads), wall time from start to exit, model loading included; its peak memory.
2. The batch command on a fresh local Ray (``ray.init()`` here, started by the command): wall time from start to
   exit, Ray's start and the actors' model loading included; the peak memory (RSS) of each actor process,
   sampled every 0.2 s from /proc.
3. Kill and resume: the batch command killed with SIGKILL once half the pages are in its manifest, then run again;
   how many pages were read twice (manifest lines of both runs, not counting recovered ones) and how many lost.

Prints pages/s of both (medians of ``--repeats`` alternating runs) and their ratio (batch / plain; the issue's
target is >= 0.9). Run it alone on the machine: it times wall clock.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = next((p / "shared" / "data" for p in REPO.parents if (p / "shared" / "data").is_dir()), REPO / "data")
DEFAULT_PAGES = [str(DATA / "copiste_dun_jour" / "val" / "*.webp"), str(DATA / "copiste_dun_jour" / "train" / "*.webp")]


def rss_sampler(match: str, stop: threading.Event, peaks: dict[int, int]) -> None:
    """Peak resident memory (kB) of every process whose command line contains ``match``, until ``stop``."""
    while not stop.is_set():
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if match not in command:
                    continue
                for line in (entry / "status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        pid = int(entry.name)
                        peaks[pid] = max(peaks.get(pid, 0), int(line.split()[1]))
            except OSError:
                continue
        stop.wait(0.2)


def timed_run(command: list[str], match: str | None = None) -> tuple[float, dict[int, int], str]:
    stop, peaks = threading.Event(), {}
    sampler = threading.Thread(target=rss_sampler, args=(match, stop, peaks), daemon=True) if match else None
    if sampler:
        sampler.start()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - started
    stop.set()
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[:4]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, peaks, done.stdout


def kill_and_resume(batch: list[str], out: Path, count: int) -> dict:
    manifest = out / "manifest.jsonl"
    process = subprocess.Popen(batch, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    while process.poll() is None:
        if manifest.exists() and len(manifest.read_text().splitlines()) >= count // 2:
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the driver and the Ray it started
    process.wait()
    first = len([line for line in manifest.read_text().splitlines() if '"ok"' in line])
    subprocess.run(batch, cwd=REPO, capture_output=True, check=False)
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    read = Counter(r["id"] for r in records if r["status"] == "ok" and not (r["error"] or "").startswith("recovered"))
    return {"before_kill": first, "twice": sum(n > 1 for n in read.values()),
            "lost": count - len({r["id"] for r in records if r["status"] == "ok"}),
            "recovered": sum((r["error"] or "").startswith("recovered") for r in records)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", nargs="+", default=DEFAULT_PAGES, help="glob patterns of page images or PDFs")
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--workers", default=None, help="--workers for the batch command (default: its own)")
    parser.add_argument("--threads", default=None, help="--threads for the batch command (default: its own)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each, alternating; medians are printed")
    args = parser.parse_args()
    files = sorted(f for pattern in args.pages for f in glob.glob(pattern))[: args.count]
    if len(files) < args.count:
        raise SystemExit(f"found {len(files)} pages, need {args.count}")
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "pages.txt"
        listing.write_text("\n".join(str(Path(f).resolve()) for f in files) + "\n")
        plain = [sys.executable, "-m", "text_recognizer.recognizer", "--page", *files, "--format", "json",
                 "--progress", "never"]
        extra = [*(["--workers", args.workers] if args.workers else []),
                 *(["--threads", args.threads] if args.threads else [])]
        batch = [sys.executable, "-m", "text_recognizer.archive.cli", "--list", str(listing), "--progress", "never",
                 *extra]
        plains, batches = [], []
        for repeat in range(args.repeats):  # alternating, so that a slow spell of the machine hits both alike
            plain_s, plain_peak, _ = timed_run(plain, "text_recognizer.recognizer")
            batch_s, peaks, stdout = timed_run([*batch, "--output", str(Path(tmp) / f"out{repeat}")], "MapWorker")
            plains.append(plain_s)
            batches.append(batch_s)
        plain_s, batch_s = statistics.median(plains), statistics.median(batches)
        resumed = kill_and_resume([*batch, "--output", str(Path(tmp) / "killed")], Path(tmp) / "killed", len(files))
    print(f"pages: {len(files)}; {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"runs (s): plain {', '.join(f'{x:.1f}' for x in plains)}; batch {', '.join(f'{x:.1f}' for x in batches)}")
    print(f"plain CLI loop:  {plain_s:7.1f} s  {len(files) / plain_s:.3f} pages/s  peak RSS "
          f"{max(plain_peak.values(), default=0) / 1024:.0f} MiB")
    print(f"batch (Ray):     {batch_s:7.1f} s  {len(files) / batch_s:.3f} pages/s  actors {len(peaks)}, peak RSS "
          f"each {', '.join(f'{kb / 1024:.0f}' for kb in peaks.values())} MiB  ({stdout.strip()})")
    print(f"ratio batch / plain (pages/s): {plain_s / batch_s:.3f}")
    print(f"killed at {resumed['before_kill']} of {len(files)} pages, resumed: read twice {resumed['twice']}, lost "
          f"{resumed['lost']}, manifest lines recovered {resumed['recovered']}")


if __name__ == "__main__":
    main()
