"""Weights & Biases logging for ``fit`` (``run_experiment.py --wandb``).

What a run logs:

- config: the full resolved config, plus ``model_info`` (parameters, size in MB, CTC implementation,
  device) and ``env`` (git commit, torch / CUDA / Triton versions);
- per step: ``train/loss``, ``train/lr``, ``train/lines_per_sec`` (and ``train/grad_norm``);
- per epoch: ``val/loss``, ``val/cer``, ``val/wer`` against ``epoch`` (``val/cer`` is summarised as
  its minimum, so runs rank by their best), and ``val/samples``: a ``wandb.Table`` of the same first
  ``--wandb-samples`` validation lines every epoch (index, image, ground truth, prediction, CER);
- the best checkpoint as a ``model`` artifact with aliases ``best`` and ``latest``, uploaded only
  when validation CER improves.

W&B's own environment variables are respected (``WANDB_MODE``, ``WANDB_PROJECT``, ``WANDB_ENTITY``,
``WANDB_DIR``; without ``WANDB_DIR`` the files go to ``<run_dir>/wandb``). With no ``WANDB_MODE`` and
no API key (``WANDB_API_KEY`` or a netrc entry), or when an online start fails (no network), the run
is logged offline and one warning says how to upload it later with ``wandb sync``. Any error inside
W&B warns once and turns W&B off for the rest of the run: logging never stops training.
"""

from __future__ import annotations

import importlib.metadata
import netrc
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

from training.loop.loggers import Logger

DEFAULT_PROJECT = "text-recognizer"
INIT_TIMEOUT_S = 60.0
REPO = Path(__file__).resolve().parents[2]


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def _warn(message: str) -> None:
    print(f"warning: W&B: {message}", file=sys.stderr, flush=True)


def has_api_key() -> bool:
    """An API key in ``WANDB_API_KEY`` or in the netrc entry of the W&B host (no network access)."""
    if os.environ.get("WANDB_API_KEY", "").strip():
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname or "api.wandb.ai"
    path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    try:
        entry = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return False
    return bool(entry and entry[2])


def environment_info() -> dict:
    """Git commit (and whether the tree has uncommitted changes), torch, CUDA and Triton versions."""
    import torch

    info: dict = {"torch": torch.__version__, "cuda": torch.version.cuda or "none", "python": sys.version.split()[0]}
    try:
        info["triton"] = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        info["triton"] = "none"
    try:
        git = ["git", "-C", str(REPO)]
        info["git_commit"] = subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10
        ).stdout
        info["git_dirty"] = bool(dirty.strip())
    except (OSError, subprocess.SubprocessError):
        info["git_commit"], info["git_dirty"] = "unknown", False
    return info


def sample_image(tensor):
    """A preprocessed line ``(1, H, W)`` ink-high float in [0, 1] -> uint8 ``(H, W)`` dark ink on white."""
    import numpy as np

    array = tensor.detach().float().cpu().numpy().reshape(tensor.shape[-2], tensor.shape[-1])  # (H, W)
    return (np.clip(1.0 - array, 0.0, 1.0) * 255).round().astype(np.uint8)


