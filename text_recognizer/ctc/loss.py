"""The project's CTC loss: one validated entry point, two implementations behind ``impl``.

``ctc_loss`` takes *raw* logits ``(B, T, C)`` (batch first, unnormalised). The log-softmax is
part of the loss, so callers never have to remember it; since log-softmax is idempotent,
passing log-probabilities gives the same result.

Implementations:
- ``"torch"``: ``log_softmax`` in float32 (or float64) followed by ``torch.nn.functional.ctc_loss``.
- ``"triton"``: the fused kernel in ``text_recognizer.ctc.triton_ctc`` (CUDA, or the CPU with
  ``TRITON_INTERPRET=1`` set before ``triton`` is first imported).
- ``"auto"``: Triton for CUDA logits when Triton imports, PyTorch otherwise.

Semantics shared by both (they match PyTorch's ``ctc_loss``, with one deliberate fix):
- ``reduction``: ``"none"`` (per sample), ``"sum"``, ``"mean"`` (each loss divided by its target
  length clamped to at least 1, then averaged over the batch).
- An infeasible sample (no valid alignment) has loss ``+inf``, or ``0`` with ``zero_infinity``.
  Its gradient is always zero. (PyTorch's own backward returns NaN for every sample of the batch
  when one loss is infinite and ``zero_infinity`` is off; we never do.)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_INT_DTYPES = (torch.int32, torch.int64)
_REDUCTIONS = ("none", "sum", "mean")
_IMPLS = ("auto", "torch", "triton")


def ctc_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    input_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    *,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
    impl: str = "auto",
    kernel_config=None,
) -> torch.Tensor:
    """CTC negative log-likelihood of ``targets`` given raw ``logits``.

    Args:
        logits: ``(B, T, C)`` float16/bfloat16/float32/float64 scores; blank is class ``blank``.
        targets: padded ``(B, S)`` or concatenated 1-D int32/int64 label ids (never ``blank``).
        input_lengths: ``(B,)`` int frames used per sample, each in ``[0, T]``.
        target_lengths: ``(B,)`` int label lengths, each in ``[0, S]`` (padded targets).
        reduction: ``"none"``, ``"sum"`` or ``"mean"``.
        zero_infinity: replace infinite losses (infeasible samples) by 0.
        impl: ``"auto"``, ``"torch"`` or ``"triton"``.
        kernel_config: launch choices of the Triton kernels
            (``text_recognizer.ctc.triton_ctc.KernelConfig``; ``None``: the defaults). They change
            speed only, never a result, so the PyTorch implementation ignores them.
    """
    input_lengths, target_lengths, max_target_length = _check_arguments(
        logits, targets, input_lengths, target_lengths, blank, reduction, impl
    )
    chosen = resolve_impl(impl, logits.device)
    if chosen == "triton":
        from text_recognizer.ctc.triton_ctc import fused_ctc_loss

        return fused_ctc_loss(
            logits, targets, input_lengths, target_lengths,
            blank=blank, reduction=reduction, zero_infinity=zero_infinity,
            max_target_length=max_target_length,  # known on the host: no device sync there
            config=kernel_config,
        )
    return _torch_ctc_loss(
        logits, targets, input_lengths, target_lengths, blank, reduction, zero_infinity
    )


def triton_available() -> bool:
    """True when ``triton`` imports (it may still need a GPU or ``TRITON_INTERPRET=1`` to run)."""
    try:
        import triton  # noqa: F401
    except Exception:  # pragma: no cover - depends on the installation
        return False
    return True


def resolve_impl(impl: str, device: torch.device) -> str:
    """The implementation ``impl`` stands for on ``device`` (``"auto"`` resolved)."""
    if impl not in _IMPLS:
        raise ValueError(f"impl must be one of {_IMPLS}, got {impl!r}")
    if impl == "auto":
        return "triton" if device.type == "cuda" and triton_available() else "torch"
    if impl == "triton" and not triton_available():
        raise ValueError("impl='triton' needs the 'triton' package, which failed to import")
    return impl


def _torch_ctc_loss(logits, targets, input_lengths, target_lengths, blank, reduction, zero_infinity):
    compute_dtype = torch.float64 if logits.dtype == torch.float64 else torch.float32
    log_probs = logits.to(compute_dtype).log_softmax(-1).transpose(0, 1)  # (T, B, C)
    # zero_infinity=True inside, so the backward never sees an infinite loss (it would return NaN
    # for the whole batch); infinite losses are put back below as constants without a gradient.
    per_sample = F.ctc_loss(
        log_probs, targets.long(), input_lengths.long(), target_lengths.long(),
        blank=blank, reduction="none", zero_infinity=True,
    )  # (B,)
    if not zero_infinity:
        per_sample = per_sample + _infinite_offsets(log_probs, targets, input_lengths, target_lengths, blank,
                                                    per_sample)
    if reduction == "none":
        return per_sample
    if reduction == "sum":
        return per_sample.sum()
    return (per_sample / target_lengths.to(per_sample.device).clamp_min(1).to(per_sample.dtype)).mean()


@torch.no_grad()
def _infinite_offsets(log_probs, targets, input_lengths, target_lengths, blank, per_sample):
    """``+inf`` for samples whose true loss is infinite, ``0`` elsewhere (no gradient).

    With ``zero_infinity=True`` an infinite loss reads 0, so only samples whose loss is exactly 0
    need a second look; they are rare, and recomputing them alone keeps this cheap.
    """
    offsets = torch.zeros_like(per_sample)
    suspects = (per_sample == 0).nonzero().flatten()
    if suspects.numel() == 0:
        return offsets
    if targets.dim() == 1:  # concatenated: turn into padded rows for indexing
        targets = _pad_concatenated(targets, target_lengths)
    rows = suspects.to(targets.device)
    true_loss = F.ctc_loss(
        log_probs[:, suspects.to(log_probs.device)], targets[rows].long(),
        input_lengths[suspects.to(input_lengths.device)].long(),
        target_lengths[suspects.to(target_lengths.device)].long(),
        blank=blank, reduction="none", zero_infinity=False,
    )
    offsets[suspects] = torch.where(torch.isinf(true_loss), float("inf"), 0.0).to(offsets)
    return offsets


def _pad_concatenated(targets: torch.Tensor, target_lengths: torch.Tensor) -> torch.Tensor:
    """Concatenated 1-D targets -> padded ``(B, max(L))`` (pad value 0)."""
    lengths = target_lengths.tolist()
    padded = targets.new_zeros((len(lengths), max(lengths, default=0)))
    start = 0
    for row, length in enumerate(lengths):
        padded[row, :length] = targets[start : start + length]
        start += length
    return padded


def _check_logits(logits, blank: int, reduction: str, impl: str) -> tuple[int, int, int]:
    """Check the options and the logits; return ``(B, T, C)``."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if impl not in _IMPLS:
        raise ValueError(f"impl must be one of {_IMPLS}, got {impl!r}")
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3:
        raise ValueError(f"logits must be a (B, T, C) tensor, got {_describe(logits)}")
    if logits.dtype not in _FLOAT_DTYPES:
        raise ValueError(f"logits must be float16, bfloat16, float32 or float64, got {logits.dtype}")
    batch, frames, classes = logits.shape
    if classes < 2:
        raise ValueError(f"logits need at least 2 classes (blank + one character), got C={classes}")
    if not 0 <= blank < classes:
        raise ValueError(f"blank must be in [0, C={classes}), got {blank}")
    return batch, frames, classes


