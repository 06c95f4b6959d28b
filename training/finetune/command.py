"""Fine-tune a recognizer on a few hundred lines of one hand or language, in one command.

    text-recognizer-train --finetune CHECKPOINT --data MY_LINES [MORE...] [--val-data DIR...]
        [--lm-text FILE_OR_FOLDER...] [--replay DIR... --replay-lines N] [--distill-weight W]
        [--data-licence TEXT] [--dry-run]
        [any training flag]

Why: adapting the bundled model to a collection used to need its whole architecture repeated on the command
line and settings nobody had measured for small data. Here everything the weights depend on (architecture,
input height, deslanting stem, window geometry, precision) comes from the checkpoint, and the rest has
defaults chosen for a few hundred lines (``finetune_defaults``; benchmarks/results/finetuning.md):

- the alphabet is the checkpoint's, **extended** by every new character of the labels (NFC, listed with
  counts; old characters keep their output weights, ``training/loop/alphabet.py``); ``--charset`` still overrides;
- without ``--val-data``, 10% of the lines are held out (seeded; whole pages for PAGE/ALTO folders) to choose
  ``best.pt`` and to report on; the split is written to ``<run>/finetune/`` so it can be checked and reused;
- ``--replay DIR`` mixes lines the parent was trained on (e.g. IAM) into every epoch, so it forgets less;
  ``--distill-weight W`` makes the parent a teacher on the user's own lines instead (no old lines needed;
  off by default: it keeps other hands but learns the user's less, ``DEFAULT_DISTILL_WEIGHT``);
- the decoder keeps what the parent knew: every decoder bundle of the parent (each language) travels; the one
  of the lines' language (``--language``, else detected among the parent's) has the training lines and
  ``--lm-text`` mixed into its language models (``training/decoder/extend.py``), and its beam settings and
  calibration are re-tuned on the held-out lines (``training/decoder/tune.py``). It lands as
  ``best.decoder.pt`` (the others as ``best.<xx>.decoder.pt``), so ``--decoder beam`` reads that language at
  once;
- the end compares parent and fine-tuned model on the held-out lines, greedy and beam; a fine-tuned model that
  is not better is said to be so, and ``<run>/finetune/verdict.json`` names the parent as the one to use;
- ``best.pt``'s card names its parent (file, sha256, version, licence) and the data, and its licence is the
  chain: the parent's terms plus ``--data-licence``.

Every input is checked before anything is written: fewer than ``MIN_LINES`` usable lines, labels wholly in
characters the model lacks, a checkpoint that is not a recognizer, an empty or binary LM text. A validation
set that shares lines with the training lines is a warning. ``--resume --run-dir DIR`` continues a stopped
fine-tuning run as any run, then finishes its card and decoder.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import random
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from text_recognizer.checkpoint import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from text_recognizer.codec import LATIN_CHARSET, Codec
from text_recognizer.data.checks import DataCheckError, DataReport, check_records
from text_recognizer.data.folder import DatasetFormatError, LineRecord, read_labels
from text_recognizer.data.page import cut_layout_folder, is_layout_folder
from text_recognizer.data.tokenization import detokenize
from text_recognizer.decoding.bundle import (
    bundle_language,
    bundle_path,
    decoder_bundle_for,
    language_bundle_paths,
    load_bundle,
    save_bundle,
)
from text_recognizer.decoding.language import check_language, described
from text_recognizer.decoding.lm_builder import LanguageModelSpec, build_decoder_bundle, read_texts
from text_recognizer.metrics import cer
from text_recognizer.models.line_cnn import WindowGeometry
from text_recognizer.normalization import normalizer
from training.decoder.extend import detect_language, extend_bundle, rebased
from training.loop.alphabet import alphabet_from_texts, describe, describe_new_rows, read_charset, write_charset
from training.loop.config import ExperimentConfig, add_config_arguments, with_flags
from training.loop.run_setup import LOG_ROOT
from training.loop.run_state import TrainingError

#: Fewer usable training lines than this cannot teach a hand anything measurable.
MIN_LINES = 10
#: Share of the lines held out when no ``--val-data`` is given (``--val-fraction`` changes it).
HELD_OUT_SHARE = 0.10
#: Steps per training line, and the bounds. 8 a line read the held-out lines no better than 5 (Copiste 300
#: lines: 16.71% against 16.78%; Stanford 100: the same) and forgot more of IAM (12.7% against 11.9%), so 5:
#: 300 lines train in about 7.5 minutes on a 2-core CPU (180 steps a minute for the bundled model, batch 16;
#: benchmarks/results/finetuning.md). ``--max-minutes`` 15 stops a slower machine in time.
STEPS_PER_LINE = 5
MIN_STEPS, MAX_STEPS = 300, 1500
#: The parent as teacher (``--distill-weight W``: the KL of its frame posteriors to the model's, per frame, on the
#: user's lines) is off by default. Measured with weight 1 (benchmarks/results/finetuning.md, fifty-eighth session):
#: the fine-tuned model forgets far less (IAM val 7.7-8.2% instead of 9.7-11.7%; the parent 6.62%) but learns the
#: user's hand less (Washington 100 lines: 6.53% instead of 4.51% greedy; 12 Copiste pages: 13.56% against 13.38%).
DEFAULT_DISTILL_WEIGHT = 0.0
#: Validations over a run (``--val-every`` is set so that about this many happen).
VALIDATIONS = 10
#: Model settings a fine-tuning run may change: they have no weights.
TRAINING_ONLY_MODEL_FLAGS = ("model.dropout", "model.stochastic_depth", "model.stochastic_depth_mode",
                             "model.stochastic_depth_start")
SPLIT_DIR = "finetune"
#: The bundle of the user's language before tuning, in ``SPLIT_DIR`` (the others: ``untuned.<xx>.decoder.pt``).
UNTUNED = "untuned.decoder.pt"
#: This command's own flags (dropped from a ``--resume``'s command line, which names a plain run).
OWN_FLAGS = ("--finetune", "--lm-text", "--language", "--replay", "--replay-lines", "--data-licence", "--dry-run")


@dataclass
class Lines:
    """Labelled lines with the group each belongs to (a page for PAGE/ALTO data, else the line itself)."""

    records: list[LineRecord] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)

    def extend(self, other: Lines) -> None:
        self.records += other.records
        self.groups += other.groups


def read_lines(folders: Sequence[str], detok: bool = False, normalization: str = "NFC") -> Lines:
    """The labelled lines of ``labels.tsv`` folders and PAGE/ALTO folders, labels normalised."""
    normalise = normalizer(normalization)
    lines = Lines()
    for folder in folders:
        if not Path(folder).is_dir():
            raise DatasetFormatError(f"data folder {folder} does not exist or is not a directory")
        if is_layout_folder(folder):
            cut = cut_layout_folder(folder, normalize=normalise)
            lines.records += cut.records
            lines.groups += [str(r.path.parent) for r in cut.records]  # one cache folder per page
        else:
            for record in read_labels(folder):
                text = normalise(detokenize(record.text) if detok else record.text)
                lines.records.append(LineRecord(record.path, text))
                lines.groups.append(str(record.path))
    return lines


def extended_codec(parent: Codec, texts: Sequence[str]) -> tuple[Codec, Counter]:
    """The parent's alphabet plus the new characters of ``texts`` (appended in code-point order), and the
    counts of those new characters. Refuses labels that share no character with the parent."""
    counts: Counter = Counter()
    for text in texts:
        counts.update(text)
    for control in [c for c in counts if c in "\n\r\t"]:
        del counts[control]
    letters = [c for c in counts if not c.isspace()]
    if letters and not any(c in parent.charset for c in letters):
        shown = "".join(sorted(letters)[:20])
        raise ValueError(f"the labels use only characters the model lacks ({shown!r}...): fine-tuning would "
                         "reuse nothing of its output layer; train a new model with --charset data instead")
    new = sorted(c for c in counts if c not in parent.charset)
    return Codec(parent.charset + "".join(new)), Counter({c: counts[c] for c in new})


def hold_out(lines: Lines, share: float, seed: int) -> tuple[list[LineRecord], list[LineRecord], str]:
    """Split ``lines`` into (train, held out) by group, seeded; ``how`` says what was held out."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"--val-fraction must be in (0, 1) when --val-data is not given, got {share}")
    groups = sorted(set(lines.groups))
    unit = "pages" if len(groups) < len(lines.records) else "lines"
    if len(groups) < 2:  # one page: hold out lines of it instead
        groups, unit = [str(i) for i in range(len(lines.records))], "lines (a single page)"
        keys = groups
    else:
        keys = lines.groups
    order = groups[:]
    random.Random(seed).shuffle(order)
    wanted = max(1, round(share * len(lines.records)))
    held: set[str] = set()
    count = 0
    sizes = Counter(keys)
    for group in order:
        if count >= wanted:
            break
        held.add(group)
        count += sizes[group]
    train = [r for r, k in zip(lines.records, keys) if k not in held]
    val = [r for r, k in zip(lines.records, keys) if k in held]
    whole = f" ({len(held)} whole pages)" if unit == "pages" else ""
    return train, val, f"{len(val)} lines{whole} held out"