def artifact_name(run_name: str) -> str:
    """``model-<run name>`` with only the characters W&B allows in artifact names."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in run_name)
    return f"model-{safe}"[:128]


class WandbLogger(Logger):
    """Sends a run to W&B. Errors inside W&B disable it (one warning) instead of stopping training."""

    def __init__(self, project: str = "", group: str = "", num_samples: int = 16, init_timeout: float | None = None):
        self.project = project
        self.group = group
        self.num_samples = num_samples
        self.init_timeout = (
            init_timeout if init_timeout is not None else float(os.environ.get("WANDB_INIT_TIMEOUT", INIT_TIMEOUT_S))
        )
        self.run = None
        self.wandb = None
        self.mode = ""
        self.run_name = ""

    # -- plumbing -------------------------------------------------------------------------------

    def _call(self, what: str, fn, *args, **kwargs):
        """Run a W&B call; on any error warn once, drop the run and carry on training."""
        if self.run is None:
            return None
        try:
            return fn(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - logging must never stop training
            _warn(f"{what} failed ({_describe(error)}); continuing without W&B for this run")
            run, self.run = self.run, None
            try:
                run.finish(exit_code=1, quiet=True)
            except Exception:  # noqa: BLE001
                pass
            return None

    def _init(self, wandb, mode: str | None, kwargs: dict):
        settings = wandb.Settings(init_timeout=self.init_timeout, **({"mode": mode} if mode else {}))
        return wandb.init(settings=settings, **kwargs)

    # -- Logger hooks ---------------------------------------------------------------------------

    def start(self, config: dict, run_dir: Path, model_info: dict) -> None:
        env_mode = os.environ.get("WANDB_MODE", "").strip().lower()
        if env_mode == "disabled" or os.environ.get("WANDB_DISABLED", "").strip().lower() in ("1", "true", "yes"):
            self.mode = "disabled"
            return
        try:
            import wandb
        except ImportError:
            _warn("the wandb package is not installed (pip install wandb); continuing without W&B")
            return
        self.wandb = wandb
        run_dir = Path(run_dir)
        self.run_name = run_dir.name
        # Environment read now and passed explicitly: wandb caches its settings per process.
        mode = env_mode or None
        offline_reason = ""
        if not env_mode and not has_api_key():
            mode, offline_reason = "offline", "no API key found (WANDB_API_KEY or `wandb login`)"
        wandb_dir = Path(os.environ.get("WANDB_DIR") or run_dir)
        wandb_dir.mkdir(parents=True, exist_ok=True)
        id_file = run_dir / "wandb_run_id"
        resume_id = id_file.read_text().strip() if config.get("run", {}).get("resume") and id_file.exists() else None
        kwargs = {
            "project": self.project or os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT,
            "entity": os.environ.get("WANDB_ENTITY") or None,
            "group": self.group or os.environ.get("WANDB_RUN_GROUP") or None,
            "name": self.run_name,
            "job_type": "train",
            "dir": str(wandb_dir),
            "config": {
                **config,
                "model_info": model_info,
                "env": {**environment_info(), "ctc_impl": model_info.get("ctc_impl")},
            },
            **({"id": resume_id, "resume": "allow"} if resume_id else {}),
        }
        try:
            run = self._init(wandb, mode, kwargs)
        except Exception as error:  # noqa: BLE001 - no network, bad key, timeout, ...
            if mode == "offline" or env_mode == "offline":
                _warn(f"could not start an offline run ({_describe(error)}); continuing without W&B")
                return
            offline_reason = f"could not reach W&B ({_describe(error)})"
            try:
                run = self._init(wandb, "offline", kwargs)
            except Exception as error2:  # noqa: BLE001
                _warn(f"could not start an offline run either ({_describe(error2)}); continuing without W&B")
                return
        self.run = run
        self.mode = "offline" if offline_reason else (env_mode or "online")
        if offline_reason:
            sync_dir = Path(run.dir).parent
            _warn(f"{offline_reason}; logging offline to {sync_dir}. Upload it later with: wandb sync {sync_dir}")
        self._call("setup", self._setup, run_dir, model_info)

    def _setup(self, run_dir: Path, model_info: dict) -> None:
        run = self.run
        (run_dir / "wandb_run_id").write_text(run.id)
        run.define_metric("trainer/step")
        run.define_metric("train/*", step_metric="trainer/step")
        run.define_metric("epoch")
        run.define_metric("val/*", step_metric="epoch")
        run.define_metric("val/cer", step_metric="epoch", summary="min")
        run.define_metric("val/wer", step_metric="epoch", summary="min")
        run.define_metric("val/loss", step_metric="epoch", summary="min")
        run.summary["model/parameters"] = model_info.get("parameters")
        run.summary["model/size_mb"] = model_info.get("size_mb")
        run.summary["ctc_impl"] = model_info.get("ctc_impl")

    def log_train(self, step: int, metrics: dict) -> None:
        if self.run is None:
            return
        record = {f"train/{k}": v for k, v in metrics.items() if k != "epoch"}
        record.update({"trainer/step": step, "epoch": metrics.get("epoch")})
        self._call("log", self.run.log, record, step=step)

    def log_val(self, epoch: int, step: int, metrics: dict, samples: list[dict]) -> None:
        if self.run is None:
            return
        names = {"best_val_cer": "best_cer"}
        record = {f"val/{names.get(k, k.removeprefix('val_'))}": v for k, v in metrics.items() if k != "val_n"}
        record.update({"epoch": epoch, "trainer/step": step})
        table = self._call("sample table", self._table, samples[: self.num_samples]) if self.num_samples > 0 else None
        if table is not None:
            record["val/samples"] = table
        self._call("log", self.run.log, record, step=step)

    def _table(self, samples: list[dict]):
        wandb = self.wandb
        table = wandb.Table(columns=["index", "image", "ground_truth", "prediction", "cer"])
        for i, sample in enumerate(samples):
            image = wandb.Image(sample_image(sample["image"])) if "image" in sample else None
            table.add_data(i, image, sample["reference"], sample["prediction"], float(sample["cer"]))
        return table

    def log_checkpoint(self, path: Path, is_best: bool, metrics: dict) -> None:
        if self.run is None or not is_best:  # upload only when the model improved
            return
        self._call("checkpoint upload", self._upload, Path(path), metrics)

    def _upload(self, path: Path, metrics: dict) -> None:
        metadata = {k: v for k, v in metrics.items() if isinstance(v, (int, float, str))}
        artifact = self.wandb.Artifact(
            artifact_name(self.run_name),
            type="model",
            metadata=metadata,
            description=f"best checkpoint of {self.run_name} (val CER {metrics.get('val_cer')})",
        )
        artifact.add_file(str(path), name=path.name)
        self.run.log_artifact(artifact, aliases=["best", "latest"])

    def log_event(self, step: int, event: dict) -> None:
        if self.run is None:
            return
        numbers = {f"event/{k}": v for k, v in event.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if numbers:
            self._call("log", self.run.log, numbers, commit=False)

    def finish(self, summary: dict) -> None:
        if self.run is None:
            return
        keys = (
            "best_val_cer",
            "best_epoch",
            "final_val_cer",
            "final_val_wer",
            "epochs",
            "steps",
            "elapsed_minutes",
            "train_lines_per_sec",
            "stop_reason",
        )
        self._call("summary", self.run.summary.update, {f"run/{k}": summary.get(k) for k in keys})
        self._call("finish", self.run.finish)
        self.run = None
