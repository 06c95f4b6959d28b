"""``text-recognizer-train --finetune``: one command from a checkpoint and a folder of lines to a fine-tuned
model with a grown alphabet, a card that names its parent, and a decoder bundle tuned on the held-out lines;
and every bad input refused before anything is written. Real checkpoints (the bundled model), real line
images (tests/fixtures/lines), real training steps."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.data.folder import LineRecord, read_labels
from text_recognizer.decoding.bundle import bundle_path, load_bundle
from text_recognizer.recognizer import DEFAULT_CHECKPOINT, LineRecognizer
from training import run_experiment
from training.finetune.command import (
    MIN_LINES,
    Lines,
    _without_options,
    build_parser,
    extended_codec,
    finetune_defaults,
    hold_out,
    plan_finetune,
    read_lm_texts,
    verdict,
)

LINES = Path(__file__).parents[2] / "fixtures" / "lines"
LM_TEXT = "the quick brown fox jumps over the lazy dog\nun été à la mer\nread the old map, then move on\n"


def make_lines(folder: Path, copies: int = 2, accented: bool = True) -> Path:
    """``8 * copies`` labelled lines from the fixture images; with ``accented`` two labels gain an 'ő' (Hungarian:
    outside the bundled model's Latin alphabet, so the alphabet grows)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["file\ttext"]
    for copy in range(copies):
        for record in read_labels(LINES):
            name = f"{copy}_{record.path.name}"
            shutil.copy(record.path, folder / name)
            text = record.text + (" hőt" if accented and copy == 0 and record.path.name in ("line_00.png",
                                                                                              "line_03.png") else "")
            rows.append(f"{name}\t{text}")
    (folder / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def finetune(*args: str) -> int:
    return run_experiment.main(["--finetune", str(DEFAULT_CHECKPOINT), "--progress", "false", *args])


def test_finetune_end_to_end(tmp_path, capsys):
    data = make_lines(tmp_path / "mine")
    text = tmp_path / "texts.txt"
    text.write_text(LM_TEXT, encoding="utf-8")
    run = tmp_path / "run"
    assert finetune("--data", str(data), "--run-dir", str(run), "--max-steps", "4", "--lm-text", str(text),
                    "--data-licence", "CC0-1.0", "--distill-weight", "1") == 0
    out = capsys.readouterr().out
    assert "1 new from the labels" in out and "'ő' (U+0151 LATIN SMALL LETTER O WITH DOUBLE ACUTE): 2 times" in out
    assert "'ő' start from their base letters" in out
    assert "held-out lines (2), CER: greedy parent" in out and "beam (en) parent" in out
    assert "teacher: the parent, weight 1" in out and "1 new characters it never reads" in out
    parent = load_checkpoint(DEFAULT_CHECKPOINT)
    best = load_checkpoint(run / "best.pt")
    assert best.codec.charset == parent.codec.charset + "ő"  # grown, old characters in place
    assert best.model_config.height == parent.model_config.height and best.model_config.deslant
    card = best.provenance.parent
    assert card["sha256"] == hashlib.sha256(DEFAULT_CHECKPOINT.read_bytes()).hexdigest()
    assert card["version"] == parent.provenance.model_version
    assert parent.licence in best.licence and "CC0-1.0" in best.licence
    assert "fine-tuned on 14 lines" in best.provenance.data
    train, val = read_labels(run / "finetune" / "train"), read_labels(run / "finetune" / "val")
    assert len(train) == 14 and len(val) == 2 and not {r.path for r in train} & {r.path for r in val}
    bundle = load_bundle(bundle_path(run / "best.pt"), best.codec)
    assert bundle["model_sha256"] == hashlib.sha256((run / "best.pt").read_bytes()).hexdigest()
    assert "+ " + str(text) + " + the 14 training lines (share" in bundle["lm"]["source"]  # extended, not replaced
    assert bundle["language"] == "en" and bundle["charset"] == best.codec.charset
    french = load_bundle(bundle_path(run / "best.pt", "fr"), best.codec)  # the parent's other language travels
    assert french["language"] == "fr" and french["model_sha256"] == bundle["model_sha256"]
    verdict = json.loads((run / "finetune" / "verdict.json").read_text())
    assert verdict["use"] in ("parent", "fine_tuned") and verdict["language"] == "en"
    assert verdict["parent_beam"] is not None and verdict["fine_tuned_beam"] is not None
    reader = LineRecognizer(run / "best.pt", decoder="beam")
    assert isinstance(reader.predict([LINES / "line_00.png"])[0], str)


def test_the_language_asked_for_leads_and_every_parent_language_travels(tmp_path, capsys):
    data = make_lines(tmp_path / "mine", accented=False)
    run = tmp_path / "run"
    assert finetune("--data", str(data), "--run-dir", str(run), "--max-steps", "2", "--language", "fr") == 0
    out = capsys.readouterr().out
    assert "French (fr): the parent's, extended with the 14 training lines" in out
    assert "English (en): the parent's, carried over as it is" in out and "beam (fr) parent" in out
    assert load_bundle(run / "best.decoder.pt")["language"] == "fr"  # the lines' language leads
    assert load_bundle(bundle_path(run / "best.pt", "en"))["language"] == "en"
    assert LineRecognizer(run / "best.pt", decoder="beam").languages == ("en", "fr")


def test_a_fine_tuned_model_that_is_not_better_is_not_the_one_to_use():
    better = {"parent_greedy": 0.2, "fine_tuned_greedy": 0.1, "parent_beam": 0.15, "fine_tuned_beam": 0.08}
    assert verdict(better) == "fine_tuned"
    assert verdict({**better, "fine_tuned_beam": 0.16}) == "parent"  # worse with beam search: the parent
    assert verdict({**better, "fine_tuned_greedy": 0.2}) == "parent"  # a tie is no gain
    assert verdict({**better, "parent_beam": None}) == "fine_tuned"  # the parent cannot beam-read the language


def test_resume_finishes_the_card_and_decoder(tmp_path):
    data = make_lines(tmp_path / "mine", accented=False)
    run = tmp_path / "run"
    assert finetune("--data", str(data), "--run-dir", str(run), "--max-steps", "2") == 0
    assert (run / "best.decoder.pt").is_file()  # no new characters: the parent's bundle, re-tuned
    (run / "best.decoder.pt").unlink()
    assert finetune("--resume", "--run-dir", str(run), "--max-steps", "4") == 0
    checkpoint = load_checkpoint(run / "last.pt")
    assert checkpoint.provenance.step == 4
    assert load_checkpoint(run / "best.pt").provenance.parent["file"] == str(DEFAULT_CHECKPOINT)
    assert (run / "best.decoder.pt").is_file()


@pytest.mark.parametrize("case", ["few lines", "not a recognizer", "empty lm text", "binary lm text",
                                  "architecture flag", "named dataset", "foreign script"])
def test_bad_input_is_refused_before_anything_is_written(tmp_path, capsys, case):
    data = make_lines(tmp_path / "mine")
    args = ["--data", str(data)]
    checkpoint = str(DEFAULT_CHECKPOINT)
    if case == "few lines":
        rows = (data / "labels.tsv").read_text(encoding="utf-8").splitlines()[: MIN_LINES]
        (data / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        expected = f"only {MIN_LINES - 1} usable lines"
    elif case == "not a recognizer":
        checkpoint = str(bundle_path(DEFAULT_CHECKPOINT))  # a decoder bundle is no model
        expected = "is not a recognizer checkpoint"
    elif case == "empty lm text":
        (tmp_path / "empty.txt").write_text("\n  \n", encoding="utf-8")
        args += ["--lm-text", str(tmp_path / "empty.txt")]
        expected = "holds no text"
    elif case == "binary lm text":
        (tmp_path / "model.bin").write_bytes(bytes(range(256)))
        args += ["--lm-text", str(tmp_path / "model.bin")]
        expected = "is a binary file"
    elif case == "architecture flag":
        args += ["--height", "64"]
        expected = "--height: the architecture comes from the --finetune checkpoint"
    elif case == "named dataset":
        args = ["--data", "synthetic"]
        expected = "named datasets are not accepted"
    else:
        rows = ["file\ttext"] + [f"{r.path.name}\tΑβγ δεζ" for r in read_labels(data)]
        (data / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        expected = "only characters the model lacks"
    run = tmp_path / "run"
    status = run_experiment.main(["--finetune", checkpoint, "--run-dir", str(run), "--progress", "false", *args])
    assert status == 2
    assert expected in capsys.readouterr().err
    assert not run.exists()


def test_validation_sharing_training_lines_warns(tmp_path, capsys):
    data = make_lines(tmp_path / "mine")
    args = build_parser().parse_args(["--finetune", str(DEFAULT_CHECKPOINT), "--data", str(data), "--val-data",
                                      str(data), "--run-dir", str(tmp_path / "run")])
    plan = plan_finetune(args)
    assert "warning: 16 of the 16 validation lines are also training lines" in capsys.readouterr().err
    assert len(plan.held_out) == 16 and not (tmp_path / "run").exists()  # planning writes nothing


def test_replay_mixes_in_parent_lines(tmp_path):
    data = make_lines(tmp_path / "mine")
    replay = make_lines(tmp_path / "old", copies=1, accented=False)
    args = build_parser().parse_args(["--finetune", str(DEFAULT_CHECKPOINT), "--data", str(data), "--replay",
                                      str(replay), "--replay-lines", "5", "--run-dir", str(tmp_path / "run")])
    plan = plan_finetune(args)
    assert len(plan.train) == 14 + 5 and plan.card["replay_lines"] == 5
    assert sum(r.path.parent == replay for r in plan.train) == 5


def test_the_parent_teaches_when_given_a_weight(tmp_path):
    """No teacher by default (it costs the user's own hand: finetuning.md); --distill-weight W makes the parent
    one (its alphabet extended by the labels' new characters), --distill-from names another; a --charset that
    reorders the parent's alphabet (whose scores could not be matched) or a non-CTC loss is refused with it."""
    data = make_lines(tmp_path / "mine")

    def run_config(*flags: str):
        args = build_parser().parse_args(["--finetune", str(DEFAULT_CHECKPOINT), "--data", str(data),
                                          "--run-dir", str(tmp_path / "run"), *flags])
        return plan_finetune(args).config.run

    assert run_config().distill_from == ""
    taught = run_config("--distill-weight", "0.5")
    assert taught.distill_from == str(DEFAULT_CHECKPOINT) and taught.distill_weight == 0.5
    assert run_config("--distill-weight", "0").distill_from == ""
    other = tmp_path / "teacher.pt"
    assert run_config("--distill-from", str(other)).distill_from == str(other)
    reordered = tmp_path / "charset.txt"
    reordered.write_text("\n".join(sorted(set(load_checkpoint(DEFAULT_CHECKPOINT).codec.charset + "ő"),
                                         reverse=True)), encoding="utf-8")
    assert run_config("--charset", str(reordered)).distill_from == ""
    with pytest.raises(ValueError, match="reorders it"):
        run_config("--charset", str(reordered), "--distill-weight", "1")
    with pytest.raises(ValueError, match="needs --loss ctc"):
        run_config("--loss", "nll", "--distill-weight", "1")


def test_extended_codec_appends_new_characters_with_counts():
    codec, new = extended_codec(Codec(), ["café", "naïve à la", "plain"])
    assert codec.charset == Codec().charset + "àéï" and dict(new) == {"à": 1, "é": 1, "ï": 1}
    with pytest.raises(ValueError, match="only characters the model lacks"):
        extended_codec(Codec(), ["Ελληνικά κείμενα"])


def test_hold_out_keeps_pages_whole():
    records = [LineRecord(Path(f"/p{page}/l{i}.png"), "x") for page in range(10) for i in range(10)]
    lines = Lines(records, [f"/p{page}" for page in range(10) for _ in range(10)])
    train, val, how = hold_out(lines, 0.1, seed=0)
    assert len(val) == 10 and len(train) == 90 and "1 whole pages" in how
    assert len({r.path.parent for r in val}) == 1
    assert not {r.path.parent for r in val} & {r.path.parent for r in train}
    again = hold_out(lines, 0.1, seed=0)[1]
    assert again == val  # seeded


def test_defaults_scale_with_the_lines():
    parent = load_checkpoint(DEFAULT_CHECKPOINT)
    small, large = finetune_defaults(parent, 25), finetune_defaults(parent, 300)
    assert small["optim.max_steps"] < large["optim.max_steps"] <= 1500
    assert small["optim.ema_decay"] < large["optim.ema_decay"] < 1
    assert large["run.precision"] == parent.provenance.recipe["run"]["precision"]


def test_lm_text_reads_files_folders_and_label_folders(tmp_path):
    (tmp_path / "a.txt").write_text("one line\n\n two  words \n", encoding="utf-8")
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "b.txt").write_text("in a folder\n", encoding="utf-8")
    lines = read_lm_texts([str(tmp_path / "a.txt"), str(tmp_path / "texts"), str(LINES)])
    assert lines[:3] == ["one line", "two words", "in a folder"] and "hello world" in lines
    with pytest.raises(ValueError, match="no such file"):
        read_lm_texts([str(tmp_path / "missing.txt")])


def test_resume_command_line_drops_finetune_flags():
    argv = ["--finetune", "x.pt", "--resume", "--lm-text", "a.txt", "b.txt", "--run-dir", "r", "--replay=d"]
    assert _without_options(argv, ("--finetune", "--lm-text", "--replay")) == ["--resume", "--run-dir", "r"]


def test_old_characters_keep_their_output_rows(tmp_path):
    data = make_lines(tmp_path / "mine")
    run = tmp_path / "run"
    assert finetune("--data", str(data), "--run-dir", str(run), "--max-steps", "1", "--lr", "1e-12",
                    "--ema-decay", "0") == 0
    parent, child = load_checkpoint(DEFAULT_CHECKPOINT), load_checkpoint(run / "best.pt")
    old, new = parent.model_state["head.weight"], child.model_state["head.weight"]
    assert new.shape[0] == old.shape[0] + 1
    torch.testing.assert_close(new[: old.shape[0]], old, atol=1e-6, rtol=0)


def test_dry_run_checks_and_prints_the_plan_without_writing(tmp_path, capsys):
    data = make_lines(tmp_path / "mine")
    run = tmp_path / "run"
    assert finetune("--data", str(data), "--run-dir", str(run), "--dry-run") == 0
    out = capsys.readouterr().out
    assert "training lines: 14; validation: 2 lines held out of the 16 usable lines" in out
    assert "dry run: nothing written" in out and not run.exists()


def test_val_fraction_sets_the_held_out_share(tmp_path):
    data = make_lines(tmp_path / "mine", copies=4)
    args = build_parser().parse_args(["--finetune", str(DEFAULT_CHECKPOINT), "--data", str(data), "--val-fraction",
                                      "0.25", "--run-dir", str(tmp_path / "run")])
    assert len(plan_finetune(args).held_out) == 8
    with pytest.raises(ValueError, match="--val-fraction must be in"):
        hold_out(Lines([LineRecord(Path("a.png"), "a")] * 12, [str(i) for i in range(12)]), 1.5, seed=0)