def _digest(path: Path) -> str:
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()
    except OSError:
        return f"unreadable:{path}"


def shared_lines(train: Sequence[LineRecord], val: Sequence[LineRecord]) -> int:
    """How many validation lines are also training lines (the same image file content)."""
    seen = {_digest(r.path) for r in train}
    return sum(_digest(r.path) in seen for r in val)


def read_lm_texts(sources: Sequence[str]) -> list[str]:
    """The lines of ``--lm-text`` files and folders (``.txt`` files, or ``labels.tsv`` folders read as
    ``training.decoder.build_lm`` reads them: detokenised), refusing empty and binary files with a message."""
    lines: list[str] = []
    for source in map(Path, sources):
        if (source / "labels.tsv").is_file():
            lines += read_texts([source])
            continue
        files = sorted(source.rglob("*.txt")) if source.is_dir() else [source]
        if not files or not all(f.is_file() for f in files):
            raise ValueError(f"--lm-text {source}: no such file, or a folder without .txt files")
        for file in files:
            raw = file.read_bytes()
            if b"\x00" in raw:
                raise ValueError(f"--lm-text {file} is a binary file, not text")
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError as error:
                raise ValueError(f"--lm-text {file} is not UTF-8 text: {error}") from None
            found = [" ".join(line.split()) for line in text.splitlines()]
            found = [line for line in found if line]
            if not found:
                raise ValueError(f"--lm-text {file} holds no text")
            lines += found
    return lines


