"""W&B logging: real offline runs in a temporary directory, read back from the files W&B writes.

The ``.wandb`` file is W&B's transaction log: a 7-byte header then LevelDB-style blocks of
protobuf ``Record``s (history rows, summary updates, config, artifacts with their manifests).
Artifact files (the checkpoint, the sample tables and their PNGs) are staged under
``WANDB_DATA_DIR`` and referenced from the manifests by ``local_path``.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import pytest

from training.experiments.wandb_logger import WandbLogger, artifact_name, sample_image
from training.loop.loggers import Logger
from training.loop.trainer import fit

from ..helpers import tiny_config

wandb = pytest.importorskip("wandb")
from google.protobuf.message import DecodeError  # noqa: E402
from wandb.proto import wandb_internal_pb2 as pb  # noqa: E402

MODEL_INFO = {"parameters": 1234, "size_mb": 0.01, "ctc_impl": "torch", "device": "cpu"}


# -- reading what W&B wrote --------------------------------------------------------------------------


def read_records(path: Path) -> list:
    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:7]
    records, pos, pending, block = [], 7, b"", 32768
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # block trailer padding
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if pos + 7 + length > len(data):  # the writer is still appending this chunk: read it next time
            break
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        if kind == 0:
            continue
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):  # FULL or LAST
            record = pb.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


class OfflineRun:
    """History rows, summary, config and artifacts of the one offline run under ``root``."""

    def __init__(self, root: Path):
        files = sorted(Path(root).rglob("offline-run-*/run-*.wandb"))
        assert len(files) == 1, files
        self.dir = files[0].parent
        deadline = time.monotonic() + 30  # W&B's service may still be flushing the log after finish()
        while True:
            try:
                self.records = read_records(files[0])
            except DecodeError:  # caught the service mid-write; a finished log must still parse
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
                continue
            kinds = [r.WhichOneof("record_type") for r in self.records]
            if "exit" in kinds or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert "run" in kinds, kinds
        self.run = next(r.run for r, k in zip(self.records, kinds) if k == "run")
        self.config = {u.key: json.loads(u.value_json) for u in self.run.config.update}
        for r, k in zip(self.records, kinds):
            if k == "config":
                self.config.update({u.key: json.loads(u.value_json) for u in r.config.update})
        self.history = [
            {"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in r.history.item}
            for r, k in zip(self.records, kinds)
            if k == "history"
        ]
        self.summary: dict = {}
        for r, k in zip(self.records, kinds):
            if k == "summary":
                self.summary.update(
                    {"/".join(u.nested_key) or u.key: json.loads(u.value_json) for u in r.summary.update}
                )
        self.artifacts = [r.artifact for r, k in zip(self.records, kinds) if k == "artifact"]

    def series(self, key: str) -> list:
        return [row[key] for row in self.history if key in row]

    def tables(self) -> list[dict]:
        """Each logged sample table (in order) with its rows and the PNG files of its images."""
        out = []
        for artifact in self.artifacts:
            if artifact.type != "run_table":
                continue
            files = {c.path: Path(c.local_path) for c in artifact.manifest.contents}
            table_path = next(p for p in files if p.endswith(".table.json"))
            table = json.loads(files[table_path].read_text())
            out.append({"table": table, "files": files})
        return out


@pytest.fixture
def offline_env(tmp_path, monkeypatch):
    """No WANDB_MODE and no API key: the logger must fall back to offline mode by itself."""
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_SILENT", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    for name, sub in (
        ("WANDB_DIR", "wandb-dir"),
        ("WANDB_DATA_DIR", "data"),
        ("WANDB_CACHE_DIR", "cache"),
        ("WANDB_CONFIG_DIR", "config"),
        ("WANDB_ARTIFACT_DIR", "artifacts"),
    ):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(name, str(tmp_path / sub))
    monkeypatch.setenv("WANDB_PROJECT", "tr-tests")
    monkeypatch.setenv("WANDB_CONSOLE", "off")
    monkeypatch.setenv("WANDB_X_DISABLE_STATS", "true")
    return tmp_path


class Recorder(Logger):
    def __init__(self):
        self.best_saves = 0
        self.val_epochs = 0

    def log_val(self, epoch, step, metrics, samples):
        self.val_epochs += 1

    def log_checkpoint(self, path, is_best, metrics):
        self.best_saves += is_best


@pytest.mark.slow
def test_training_run_logs_everything_offline(offline_env, capsys):
    recorder = Recorder()
    config = tiny_config(
        offline_env / "run",
        data={"synthetic_train_lines": 8, "synthetic_val_lines": 6},
        optim={"batch_size": 4, "max_epochs": 2, "lr": 3e-3},
        run={"group": "grp", "wandb": True, "wandb_samples": 4},
    )
    summary = fit(config, loggers=[WandbLogger(group="grp", num_samples=4), recorder])

    err = capsys.readouterr().err
    assert err.count("warning: W&B:") == 1, err  # one visible warning, with the command to upload later
    assert "no API key" in err and "wandb sync " in err

    run = OfflineRun(offline_env / "wandb-dir")  # WANDB_DIR respected
    assert f"wandb sync {run.dir}" in err
    assert run.run.project == "tr-tests" and run.run.run_group == "grp" and run.run.display_name == "run"
    # the full resolved config, model size, environment and CTC implementation
    assert run.config["optim"]["max_epochs"] == 2 and run.config["model"]["height"] == 32
    assert run.config["run"]["group"] == "grp"
    assert run.config["model_info"]["parameters"] == summary["parameters"]
    env = run.config["env"]
    assert env["ctc_impl"] == "torch" and env["torch"] and "cuda" in env and "triton" in env
    assert len(env["git_commit"]) in (40, 7) or env["git_commit"] == "unknown"
    assert run.summary["model/parameters"] == summary["parameters"] and run.summary["model/size_mb"] > 0
    # per-step training metrics, per-epoch validation metrics, CER summarised as its minimum
    assert len(run.series("train/loss")) == summary["steps"] == 4
    assert len(run.series("train/lr")) == 4 and all(v > 0 for v in run.series("train/lines_per_sec"))
    cers = run.series("val/cer")
    assert len(cers) == 2 and len(run.series("val/wer")) == 2 and len(run.series("val/loss")) == 2
    assert run.series("epoch")[-1] == 2
    assert run.summary["val/cer"] == {"min": pytest.approx(min(cers))}
    assert min(cers) == pytest.approx(summary["best_val_cer"])
    # the same validation samples every epoch, with images
    tables = run.tables()
    assert len(tables) == 2
    for t in tables:
        assert t["table"]["columns"] == ["index", "image", "ground_truth", "prediction", "cer"]
        assert len(t["table"]["data"]) == 4
        pngs = [p for p in t["files"] if p.endswith(".png")]
        assert len(pngs) >= 1 and all(t["files"][p].read_bytes()[:4] == b"\x89PNG" for p in pngs)
    assert [r[2] for r in tables[0]["table"]["data"]] == [r[2] for r in tables[1]["table"]["data"]]
    # the best checkpoint as a model artifact, uploaded only on improvement
    models = [a for a in run.artifacts if a.type == "model"]
    assert len(models) == recorder.best_saves >= 1
    for artifact in models:
        assert artifact.name == artifact_name("run") and set(artifact.aliases) == {"best", "latest"}
        (content,) = artifact.manifest.contents
        assert content.path == "best.pt" and content.size > 1000
    assert (offline_env / "run" / "wandb_run_id").read_text() == run.run.run_id


@pytest.mark.slow
def test_hooks_upload_only_on_improvement_and_keep_rows(offline_env, tmp_path):
    run_dir = tmp_path / "hooks"
    run_dir.mkdir()
    logger = WandbLogger(project="explicit-project", num_samples=2)
    logger.start({"run": {"name": "hooks"}}, run_dir, MODEL_INFO)
    assert logger.mode == "offline"
    import torch

    images = [torch.rand(1, 8, 20), torch.rand(1, 8, 30), torch.rand(1, 8, 10)]
    ckpt = run_dir / "best.pt"
    for epoch, (cer, improved) in enumerate([(0.9, True), (0.95, False), (0.5, True)], 1):
        samples = [
            {"reference": f"ref{i}", "prediction": f"pred{i}-{epoch}", "cer": cer, "image": images[i]} for i in range(3)
        ]
        logger.log_train(
            epoch * 10, {"epoch": epoch, "loss": 1.0 / epoch, "lr": 1e-3, "grad_norm": 1.0, "lines_per_sec": 5.0}
        )
        logger.log_val(
            epoch,
            epoch * 10,
            {"val_loss": 1.0, "val_cer": cer, "val_wer": 1.0, "val_n": 3, "best_val_cer": 0.1},
            samples,
        )
        ckpt.write_bytes(b"checkpoint %d" % epoch)
        logger.log_checkpoint(ckpt, improved, {"val_cer": cer})
    logger.finish({"best_val_cer": 0.5, "steps": 30})

    run = OfflineRun(offline_env / "wandb-dir")
    assert run.run.project == "explicit-project"
    assert run.series("val/cer") == [0.9, 0.95, 0.5] and run.summary["val/cer"] == {"min": 0.5}
    assert run.summary["run/best_val_cer"] == 0.5
    models = [a for a in run.artifacts if a.type == "model"]
    assert len(models) == 2  # epochs 1 and 3, not the epoch that got worse
    assert [json.loads(a.metadata)["val_cer"] for a in models] == [0.9, 0.5]
    tables = run.tables()
    assert len(tables) == 3
    for t in tables:
        rows = t["table"]["data"]
        assert [r[0] for r in rows] == [0, 1] and [r[2] for r in rows] == ["ref0", "ref1"]  # num_samples=2, same rows


def test_logging_errors_never_stop_training(tmp_path, capsys):
    class Broken:
        id = "broken"

        def __getattr__(self, name):
            def fail(*args, **kwargs):
                raise RuntimeError(f"{name} exploded\nsecond line")

            return fail

    class BrokenWandb(WandbLogger):
        def start(self, config, run_dir, model_info):
            self.run, self.run_name = Broken(), "x"

    logger = BrokenWandb()
    summary = fit(tiny_config(tmp_path / "run", optim={"max_epochs": 2}), loggers=[logger])
    assert summary["steps"] == 8 and logger.run is None
    err = capsys.readouterr().err
    assert err.count("warning: W&B:") == 1 and "log failed (RuntimeError: log exploded)" in err


def test_disabled_mode_is_inert(tmp_path):
    # the autouse fixture sets WANDB_MODE=disabled
    logger = WandbLogger()
    summary = fit(tiny_config(tmp_path / "run"), loggers=[logger])
    assert logger.mode == "disabled" and logger.run is None and summary["steps"] == 4
    assert not (tmp_path / "run" / "wandb").exists()


@pytest.mark.slow
def test_unreachable_server_falls_back_to_offline(offline_env, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WANDB_API_KEY", "a" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    run_dir = tmp_path / "net"
    run_dir.mkdir()
    logger = WandbLogger(init_timeout=3)
    logger.start({"run": {}}, run_dir, MODEL_INFO)
    logger.finish({})
    err = capsys.readouterr().err
    assert logger.mode == "offline" and err.count("warning: W&B:") == 1
    assert "could not reach W&B" in err and "wandb sync " in err


def test_sample_image_is_dark_ink_on_white():
    import torch

    image = torch.zeros(1, 4, 6)
    image[0, 1, 2] = 1.0  # ink is high in the model's input
    array = sample_image(image)
    assert array.shape == (4, 6) and array.dtype.name == "uint8"
    assert array[1, 2] == 0 and array[0, 0] == 255


def test_run_experiment_wandb_flag(tmp_path, monkeypatch):
    from training.loop.config import parse_bool  # noqa: F401 - the flag parses like every boolean
    from training.run_experiment import build_parser

    args = vars(build_parser().parse_args(["--wandb", "--group", "g", "--wandb-samples", "3"]))
    assert args["run.wandb"] is True and args["run.group"] == "g" and args["run.wandb_samples"] == 3
    assert vars(build_parser().parse_args(["--wandb=false"]))["run.wandb"] is False
    assert vars(build_parser().parse_args([]))["run.wandb"] is False
