"""--threads: the thread rule, the /proc measurements against a real busy process, and the flag."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from training.loop.config import RunConfig
from training.loop.threads import (
    ThreadGovernor,
    ceiling,
    machine_busy_ticks,
    own_ticks,
    parse_threads,
    threads_for,
    ticks_between,
)

LINUX = Path("/proc/stat").exists()


def test_threads_for_keeps_all_cores_under_light_load_and_gives_one_up_to_a_busy_process():
    assert threads_for(2.0, most=2) == 2
    assert threads_for(2 - 0.3, most=2) == 2  # light background load
    assert threads_for(2 - 0.67, most=2) == 1  # a busy process that got its share beside our 2 threads
    assert threads_for(2 - 1.0, most=2) == 1
    assert threads_for(0.0, most=2) == 1  # never fewer than one
    assert threads_for(16.0, most=4) == 4  # never more than the ceiling


def test_ceiling_divides_the_cores_among_local_processes_and_respects_torchs_default():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert ceiling(local_processes=1) == 1  # OMP_NUM_THREADS=1 (as torchrun sets it) stays 1
        torch.set_num_threads(64)
        assert ceiling(local_processes=1) <= 64
        assert ceiling(local_processes=10_000) == 1
    finally:
        torch.set_num_threads(before)


def test_parse_threads():
    assert parse_threads("auto") == 0
    assert parse_threads("3") == 3
    for bad in ("0", "-1", "two", ""):
        with pytest.raises(ValueError, match="--threads must be 'auto' or >= 1"):
            parse_threads(bad)
    with pytest.raises(ValueError, match="--threads"):
        RunConfig(threads="many")


def test_fixed_threads_are_set_and_never_change():
    before = torch.get_num_threads()
    try:
        governor = ThreadGovernor(fixed=1, interval_s=0.0)
        assert torch.get_num_threads() == 1 and not governor.adaptive
        assert governor.update() is None and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_own_ticks_count_live_and_ended_children_and_machine_ticks_grow():
    busy_start, start = machine_busy_ticks(), own_ticks()
    live = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1.0)
        with_child = own_ticks()
        assert live.pid in with_child
        assert ticks_between(start, with_child) >= 30  # >= 0.3 s of the live child's CPU (100 ticks/s)
    finally:
        live.kill()
        live.wait()
    # the child ended and was reaped (like a data-loader worker at the end of an epoch): the ticks it
    # used before the last sample are not counted again, nor taken off as if another process had used them
    after = own_ticks()
    assert live.pid not in after
    assert 0 <= ticks_between(with_child, after) < 30
    assert ticks_between(start, after) >= ticks_between(start, with_child)  # nothing it used is lost
    assert machine_busy_ticks() - busy_start >= 50  # the child's busy second was seen machine-wide


def test_ticks_between_pairs_processes_by_id():
    before = {1: 100, 7: 500}  # this process (1) and a worker (7) that has used 500 ticks
    assert ticks_between(before, {1: 110, 7: 520}) == 30
    assert ticks_between(before, {1: 110 + 530}) == 40  # 7 ended: its 530 moved to 1's reaped time; 30 were new
    assert ticks_between(before, {1: 110, 7: 520, 9: 15}) == 45  # a new worker counts from zero


def _detached_busy_process() -> int:
    """A busy loop that is not our child (started by a shell that exits at once), like a user's other job."""
    out = subprocess.run(["sh", "-c", f"'{sys.executable}' -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_auto_gives_a_core_to_another_busy_process_and_takes_it_back_when_it_stops():
    before = torch.get_num_threads()
    probe = ThreadGovernor(interval_s=1.0, most=2, cores=2)
    time.sleep(1.2)
    probe.update()
    torch.set_num_threads(before)
    if probe.others_cores > 0.8:  # the drop this test looks for cannot show when the cores are already taken
        pytest.skip(f"other processes already use {probe.others_cores:.1f} of 2 cores")
    pid = _detached_busy_process()
    try:
        torch.set_num_threads(2)
        governor = ThreadGovernor(interval_s=1.0, most=2, cores=2)
        assert governor.adaptive and governor.threads == 2
        time.sleep(1.5)
        assert governor.update() == 1, governor.others_cores  # the other process took about a core
        assert governor.others_cores > 0.5 and torch.get_num_threads() == 1
    finally:
        os.kill(pid, signal.SIGKILL)
    time.sleep(1.5)
    try:
        during = governor.others_cores
        governor.update()
        # it stopped: its core is free again (on an idle machine: 2 threads; other load may keep some)
        assert governor.others_cores < during - 0.5, (during, governor.others_cores)
        assert torch.get_num_threads() == governor.threads == threads_for(2 - governor.others_cores, most=2)
    finally:
        torch.set_num_threads(before)