def finetune_defaults(parent: Checkpoint, train_lines: int) -> dict:
    """Settings for a few hundred lines, as ``section.field`` flags (each one measured:
    benchmarks/results/finetuning.md). Steps scale with the lines, EMA averages about the last tenth of
    them, and validation runs about ``VALIDATIONS`` times."""
    steps = int(min(MAX_STEPS, max(MIN_STEPS, STEPS_PER_LINE * train_lines)))
    return {
        "optim.optimizer": "adamw", "optim.lr": 3e-4, "optim.weight_decay": 0.01, "optim.batch_size": 16,
        "optim.lr_schedule": "cosine", "optim.cosine_floor": 0.05, "optim.warmup_steps": 50,
        "optim.max_steps": steps, "optim.max_epochs": 100_000, "optim.max_minutes": 15.0,
        "optim.ema_decay": round(1 - 10 / steps, 5), "optim.sortagrad": False,
        "data.augment": True, "data.augment_p": 0.5, "data.detokenize": False,
        "run.precision": parent.provenance.recipe.get("run", {}).get("precision", "32"),
    }


def val_every(train_lines: int, batch_size: int, steps: int) -> int:
    """Epochs between validations, so that about ``VALIDATIONS`` happen over ``steps`` steps."""
    per_epoch = max(1, math.ceil(train_lines / batch_size))
    return max(1, round(steps / per_epoch / VALIDATIONS))


def write_split(folder: Path, records: Sequence[LineRecord]) -> Path:
    """A ``labels.tsv`` folder naming the lines by absolute path (read back as any dataset folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["file\ttext"] + [f"{Path(r.path).resolve()}\t{r.text.replace(chr(9), ' ')}" for r in records]
    (folder / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


@dataclass
class Plan:
    """A checked fine-tuning run: its configuration and codec, the held-out lines, the decoder bundles to
    carry over (the first, of the user's language, is re-tuned at the end) and what the card says."""

    config: ExperimentConfig
    codec: Codec
    parent: Checkpoint
    parent_path: Path
    train: list[LineRecord]  # the user's training lines and any replayed ones
    held_out: list[LineRecord]
    bundles: dict[str, dict]  # language -> bundle to carry over, the user's language (tuned at the end) first
    card: dict
    report: list[str]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="text-recognizer-train",
        description="Fine-tune a checkpoint on your own lines: the model's settings come from the checkpoint, "
                    "its alphabet grows by your labels' new characters, and small-data defaults apply "
                    "(training/finetune/command.py). Any training flag overrides a default.",
    )
    group = parser.add_argument_group("fine-tuning")
    group.add_argument("--finetune", required=True, metavar="CHECKPOINT",
                       help="the model to start from (e.g. text_recognizer/artifacts/default.pt)")
    group.add_argument("--lm-text", nargs="+", default=[], metavar="FILE_OR_FOLDER",
                       help="your texts (.txt files, folders of them, or labels.tsv folders) for the language "
                            "models; the training lines are added; never put held-out lines here")
    group.add_argument("--language", default=None, metavar="XX",
                       help="the language of your lines (ISO 639-1, e.g. fr): its language models are extended with "
                            "your texts and lead the fine-tuned model's beam search (default: detected from the "
                            "lines among the parent's languages)")
    group.add_argument("--replay", nargs="+", default=[], metavar="DIR",
                       help="labels.tsv folders of lines the parent learned from (e.g. IAM train), mixed in so "
                            "the model forgets less")
    group.add_argument("--replay-lines", type=int, default=None,
                       help="how many --replay lines to mix in (seeded; default: as many as the training lines)")
    group.add_argument("--dry-run", action="store_true",
                       help="check the data and print the plan (alphabet, split, language models, steps); write "
                            "nothing and train nothing")
    group.add_argument("--data-licence", default="",
                       help="the licence or terms of your lines, for the model card's licence chain")
    add_config_arguments(parser, suppress_defaults=True)
    return parser


