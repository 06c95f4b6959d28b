"""CPU threads for training: torch's intra-op threads follow the cores other processes leave free.

Why: on a small machine a process that runs one OpenMP thread per core slows down far more than its
fair share as soon as anything else runs. Every parallel region (a convolution, a matmul) waits for
its slowest thread, and a thread whose core was taken by another process holds up all the others.
Measured on the 2-core box (``benchmarks/train_bench.py``, RESULTS): idle, 2 threads train ~1.5x
faster than 1; beside one busy process, 2 threads train ~1.7x *slower* than 1.

So ``--threads auto`` (the default) starts at the most threads this process should use and, every
few seconds, measures how much CPU the *other* processes took (the machine's busy time from
``/proc/stat`` minus this process's and its data-loader workers') and sets torch to the cores they
left, never fewer than one. A fixed ``--threads N`` turns this off. Where ``/proc`` cannot be read
(not Linux) auto keeps its starting value.

The most threads auto uses: torch's own default when the run starts (the cores, or
``OMP_NUM_THREADS``, which ``torchrun`` sets to 1 per process unless you set it), and at most the
cores this process may run on divided by the training processes on this machine
(``LOCAL_WORLD_SIZE`` under torchrun).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

#: Extra share of a core counted as free before rounding down: with 2 cores and a competitor that got
#: 0.67 of a core while we ran 2 threads (three runnable threads share two cores), 2 - 0.67 + 0.6 -> 1 thread;
#: with light background load (under 0.6 of a core) we keep both.
ROUNDING_MARGIN = 0.6


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity; all cores where that is unknown)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def ceiling(local_processes: int | None = None) -> int:
    """The most intra-op threads ``--threads auto`` uses in this process (see the module docstring)."""
    local = local_processes or int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    return max(1, min(torch.get_num_threads(), usable_cores() // max(1, local)))


def threads_for(free_cores: float, most: int) -> int:
    """Threads to run when ``free_cores`` cores (possibly fractional) are left by other processes."""
    return max(1, min(most, math.floor(free_cores + ROUNDING_MARGIN)))


def _fields(stat_line: str) -> list[str]:
    """The fields of a ``/proc/<pid>/stat`` line after the command name (which may hold spaces)."""
    return stat_line.rsplit(")", 1)[1].split()


def _ticks(fields: list[str], reaped: bool = False) -> int:
    """utime + stime (clock ticks), plus the reaped children's cutime + cstime with ``reaped``."""
    return int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if reaped else 0)


def own_ticks(pid: int | None = None) -> dict[int, int]:
    """CPU clock ticks used so far by process ``pid`` (default: this one) and by each of its live children
    (data-loader workers), by process id. This process's figure includes the children it has reaped,
    so a worker that ended keeps counting as ours (``ticks_between``)."""
    pid = pid or os.getpid()
    ticks = {pid: _ticks(_fields(Path(f"/proc/{pid}/stat").read_text()), reaped=True)}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or entry.name == str(pid):
            continue
        try:
            fields = _fields((entry / "stat").read_text())
        except OSError:  # the process ended while we looked
            continue
        if int(fields[1]) == pid:
            ticks[int(entry.name)] = _ticks(fields)
    return ticks


def ticks_between(before: dict[int, int], now: dict[int, int]) -> int:
    """Ticks this process and its children used between two ``own_ticks`` samples.

    A worker that ended in between (data-loader workers end with every epoch) left its whole total in
    our reaped-children time, so what it had used before the first sample is taken off again; counting
    it as gone instead would make its past CPU look like another process's.
    """
    grown = sum(t - before.get(p, 0) for p, t in now.items())
    return grown - sum(t for p, t in before.items() if p not in now)


def machine_busy_ticks() -> int:
    """CPU clock ticks all processes spent busy (not idle or waiting for IO), over all cores, since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, iowait = values[3], values[4] if len(values) > 4 else 0
    return sum(values[:8]) - idle - iowait  # user nice system idle iowait irq softirq steal (guest is in user)


@dataclass
class ThreadGovernor:
    """Sets ``torch.set_num_threads`` from the CPU other processes used over the last ``interval_s`` seconds.

    Call ``update()`` after each training step; it samples at most once per interval and returns the
    new thread count when it changed (else None). ``fixed`` > 0 pins the threads and never samples.
    """

    fixed: int = 0
    interval_s: float = 5.0
    most: int = field(default_factory=ceiling)
    cores: int = field(default_factory=usable_cores)
    threads: int = 0
    others_cores: float = 0.0  # the last measurement: cores' worth of CPU other processes used
    _last: tuple[float, int, dict[int, int]] | None = field(default=None, init=False, repr=False)  # time, machine, own
    _enabled: bool = field(default=True, init=False, repr=False)

    def __post_init__(self) -> None:
        self.threads = self.fixed or self.most
        torch.set_num_threads(self.threads)
        if self.fixed:
            self._enabled = False
            return
        self._last = self._sample()
        self._enabled = self._last is not None

    @property
    def adaptive(self) -> bool:
        return self._enabled

    def _sample(self) -> tuple[float, int, dict[int, int]] | None:
        try:
            return time.monotonic(), machine_busy_ticks(), own_ticks()
        except (OSError, ValueError, IndexError):  # no /proc (not Linux) or an unexpected format
            return None

    def update(self) -> int | None:
        if not self._enabled or time.monotonic() - self._last[0] < self.interval_s:
            return None
        now = self._sample()
        if now is None:
            self._enabled = False
            return None
        wall = now[0] - self._last[0]
        ticks_per_second = os.sysconf("SC_CLK_TCK")
        others = ((now[1] - self._last[1]) - ticks_between(self._last[2], now[2])) / ticks_per_second / wall
        self._last, self.others_cores = now, min(float(self.cores), max(0.0, others))
        wanted = threads_for(self.cores - self.others_cores, self.most)
        if wanted == self.threads:
            return None
        self.threads = wanted
        torch.set_num_threads(wanted)
        return wanted


def parse_threads(value: str) -> int:
    """``--threads``: 'auto' -> 0, else a positive integer."""
    if value == "auto":
        return 0
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"--threads must be 'auto' or >= 1, got {value}")
    return count
