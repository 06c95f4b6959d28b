"""Distributed data-parallel training under ``torchrun``: process group, ranks, reductions.

Without torchrun (no ``WORLD_SIZE`` > 1 in the environment) nothing here starts a process group and
every helper is the identity of a one-process world, so a plain ``python training/run_experiment.py``
behaves exactly as it always did. Under ``torchrun --nproc-per-node N`` ``setup`` joins the group
(NCCL when the run trains on CUDA, gloo on the CPU) and pins rank ``LOCAL_RANK`` to its own GPU.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def launched() -> bool:
    """True under torchrun (or any launcher that sets ``WORLD_SIZE`` > 1)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def active() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    return rank() == 0


def setup(device: torch.device) -> torch.device:
    """Join the process group when launched by torchrun; return this rank's device (``device`` when alone)."""
    if not launched() or active():
        return device
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device.type == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return device


def teardown() -> None:
    if active():
        dist.destroy_process_group()


def _device() -> torch.device:
    if active() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def sum_all(values: list[float]) -> list[float]:
    """Element-wise sums over the ranks (``values`` unchanged when alone); float64 on the wire."""
    if not active():
        return list(values)
    tensor = torch.tensor(values, dtype=torch.float64, device=_device())
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor.tolist()


def any_rank(flag: bool) -> bool:
    """True on every rank when ``flag`` is true on any."""
    return sum_all([float(bool(flag))])[0] > 0


def broadcast(obj, src: int = 0):
    """Rank ``src``'s ``obj`` on every rank (pickled)."""
    if not active():
        return obj
    holder = [obj]
    dist.broadcast_object_list(holder, src=src, device=_device())
    return holder[0]


def gather(obj) -> list:
    """Every rank's ``obj``, in rank order, on every rank."""
    if not active():
        return [obj]
    out = [None] * world_size()
    dist.all_gather_object(out, obj)
    return out


def check_same_settings(settings: dict[str, object], may_differ: tuple[str, ...] = ()) -> None:
    """Raise ``ValueError`` on every rank when any rank's ``settings`` differ from rank 0's (outside ``may_differ``).

    Ranks started with different flags would train different things in one process group (or hang in
    a collective that only some of them run); each difference is named with rank 0's and the rank's value.
    """
    if not active():
        return
    mine = {k: v for k, v in settings.items() if k not in may_differ}
    everyone = gather(mine)
    differences = [
        f"{key}: rank 0 {everyone[0].get(key)!r}, rank {r} {theirs.get(key)!r}"
        for r, theirs in enumerate(everyone[1:], start=1)
        for key in sorted(set(everyone[0]) | set(theirs))
        if everyone[0].get(key) != theirs.get(key)
    ]
    if differences:
        raise ValueError("the processes were started with different settings (give every process the same flags): "
                         + "; ".join(differences))


def barrier() -> None:
    if active():
        dist.barrier()


class DDP(DistributedDataParallel):
    """DistributedDataParallel that passes unknown attributes (``output_lengths``, ``encoder``, ...) to the model,
    so the training objective and InterCTC take it in place of the bare model."""

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)


def wrap(model: torch.nn.Module, device: torch.device, find_unused: bool) -> torch.nn.Module:
    """``model`` wrapped for gradient all-reduce when distributed, else ``model`` itself."""
    if not active():
        return model
    ids = [device.index] if device.type == "cuda" else None
    return DDP(model, device_ids=ids, find_unused_parameters=find_unused)


def shard_batches(order: list[int], batch_size: int, rank_: int | None = None, world: int | None = None) -> list[int]:
    """This rank's share of an epoch's item ``order``, cut into ``batch_size`` batches as a loader would:
    batch ``rank``, ``rank + world``, ... of the first ``world * (batches // world)`` batches (the
    remainder is dropped so that every rank runs the same number of steps). After ``k`` steps the ranks
    together have trained exactly the first ``k * world`` batches of the epoch, whatever the world size.
    """
    n = world_size() if world is None else world
    if n == 1:
        return order
    me = rank() if rank_ is None else rank_
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    per_rank = len(batches) // n
    mine = batches[me : per_rank * n : n]
    return [index for batch in mine for index in batch]