def _given(args: argparse.Namespace) -> dict:
    return {k: v for k, v in vars(args).items() if "." in k}


def _load_parent(given: dict, finetune: str) -> tuple[Path, Checkpoint]:
    """The parent checkpoint, after refusing flags that would change its architecture."""
    refused = [k for k in given if k.startswith("model.") and k not in TRAINING_ONLY_MODEL_FLAGS]
    if refused:
        flags = ", ".join("--" + k.split(".", 1)[1].replace("_", "-") for k in refused)
        raise ValueError(f"{flags}: the architecture comes from the --finetune checkpoint and cannot change")
    parent_path = Path(finetune)
    try:
        parent = load_checkpoint(parent_path, map_location="cpu")
    except CheckpointError as error:
        raise CheckpointError(f"--finetune {parent_path} is not a recognizer checkpoint: {error}") from None
    return parent_path, parent


def _data_folders(given: dict) -> tuple[str, ...]:
    """The ``--data`` folders: required, and folders only (named datasets go through ``--replay``)."""
    data = tuple(given.get("data.data", ()))
    if not data:
        raise ValueError("--finetune needs --data: your labelled lines (labels.tsv folders or PAGE/ALTO folders)")
    if any(d in ("synthetic", "iam", "emnist_lines") for d in data):
        raise ValueError("--finetune reads dataset folders (labels.tsv or PAGE/ALTO); named datasets are not "
                         "accepted here (use --replay for lines the parent learned from)")
    return data


def _alphabet(given: dict, parent: Checkpoint, lines: Lines, normalization: str, report: list[str]) -> Codec:
    """The run's codec: an explicit ``--charset``, else the parent's extended by the labels' new characters."""
    charset = given.get("data.charset")
    if charset:  # an explicit alphabet overrides the extension
        if charset == "iam":
            codec = Codec()
        elif charset == "latin":
            codec = Codec(LATIN_CHARSET)
        elif charset == "data":
            min_count = given.get("data.charset_min_count", 1)
            codec = alphabet_from_texts([r.text for r in lines.records], min_count).codec
        else:
            codec = read_charset(charset, normalization)
        report.append(f"alphabet: {len(codec.charset)} characters from --charset {charset}")
    else:
        codec, new = extended_codec(parent.codec, [r.text for r in lines.records])
        report.append(f"alphabet: the model's {len(parent.codec.charset)} characters"
                      + (f" + {len(new)} new from the labels ({describe_new_rows(''.join(new), parent.codec)}):"
                         if new else ", nothing new"))
        report += [f"  {describe(c)}: {n} times" for c, n in sorted(new.items(), key=lambda x: (-x[1], x[0]))]
    return codec


def _check(records: Sequence[LineRecord], codec: Codec, parent: Checkpoint) -> DataReport:
    """``check_records`` against the parent's input height and window geometry, skipping unusable lines."""
    geometry = WindowGeometry(parent.model_config.window_width, parent.model_config.window_stride)
    return check_records(records, codec, geometry, parent.model_config.height, policy="skip")


def _usable(lines: Lines, codec: Codec, parent: Checkpoint, data: Sequence[str], report: list[str]) -> Lines:
    """The lines the model can learn from (groups kept aligned); refuses fewer than ``MIN_LINES``."""
    checked = _check(lines.records, codec, parent)
    kept = {id(r) for r in checked.kept}
    usable = Lines([r for r in lines.records if id(r) in kept], [g for r, g in zip(lines.records, lines.groups)
                                                                 if id(r) in kept])
    if checked.num_skipped:
        report.append(f"left out {checked.num_skipped} lines:\n{checked.summary()}")
    if len(usable.records) < MIN_LINES:
        raise DataCheckError(f"only {len(usable.records)} usable lines in {', '.join(data)}: fine-tuning needs at "
                             f"least {MIN_LINES}" + (f"\n{checked.summary()}" if checked.num_skipped else ""))
    return usable