def _check_target_layout(targets, logits: torch.Tensor, batch: int) -> None:
    """Check the targets' type, shape and device (their ids are checked with the lengths, on the device)."""
    if not isinstance(targets, torch.Tensor) or targets.dtype not in _INT_DTYPES:
        raise ValueError(f"targets must be an int32/int64 tensor, got {_describe(targets)}")
    if targets.dim() not in (1, 2):
        raise ValueError(f"targets must be padded (B, S) or concatenated 1-D, got shape {tuple(targets.shape)}")
    if targets.dim() == 2 and targets.shape[0] != batch:
        raise ValueError(f"targets has batch size {targets.shape[0]} but logits has {batch}")
    if targets.device != logits.device:
        raise ValueError(f"targets are on {targets.device} but logits on {logits.device}")


def _length_tensors(input_lengths, target_lengths, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Both lengths as 1-D int64 tensors of ``batch`` entries (on the device they were given on)."""
    lengths = []
    for name, value in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if not isinstance(value, torch.Tensor):
            try:
                value = torch.as_tensor(value, dtype=torch.int64)
            except (TypeError, ValueError) as error:
                raise ValueError(f"{name} must be a 1-D int tensor, got {value!r}") from error
        if value.dtype not in _INT_DTYPES or value.dim() != 1:
            raise ValueError(f"{name} must be a 1-D int32/int64 tensor, got {_describe(value)}")
        if value.shape[0] != batch:
            raise ValueError(f"{name} has {value.shape[0]} entries but the batch size is {batch}")
        lengths.append(value.to(torch.int64))
    return lengths[0], lengths[1]


def _length_stats(input_lengths: torch.Tensor, target_lengths: torch.Tensor, batch: int,
                  device_stats: list, names: list[str]) -> dict:
    """Min/max of both lengths and the targets' total: computed on the host for CPU lengths (returned), queued
    into ``device_stats``/``names`` for lengths on the device (read back later, in one synchronisation)."""
    host = {}
    for name, value in (("in", input_lengths), ("tl", target_lengths)):
        if value.device.type == "cpu" or not batch:
            if batch:
                low, high = torch.aminmax(value)
                host[name + "_min"], host[name + "_max"] = int(low), int(high)
            else:
                host[name + "_min"] = host[name + "_max"] = 0
            if name == "tl":
                host["tl_sum"] = int(value.sum())
        else:
            low, high = torch.aminmax(value)
            device_stats += [low, high]
            names += [name + "_min", name + "_max"]
            if name == "tl":
                device_stats.append(value.sum())
                names.append("tl_sum")
    return host


def _id_stats(targets: torch.Tensor, target_lengths: torch.Tensor, blank: int, classes: int, host: dict,
              device_stats: list, names: list[str]) -> None:
    """Queue the range of the target ids and the count of blanks among them (padding past a length ignored)."""
    if targets.numel():
        if targets.dim() == 2:
            valid = torch.arange(targets.shape[1], device=targets.device) < target_lengths[:, None]
            # positions past the target length get a neutral id: in range and not the blank
            values = torch.where(valid, targets, (blank + 1) % classes)
        else:
            values = targets
        low, high = torch.aminmax(values)
        device_stats += [low, high, (values == blank).sum()]
        names += ["id_min", "id_max", "blanks"]
    else:
        host.update(id_min=0, id_max=0, blanks=0)


def _check_arguments(logits, targets, input_lengths, target_lengths, blank, reduction, impl):
    """Validate everything; return ``(input_lengths, target_lengths, max_target_length)``.

    The lengths come back as int64 tensors on ``logits.device``; ``max_target_length`` is a host
    int (``max(target_lengths)``, 0 for an empty batch) that the fused kernel uses to size its
    buffers without a device synchronisation.

    Lengths given as CPU tensors (the common case) are checked on the host and copied to the device
    without a synchronisation (``non_blocking``). Whatever has to be checked on the device (target
    ids; lengths that live there) is reduced into one small tensor that is read back once: a
    single synchronisation, which reading the lengths needs anyway.
    """
    batch, frames, classes = _check_logits(logits, blank, reduction, impl)
    _check_target_layout(targets, logits, batch)
    input_lengths, target_lengths = _length_tensors(input_lengths, target_lengths, batch)

    # Device-side statistics, gathered into one read-back; host-side ones are computed directly.
    device_stats, names = [], []
    host = _length_stats(input_lengths, target_lengths, batch, device_stats, names)
    input_lengths = input_lengths.to(logits.device, non_blocking=True)
    target_lengths = target_lengths.to(logits.device, non_blocking=True)
    # Length errors first (as before); host-side ones can be raised before any device work.
    _check_lengths(host, frames, targets, batch)

    _id_stats(targets, target_lengths, blank, classes, host, device_stats, names)
    if device_stats:
        host.update(zip(names, torch.stack(device_stats).tolist()))  # the one host read-back
        _check_lengths(host, frames, targets, batch)
    if host["id_min"] < 0 or host["id_max"] >= classes:
        raise ValueError(
            f"target ids must be in [0, C={classes}), got values in [{host['id_min']}, {host['id_max']}]"
        )
    if host["blanks"]:
        raise ValueError(
            f"targets contain the blank id {blank} ({host['blanks']} times) inside the target lengths"
        )
    return input_lengths, target_lengths, host["tl_max"]


def _check_lengths(stats: dict, frames: int, targets: torch.Tensor, batch: int) -> None:
    """Raise for the length statistics present in ``stats`` (the others are checked later)."""
    if batch and "in_min" in stats and (stats["in_min"] < 0 or stats["in_max"] > frames):
        raise ValueError(
            f"input_lengths must be in [0, T={frames}], got values in [{stats['in_min']}, {stats['in_max']}]"
        )
    if batch and "tl_min" in stats and stats["tl_min"] < 0:
        raise ValueError(f"target_lengths must be >= 0, got a minimum of {stats['tl_min']}")
    if targets.dim() == 2 and "tl_max" in stats and stats["tl_max"] > targets.shape[1]:
        raise ValueError(f"target_lengths must be <= S={targets.shape[1]} (padded targets), got {stats['tl_max']}")
    if targets.dim() == 1 and "tl_sum" in stats and stats["tl_sum"] != targets.shape[0]:
        raise ValueError(
            f"concatenated targets have {targets.shape[0]} ids but target_lengths sum to {stats['tl_sum']}"
        )


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    return f"{type(value).__name__}"
