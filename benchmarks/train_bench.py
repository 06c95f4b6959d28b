"""Training throughput (lines per second) of the default model, against the plain LineCNN baseline
and against the same CRNN with a per-window CNN (``--shared-cnn false``, the previous default).

    python benchmarks/train_bench.py [--steps 20] [--batch-size 16] [--threads N]
    python benchmarks/train_bench.py --shared-machine [--seconds 40]
    python benchmarks/train_bench.py --layouts [--steps 30]

Both models see the same pre-generated synthetic batches (generation excluded), and each step is a
full forward + CTC loss + backward + RMSprop update. Prints lines/s for each and the ratio.

``--shared-machine`` times the default CRNN alone and beside one competing busy process (a Python
busy loop, like ``yes > /dev/null``), with torch's default threads (the baseline), 1 thread and
``--threads auto`` (training/loop/threads.py: follows the cores the other process leaves); each case runs
for ``--seconds`` in a fresh process, so auto's few seconds of finding out are counted.

``--layouts`` times the default CRNN (conv stages on channels-last activations,
``text_recognizer/models/channels_last.py``) against the same model and weights with plain
``nn.Conv2d`` stages (NCHW activations, the layout before), in float32 and under bf16 autocast,
each pair alternated twice (ABAB) so drift of the machine's speed hits both alike.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import torch
from torch import nn

from text_recognizer.codec import Codec
from text_recognizer.data.lines import EncodedLines, collate_lines
from text_recognizer.data.synthetic import SyntheticLines
from text_recognizer.models import ModelConfig, build_model
from text_recognizer.models.channels_last import ChannelsLastConv2d
from training.loop.device import autocast
from training.loop.objective import compute_loss


def with_nchw_conv_stages(model: nn.Module) -> nn.Module:
    """``model`` with plain ``nn.Conv2d`` (same weights) for every ``ChannelsLastConv2d``: the layout baseline."""
    for name, module in list(model.named_modules()):
        if isinstance(module, ChannelsLastConv2d):
            plain = nn.Conv2d(module.in_channels, module.out_channels, module.kernel_size, module.stride,
                              module.padding, bias=module.bias is not None)
            plain.load_state_dict(module.state_dict())
            parent, _, attribute = name.rpartition(".")
            setattr(model.get_submodule(parent), attribute, plain)
    return model


def lines_per_second(kind: str, batches, steps: int, precision: str = "32", nchw: bool = False,
                     **overrides) -> float:
    torch.manual_seed(0)
    model = build_model(ModelConfig(kind=kind, num_classes=Codec().num_classes, **overrides))
    if nchw:
        model = with_nchw_conv_stages(model)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    seen, elapsed = 0, 0.0
    for i in range(steps + 2):
        batch = batches[i % len(batches)]
        start = time.perf_counter()
        with autocast(precision, torch.device("cpu")):
            loss, _ = compute_loss(model, batch, "ctc", "torch")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i >= 2:  # the first two steps warm up allocators and kernels
            elapsed += time.perf_counter() - start
            seen += len(batch.texts)
    return seen / elapsed


def timed_for(seconds: float, batches, threads: str) -> float:
    """Lines/s of the default CRNN trained for ``seconds`` with ``--threads threads`` (after 2 warm-up steps)."""
    from training.loop.threads import ThreadGovernor, parse_threads

    torch.manual_seed(0)
    model = build_model(ModelConfig(num_classes=Codec().num_classes))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    governor = ThreadGovernor(fixed=parse_threads(threads)) if threads != "default" else None
    seen, start, i = 0, 0.0, 0
    while not start or time.perf_counter() - start < seconds:
        batch = batches[i % len(batches)]
        loss, _ = compute_loss(model, batch, "ctc", "torch")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if governor is not None:
            governor.update()
        i += 1
        if i == 2:
            start = time.perf_counter()
        elif i > 2:
            seen += len(batch.texts)
    return seen / (time.perf_counter() - start)


def shared_machine(seconds: float, batch_size: int) -> None:
    """The table of ``--shared-machine``: each case in a fresh interpreter, idle and beside one busy process."""
    cases = ["default", "1", "auto"]
    rows = {}
    for load in ("idle", "one busy process"):
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load != "idle" else None
        try:
            for threads in cases:
                command = [sys.executable, __file__, "--_case", threads, "--seconds", str(seconds),
                           "--batch-size", str(batch_size)]
                out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
                rows[load, threads] = float(out.strip().splitlines()[-1])
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
    print(f"torch {torch.__version__}, torch's default {torch.get_num_threads()} threads, batch {batch_size}, "
          f"{seconds:.0f} s per case")
    print(f"{'threads':<10}{'idle':>10}{'ratio':>8}{'busy':>10}{'ratio':>8}   (lines/s; ratio to the default)")
    for threads in cases:
        idle, busy = rows["idle", threads], rows["one busy process", threads]
        print(f"{threads:<10}{idle:10.1f}{idle / rows['idle', 'default']:8.2f}{busy:10.1f}"
              f"{busy / rows['one busy process', 'default']:8.2f}")


def layouts(batches, steps: int) -> None:
    """The table of ``--layouts``: channels-last conv stages against NCHW ones, float32 and bf16."""
    print(f"{'precision':<10}{'NCHW lines/s':>14}{'channels-last':>15}{'ratio':>8}   (mean of two alternated runs)")
    for precision in ("32", "bf16"):
        runs = {False: [], True: []}
        for _ in range(2):
            for nchw in (True, False):
                runs[nchw].append(lines_per_second("crnn", batches, steps, precision, nchw=nchw))
        nchw, ours = (sum(runs[k]) / 2 for k in (True, False))
        print(f"{precision:<10}{nchw:14.1f}{ours:15.1f}{ours / nchw:8.2f}")


def synthetic_batches(batch_size: int, count: int = 4) -> list:
    height = ModelConfig().height
    data = EncodedLines(SyntheticLines(batch_size * count, seed=0, height=height), Codec(), height)
    return [collate_lines([data[i] for i in range(b, b + batch_size)]) for b in range(0, len(data), batch_size)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model")
    parser.add_argument("--batch-size", type=int, default=16, help="lines per batch")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--shared-machine", action="store_true", help="threads idle and beside a busy process")
    parser.add_argument("--layouts", action="store_true", help="channels-last conv stages against NCHW ones")
    parser.add_argument("--seconds", type=float, default=40.0, help="--shared-machine: seconds per case")
    parser.add_argument("--_case", default="", help=argparse.SUPPRESS)  # one --shared-machine case (subprocess)
    args = parser.parse_args()
    if args.shared_machine:
        shared_machine(args.seconds, args.batch_size)
        return
    if args._case:
        print(f"{timed_for(args.seconds, synthetic_batches(args.batch_size), args._case):.2f}")
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    batches = synthetic_batches(args.batch_size)
    widths = torch.cat([b.widths for b in batches]).float()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch_size}, "
          f"mean line width {widths.mean():.0f} px at {ModelConfig().height} px")
    if args.layouts:
        layouts(batches, args.steps)
        return
    baseline = lines_per_second("line_cnn", batches, args.steps)
    default = lines_per_second("crnn", batches, args.steps)
    per_window = lines_per_second("crnn", batches, args.steps, shared_cnn=False)
    print(f"line_cnn (baseline):     {baseline:6.1f} lines/s")
    print(f"crnn (default):          {default:6.1f} lines/s   ratio to baseline {default / baseline:.2f}")
    print(f"crnn, per-window CNN:    {per_window:6.1f} lines/s   default / per-window {default / per_window:.2f}")


if __name__ == "__main__":
    main()