def _split(given: dict, usable: Lines, codec: Codec, parent: Checkpoint, detok: bool, normalization: str,
           seed: int, report: list[str]) -> tuple[list[LineRecord], list[LineRecord], str]:
    """(train, held out, how): ``--val-data`` when given (warning on shared lines), else a seeded hold-out."""
    val_folders = tuple(given.get("data.val_data", ()))
    if val_folders:
        train = usable.records
        val_lines = read_lines(val_folders, detok, normalization)
        val_check = _check(val_lines.records, codec, parent)
        held_out, how = val_check.kept, f"validation: {len(val_check.kept)} lines of {', '.join(val_folders)}"
        if not held_out:
            raise DataCheckError(f"no usable validation lines in {', '.join(val_folders)}")
        if shared := shared_lines(train, held_out):
            print(f"warning: {shared} of the {len(held_out)} validation lines are also training lines (same "
                  "image): validation will flatter the model", file=sys.stderr)
    else:
        train, held_out, how = hold_out(usable, given.get("data.val_fraction", HELD_OUT_SHARE), seed)
        how = f"validation: {how} of the {len(usable.records)} usable lines (seed {seed})"
    report.append(f"training lines: {len(train)}; {how}")
    return train, held_out, how


def _replay(args: argparse.Namespace, parent: Checkpoint, codec: Codec, normalization: str, n_train: int,
            seed: int, report: list[str]) -> list[LineRecord]:
    """The seeded sample of ``--replay`` lines mixed into every epoch (none without ``--replay``)."""
    replay: list[LineRecord] = []
    if args.replay:
        natural = parent.decoding.spacing == "natural"
        pool = read_lines(args.replay, detok=natural, normalization=normalization).records
        pool = _check(pool, codec, parent).kept
        wanted = n_train if args.replay_lines is None else args.replay_lines
        if wanted < 1 or not pool:
            raise ValueError(f"--replay: {len(pool)} usable lines, --replay-lines {wanted}: nothing to mix in")
        replay = random.Random(seed).sample(pool, min(wanted, len(pool)))
        report.append(f"replay: {len(replay)} lines of {', '.join(args.replay)} mixed into every epoch")
    elif args.replay_lines is not None:
        raise ValueError("--replay-lines needs --replay DIR")
    return replay


def _parent_bundles(parent: Checkpoint, parent_path: Path) -> dict[str, dict]:
    """Every decoder bundle of the parent, language -> bundle, its own (primary) one first."""
    found: dict[str, dict] = {}
    primary = decoder_bundle_for(parent_path, parent.decoding.decoder or None, parent.codec)
    if primary is not None:
        found[bundle_language(primary)] = primary
    for language, path in language_bundle_paths(parent_path).items():
        found.setdefault(language, load_bundle(path))
    return found


def _user_language(args: argparse.Namespace, bundles: Mapping[str, dict], texts: Sequence[str],
                   report: list[str]) -> str | None:
    """``--language``, else the parent's language whose character LM suits the lines best (``None``: no
    bundle to choose among and none asked for)."""
    if args.language:
        return check_language(args.language)
    if len(bundles) > 1:
        language = detect_language(texts, bundles)
        report.append(f"language of the lines: {described(language)} (detected among the parent's "
                      f"{', '.join(bundles)}; --language changes it)")
        return language
    return next(iter(bundles), None)


def _decoder(args: argparse.Namespace, parent: Checkpoint, parent_path: Path, codec: Codec,
             train: Sequence[LineRecord], held_out: Sequence[LineRecord],
             report: list[str]) -> tuple[dict[str, dict], str]:
    """(bundles to carry over, user's language first; note). Every bundle of the parent travels (``rebased``
    to a grown alphabet); the one of the user's language has the training lines and ``--lm-text`` mixed into
    its LMs (``training.decoder.extend``). A language the parent has no bundle for gets one built from them."""
    parents = _parent_bundles(parent, parent_path)
    texts = read_lm_texts(args.lm_text) + [r.text for r in train]
    language = _user_language(args, parents, [r.text for r in train], report)
    source = f"{', '.join(args.lm_text)} + " if args.lm_text else ""
    source += f"the {len(train)} training lines"
    bundles: dict[str, dict] = {}
    notes = []
    if language is not None and language not in parents:
        spec = LanguageModelSpec()
        bundles[language], _ = build_decoder_bundle(texts, codec, spec, source, language=language)
        notes.append(f"{described(language)}: built from {source} ({len(texts):,} lines; the parent has none)")
    for code, bundle in parents.items():
        try:
            carried = rebased(bundle, codec)
        except ValueError as error:
            notes.append(f"{described(code)}: left behind ({error})")
            continue
        if code == language:
            carried, how = extend_bundle(carried, codec, texts, [r.text for r in held_out], source)
            bundles = {code: carried, **bundles}
            notes.append(f"{described(code)}: the parent's, extended with {source} ({how['lines']} lines; "
                         f"their share {how['char_weight']:g} of the character LM, {how['word_weight']} of the word "
                         f"LM, {how['words_added']} words added to its lexicon; chosen on the held-out lines)")
        else:
            bundles[code] = carried
            notes.append(f"{described(code)}: the parent's, carried over as it is")
    lm_note = "; ".join(notes) if notes else "none (greedy decoding only; --lm-text builds one)"
    report.append(f"language models: {lm_note}")
    return bundles, lm_note


def _run_config(given: dict, parent: Checkpoint, parent_path: Path, codec: Codec, data: Sequence[str],
                n_lines: int, report: list[str]) -> ExperimentConfig:
    """The parent's model with small-data defaults under the user's flags, pointed at ``<run>/finetune/``.

    Refuses a run folder that already holds a run (that is ``--resume``'s job).
    """
    defaults = finetune_defaults(parent, n_lines)
    config = ExperimentConfig(model=dataclasses.replace(parent.model_config, num_classes=codec.num_classes))
    config = with_flags(config, {**defaults, **given, **_teacher(given, parent, parent_path, codec, report)})
    steps = config.optim.max_steps
    if "run.val_every" not in given:
        config = with_flags(config, {"run.val_every": val_every(n_lines, config.optim.batch_size, steps)})
    name = config.run.name or f"finetune-{Path(data[0]).name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    run_dir = Path(config.run.run_dir) if config.run.run_dir else LOG_ROOT / name
    if (run_dir / "last.pt").exists():
        raise TrainingError(f"{run_dir} already holds a run; pass --resume to continue it or choose another --run-dir")
    split = run_dir / SPLIT_DIR
    config = with_flags(config, {
        "run.run_dir": str(run_dir), "run.init_from": str(parent_path),
        "data.data": (str(split / "train"),), "data.val_data": (str(split / "val"),),
        "data.charset": str(split / "charset.txt"), "data.detokenize": False,
    })
    report.append(f"training: {steps} steps (at most {config.optim.max_minutes:g} minutes), {config.optim.optimizer} "
                  f"lr {config.optim.lr:g}, EMA {config.optim.ema_decay}, validation every "
                  f"{config.run.val_every} epochs -> {run_dir}")
    return config


def _teacher(given: dict, parent: Checkpoint, parent_path: Path, codec: Codec, report: list[str]) -> dict:
    """With ``--distill-weight W`` (and no ``--distill-from``), the parent as the run's teacher at weight W
    (learning without forgetting); none by default, because it buys keeping other hands at the price of learning
    the user's less (``DEFAULT_DISTILL_WEIGHT``). Refuses a teacher whose scores cannot be matched to the
    model's: a ``--charset`` that is not the parent's alphabet extended at its end (a loss other than CTC is
    refused by the run's config, as for any ``--distill-from``)."""
    if given.get("run.distill_from"):
        report.append(f"teacher: {given['run.distill_from']} (--distill-from), weight "
                      f"{given.get('run.distill_weight', 1.0):g}")
        return {}
    weight = given.get("run.distill_weight", DEFAULT_DISTILL_WEIGHT)
    if weight == 0:
        report.append("teacher: none (--distill-weight W makes the parent one: the model forgets less of other "
                      "hands and learns less of yours)")
        return {"run.distill_from": ""}
    if not codec.charset.startswith(parent.codec.charset):
        raise ValueError("--distill-weight: the parent can teach only an alphabet that extends its own at the end; "
                         "the --charset given reorders it")
    report.append(f"teacher: the parent, weight {weight:g} (keeps the model's readings near the parent's where "
                  "your lines do not pull them away)")
    return {"run.distill_from": str(parent_path), "run.distill_weight": weight}


def _card(args: argparse.Namespace, parent: Checkpoint, parent_path: Path, data: Sequence[str], how: str,
          lm_note: str, train: Sequence[LineRecord], replay: Sequence[LineRecord],
          held_out: Sequence[LineRecord]) -> dict:
    """What ``best.pt``'s card will say: the parent (with its sha256), the data and the licence chain."""
    return {
        "parent": {"file": str(parent_path), "sha256": hashlib.sha256(parent_path.read_bytes()).hexdigest(),
                   "version": parent.provenance.model_version, "data": parent.provenance.data,
                   "licence": parent.licence},
        "data": f"fine-tuned on {len(train)} lines of {', '.join(data)}"
                + (f" + {len(replay)} replayed lines of {', '.join(args.replay)}" if replay else "")
                + f"; {how}",
        "licence": " + ".join(part for part in (
            f"fine-tuned from {parent.provenance.model_version or parent_path.name}: {parent.licence or 'not stated'}",
            f"fine-tuning data: {args.data_licence or 'not stated'}") if part),
        "lm": lm_note,
        "train_lines": len(train), "replay_lines": len(replay), "held_out_lines": len(held_out),
    }


def plan_finetune(args: argparse.Namespace) -> Plan:
    """Read and check everything; nothing is written."""
    given = _given(args)
    parent_path, parent = _load_parent(given, args.finetune)
    data = _data_folders(given)
    detok = bool(given.get("data.detokenize", False))
    normalization = given.get("data.unicode_normalization", "NFC")
    seed = given.get("run.seed", 0)
    lines = read_lines(data, detok, normalization)
    report = [f"fine-tuning {parent_path} ({parent.provenance.model_version or 'no version'}): "
              f"{len(lines.records)} labelled lines in {', '.join(data)}"]
    codec = _alphabet(given, parent, lines, normalization, report)
    usable = _usable(lines, codec, parent, data, report)
    train, held_out, how = _split(given, usable, codec, parent, detok, normalization, seed, report)
    replay = _replay(args, parent, codec, normalization, len(train), seed, report)
    bundles, lm_note = _decoder(args, parent, parent_path, codec, train, held_out, report)
    config = _run_config(given, parent, parent_path, codec, data, len(train) + len(replay), report)
    card = _card(args, parent, parent_path, data, how, lm_note, train, replay, held_out)
    return Plan(config, codec, parent, parent_path, train + replay, list(held_out), bundles, card, report)


def write_plan(plan: Plan) -> None:
    """The run's split, alphabet and plan under ``<run>/finetune/`` (after every check passed)."""
    split = Path(plan.config.run.run_dir) / SPLIT_DIR
    write_split(split / "train", plan.train)
    write_split(split / "val", plan.held_out)
    write_charset(plan.codec, split / "charset.txt")
    (split / "plan.json").write_text(json.dumps({**plan.card, "report": plan.report}, indent=1, ensure_ascii=False),
                                     encoding="utf-8")
    for index, (language, bundle) in enumerate(plan.bundles.items()):
        save_bundle(bundle, split / (UNTUNED if index == 0 else f"untuned.{language}.decoder.pt"))


def untuned_bundles(split: Path) -> dict[str, dict]:
    """The bundles ``write_plan`` left in ``<run>/finetune/`` (for a ``--resume``): the user's language first."""
    found = {}
    if (split / UNTUNED).is_file():
        primary = load_bundle(split / UNTUNED)
        found[bundle_language(primary)] = primary
    for path in sorted(split.glob("untuned.*.decoder.pt")):
        found[path.name.split(".")[1]] = load_bundle(path)
    return found


def _save_bundles(best: Path, bundles: dict[str, dict], held_out: Sequence[LineRecord]) -> list[str]:
    """The user's language's bundle tuned on the held-out lines as ``best.decoder.pt``; the others carried
    over as ``best.<xx>.decoder.pt`` (their settings as the parent's were), all stamped for ``best.pt``."""
    from training.decoder.lines import checkpoint_sha256
    from training.decoder.tune import format_report, tune_for_checkpoint

    lines, sha = [], checkpoint_sha256(best)
    for index, (language, bundle) in enumerate(bundles.items()):
        if index == 0:
            bundle, tuning = tune_for_checkpoint(best, bundle, held_out)
            lines.append(f"decoder bundle ({described(language)}) -> {bundle_path(best)}, tuned on the held-out "
                         "lines (so their beam CER flatters):")
            lines += [f"  {line}" for line in format_report(tuning)]
        else:
            lines.append(f"decoder bundle ({described(language)}) -> {bundle_path(best, language)}, the parent's "
                         "settings (not re-tuned: no held-out lines in that language)")
        # built (or carried over) for this model: reading it with best.pt is no mismatch
        save_bundle({**bundle, "model_sha256": sha}, bundle_path(best) if index == 0 else bundle_path(best, language))
    return lines


def _held_out_cers(parent_file: str, best: Path, language: str | None,
                   held_out: Sequence[LineRecord]) -> dict[str, float | None]:
    """Held-out CER of the parent and the fine-tuned model, greedy and beam (the parent's beam in the user's
    language; ``None`` where a model cannot beam-read it)."""
    from text_recognizer.recognizer import LineRecognizer

    references, paths = [r.text for r in held_out], [r.path for r in held_out]
    out: dict[str, float | None] = {}
    for name, checkpoint in (("parent", parent_file), ("fine_tuned", best)):
        reader = LineRecognizer(checkpoint, decoder="greedy")
        out[f"{name}_greedy"] = cer(references, reader.predict(paths))
        can_beam = language is not None and language in reader.languages
        out[f"{name}_beam"] = (cer(references, [line.text for line in reader.predict_lines(
            paths, decoder="beam", language=language)]) if can_beam else None)
    return out


def verdict(cers: dict[str, float | None]) -> str:
    """``"fine_tuned"`` when it reads the held-out lines better than the parent greedy and (where both can)
    with beam search, else ``"parent"``: a fine-tuned model that is not better must not be the one used."""
    better = cers["fine_tuned_greedy"] < cers["parent_greedy"]
    if cers["fine_tuned_beam"] is not None and cers["parent_beam"] is not None:
        better = better and cers["fine_tuned_beam"] < cers["parent_beam"]
    return "fine_tuned" if better else "parent"


def finish(run_dir: Path, parent_card: dict, bundles: dict[str, dict]) -> list[str]:
    """After training: stamp ``best.pt``'s card, write its decoder bundles, and compare parent and fine-tuned
    model on the held-out lines, greedy and beam; ``<run>/finetune/verdict.json`` says which one to use."""
    best = run_dir / "best.pt"
    if not best.is_file():
        raise TrainingError(f"{best} was not written (no validation ran?)")
    checkpoint = load_checkpoint(best)
    provenance = dataclasses.replace(checkpoint.provenance, parent=parent_card["parent"], data=parent_card["data"])
    save_checkpoint(checkpoint.replace(provenance=provenance, licence=parent_card["licence"]), best)
    held_out = read_labels(run_dir / SPLIT_DIR / "val")
    lines = _save_bundles(best, bundles, held_out)
    language = next(iter(bundles), None)
    cers = _held_out_cers(parent_card["parent"]["file"], best, language, held_out)
    use = verdict(cers)

    def shown(value: float | None) -> str:
        return "n/a" if value is None else f"{100 * value:.2f}%"

    lines.append(f"held-out lines ({len(held_out)}), CER: greedy parent {shown(cers['parent_greedy'])} -> fine-tuned "
                 f"{shown(cers['fine_tuned_greedy'])}; beam" + (f" ({language})" if language else "")
                 + f" parent {shown(cers['parent_beam'])} -> fine-tuned {shown(cers['fine_tuned_beam'])}")
    if use == "parent":
        lines.append(f"the fine-tuned model does not read your held-out lines better than the parent: keep using "
                     f"{parent_card['parent']['file']} (verdict in {run_dir / SPLIT_DIR / 'verdict.json'})")
    else:
        lines.append(f"use the fine-tuned model: {best}")
    record = {"use": use, "parent": parent_card["parent"]["file"], "fine_tuned": str(best), "language": language,
              "held_out_lines": len(held_out), **cers}
    (run_dir / SPLIT_DIR / "verdict.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    return lines


def main(argv: Sequence[str], train: Callable[[ExperimentConfig, Codec | None, list[str]], dict]) -> int:
    """``text-recognizer-train --finetune ...``; ``train(config, codec, argv)`` runs one experiment
    (``training/run_experiment.py``: loggers, ``fit``), with ``config`` None for a ``--resume``."""
    args = build_parser().parse_args(argv)
    try:
        if _given(args).get("run.resume"):
            rest = _without_options(list(argv), OWN_FLAGS)
            summary = train(None, None, rest)
            run_dir = Path(summary["run_dir"])
            plan = json.loads((run_dir / SPLIT_DIR / "plan.json").read_text(encoding="utf-8"))
            for line in finish(run_dir, plan, untuned_bundles(run_dir / SPLIT_DIR)):
                print(line)
            return 0
        plan = plan_finetune(args)
        for line in plan.report:
            print(line)
        if args.dry_run:
            print("dry run: nothing written")
            return 0
        write_plan(plan)
        summary = train(plan.config, plan.codec, [])
        if summary.get("stop_reason") == "interrupted":
            return 1
        for line in finish(Path(plan.config.run.run_dir), plan.card, plan.bundles):
            print(line)
    except (ValueError, TrainingError, CheckpointError, DataCheckError, DatasetFormatError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def _without_options(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """``argv`` without the given options and their values (fine-tuning's own flags, on a resume)."""
    out, skipping = [], False
    for arg in argv:
        if arg.startswith("--"):
            skipping = arg.split("=", 1)[0] in options
            if skipping:
                continue
        if not skipping:
            out.append(arg)
    return out
