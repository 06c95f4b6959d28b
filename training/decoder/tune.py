"""Choose a decoder bundle's beam settings and fit its confidence calibration for a model, on labelled lines.

    python -m training.decoder tune --checkpoint best.pt --data HELD_OUT [HELD_OUT...] [--bundle IN] [--out OUT]

Why: the beam settings (LM weight, word bonus, word-LM re-scoring, blank penalty) and the confidence
calibration in a bundle were chosen for one model; another model (a fine-tuned one, the next bundled one) is
more (or less) sure of itself, so the old settings weigh the LMs wrongly and its confidences are off. This is
the one tuner: fine-tuning calls it on its 10-100 held-out lines (seconds to a few minutes on a laptop's CPU;
40 lines of gw_washington_1755 with the bundled model's LMs: about 16 s on 2 cores), and the bundled model's
recipe on the first half of IAM val with a finer grid (``training/recipes/bundled.yaml``, stage ``tune``):

1. the model runs once over the lines (``training.decoder.lines``: the recognizer's own preprocessing and
   batching, so the numbers are those reading sees); every setting after that only re-decodes them;
2. settings are chosen one step at a time (not the whole product): LM weight x word bonus (character LM
   alone), then the word LM's re-scoring (its weight x the penalty per unknown word, and the score per word
   and the character LM's weight there when the grid lists them), then the blank penalty; each step starts
   from the bundle's own values, a small beam (``TuneGrid.beam_width``) keeps it fast, and a tie keeps the
   earlier, more default setting;
3. the chosen settings are kept only if they read the lines at least as well as the bundle's at the
   reading beam width (a handful of lines must not make things worse);
4. the character, word and line confidence maps are fitted on the lines for greedy and beam decoding.

Fewer than ``MIN_LINES`` lines are too few to choose anything: the bundle is returned as it was.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.data.folder import LineRecord
from text_recognizer.decoding import calibration as cal
from text_recognizer.decoding.beam import BeamOptions
from text_recognizer.decoding.bundle import LanguageModelError, check_bundle
from text_recognizer.decoding.decoder import (
    LineDecoder,
    char_features,
    line_calibration_features,
    line_features,
    word_features,
)
from text_recognizer.metrics import cer, line_cer
from training.decoder.lines import checkpoint_sha256, held_out_log_probs

#: Below this many lines nothing is tuned or fitted: a choice on 3 lines is noise.
MIN_LINES = 5
#: The levels of a decoder's confidence calibration (``text_recognizer.decoding.calibration``).
LEVELS = ("char", "word", "line")
#: The settings this module chooses (the others keep the bundle's values).
TUNED = ("lm_weight", "word_bonus", "word_lm_weight", "word_lm_bonus", "oov_penalty", "rescore_lm_weight",
         "blank_penalty")


@dataclass(frozen=True)
class TuneGrid:
    """The values tried at each step, and the beam width while tuning.

    Small by default: each value costs one decode of every line, and with tens of lines finer steps only
    fit their noise (the bundled model's recipe gives its own grid for 920 lines). The bundle's own value of
    each setting is always tried first as well. ``beam_width`` is only the search width used to compare
    settings; the tuned bundle reads at ``reading_beam_width`` (None: the bundle's own, or ``BeamOptions``'
    default).
    """

    lm_weights: tuple[float, ...] = (0.6, 1.0, 1.4)
    word_bonuses: tuple[float, ...] = (0.5, 1.5, 2.5)
    word_lm_weights: tuple[float, ...] = (0.0, 0.3)
    oov_penalties: tuple[float, ...] = (4.0, 6.0)
    blank_penalties: tuple[float, ...] = (0.0, 1.0, 2.0)
    beam_width: int = 8
    #: Also tried in the word LM's re-scoring step, with each weight and penalty (empty: the bundle's value only).
    word_lm_bonuses: tuple[float, ...] = ()
    rescore_lm_weights: tuple[float, ...] = ()
    #: Lexicon corrections per unknown word, while tuning and in the result (None: the bundle's).
    corrections: int | None = None
    reading_beam_width: int | None = None

    def __post_init__(self) -> None:
        for name in ("lm_weights", "word_bonuses", "word_lm_weights", "oov_penalties", "blank_penalties",
                     "word_lm_bonuses", "rescore_lm_weights"):
            values = getattr(self, name)
            if isinstance(values, (str, bytes)) or (not values and name not in ("word_lm_bonuses",
                                                                               "rescore_lm_weights")):
                raise ValueError(f"TuneGrid.{name} must be a non-empty sequence of numbers, got {values!r}")
        # the same checks as reading: integers >= 1 (>= 0 corrections)
        BeamOptions(beam_width=self.beam_width, corrections=0 if self.corrections is None else self.corrections)
        if self.reading_beam_width is not None:
            BeamOptions(beam_width=self.reading_beam_width)


def path_text(codec: Codec, raw: dict) -> str:
    """The text of a decoded line's raw features (``line_features``), as ``LineDecoder.assemble`` writes it."""
    return codec.decode([item[0] for item in raw["chars"]])


def calibration_data(codec: Codec, paths: Sequence[Sequence[int]], log_probs: Sequence[torch.Tensor],
                     references: Sequence[str]) -> dict:
    """Per char / word / line: raw calibration features and outcomes (right? / 1 - line CER).

    Also ``old_line`` (the uncalibrated line confidence) and ``line_cer`` ((reference, text) pairs), which
    ``benchmarks/decoding.py`` reports. Spaces are no characters of their own here (they get no confidence).
    """
    out: dict = {"char": ([], []), "word": ([], []), "line": ([], []), "old_line": [], "line_cer": []}
    for path, lp, ref in zip(paths, log_probs, references):
        raw = line_features(path, lp)
        text = path_text(codec, raw)
        char_ok = cal.char_correctness(ref, text)
        for item, ok in zip(raw["chars"], char_ok):
            if codec.charset[item[0] - 1] != " ":
                out["char"][0].append(char_features(item))
                out["char"][1].append(float(ok))
        word_ok = cal.word_correctness(ref, text)
        word, k = [], 0
        for item in [*raw["chars"], None]:
            if item is None or codec.charset[item[0] - 1] == " ":
                if word:
                    out["word"][0].append(word_features(word))
                    out["word"][1].append(float(word_ok[k]))
                    k += 1
                word = []
            else:
                word.append(item)
        out["line"][0].append(line_calibration_features(raw["chars"], raw["mean_best"]))
        out["line"][1].append(max(0.0, 1.0 - line_cer(ref, text)))
        out["old_line"].append(float(torch.tensor(raw["mean_best"]).exp()))
        out["line_cer"].append((ref, text))
    return out


def _fit_calibration(data: dict, previous: dict | None) -> tuple[dict | None, dict]:
    """One decoder's maps per level (``previous`` where they cannot be fitted), and what was done per level.

    A level whose outcomes are all the same (every word right, say) has nothing to separate: a fit would
    say "certain" for everything. Its previous map is kept; without one, the decoder keeps its previous
    calibration (none: the raw confidences, which still rank the items).
    """
    fitted, how = {}, {}
    for level in LEVELS:
        features, outcomes = data[level]
        old = (previous or {}).get(level)
        if len(outcomes) >= 2 and len(set(outcomes)) > 1:
            fitted[level], how[level] = cal.fit(features, outcomes), "fitted"
        elif old is not None:
            fitted[level], how[level] = old, f"kept ({len(outcomes)} {level}s, all alike)"
        else:
            how[level] = f"not fitted ({len(outcomes)} {level}s, all alike)"
            return previous, {**how, **{other: "not fitted" for other in LEVELS if other not in how}}
    return fitted, how


def tune_bundle(bundle: dict, codec: Codec, log_probs: Sequence[torch.Tensor], references: Sequence[str],
                checkpoint_sha256: str, grid: TuneGrid = TuneGrid()) -> tuple[dict, dict]:
    """The bundle with beam settings chosen and confidences calibrated on these lines, and a report.

    ``log_probs``: each line's ``(T, C)`` log-probabilities (``held_out_log_probs``); ``references``: their
    texts, in the spacing the model writes. The LMs (and any ``three_readings`` section, which needs three
    readings' posteriors to tune and is left as it was) are kept; ``beam`` and ``calibration`` are replaced
    and ``model_sha256`` records ``checkpoint_sha256``. The report: ``lines``, ``tuned`` (False below
    ``MIN_LINES``: nothing was chosen or fitted, the bundle comes back unchanged), ``note``, ``greedy_cer``,
    ``default_beam_cer`` (the bundle's own settings), ``tuned_beam_cer`` (both at the reading beam width),
    ``settings`` (the chosen beam settings), ``previous_settings``, ``tuning_beam_width``, ``trials``
    (settings decoded), ``grid`` (each step's settings and CER at the tuning width, in order),
    ``calibration`` (what was fitted per decoder and level), ``seconds``.
    """
    start = time.perf_counter()
    bundle = check_bundle(bundle, codec, "the decoder bundle")
    if bundle.get("lm") is None:
        raise LanguageModelError("the decoder bundle has no language model to tune for: build one with "
                                 "python -m training.decoder.build_lm")
    if len(log_probs) != len(references):
        raise ValueError(f"got {len(log_probs)} lines of log-probabilities but {len(references)} references")
    log_probs = [lp.detach().to("cpu", torch.float32).contiguous() for lp in log_probs]
    references = list(references)
    previous = BeamOptions.from_dict(bundle.get("beam"))
    greedy = LineDecoder(codec, "greedy")
    decoded: dict[tuple, tuple[float, list[list[int]]]] = {}  # settings -> (CER, paths)

    def run(options: BeamOptions) -> tuple[float, list[list[int]]]:
        key = tuple(sorted(options.to_dict().items()))
        if key not in decoded:
            decoder = LineDecoder(codec, "beam", bundle, **options.to_dict())
            paths = [decoder.path(lp) for lp in log_probs]
            texts = [path_text(codec, line_features(p, lp)) for p, lp in zip(paths, log_probs)]
            decoded[key] = (cer(references, texts), paths)
        return decoded[key]

    greedy_paths = [greedy.path(lp) for lp in log_probs]
    greedy_cer = cer(references, [path_text(codec, line_features(p, lp)) for p, lp in zip(greedy_paths, log_probs)])
    default_cer, default_paths = run(previous)
    report = {"lines": len(references), "tuned": False, "note": "", "greedy_cer": greedy_cer,
              "default_beam_cer": default_cer, "tuned_beam_cer": default_cer,
              "settings": previous.to_dict(), "previous_settings": previous.to_dict(),
              "tuning_beam_width": grid.beam_width, "trials": 0, "grid": [], "calibration": {}, "seconds": 0.0}
    if len(references) < MIN_LINES:
        report["note"] = (f"{len(references)} line(s) are too few to tune on (at least {MIN_LINES}): "
                          "beam settings and calibration kept as they were")
        report["seconds"] = time.perf_counter() - start
        return dict(bundle), report

    def score(options: BeamOptions) -> float:
        error = run(options)[0]
        report["grid"].append({**{k: options.to_dict()[k] for k in TUNED}, "cer": error})
        return error

    chosen = _choose(previous, grid, bool(bundle.get("word_lm")), score)
    report["trials"] = len(decoded) - 1  # the reading-width run of the previous settings is no trial
    tuned_cer, tuned_paths = run(chosen)
    if tuned_cer >= default_cer:  # a tie keeps the bundle's settings
        chosen, tuned_cer, tuned_paths = previous, default_cer, default_paths
        report["note"] = (f"the bundle's own settings read these lines at least as well as those chosen at beam width "
                          f"{grid.beam_width}: kept")
    report.update(tuned=True, tuned_beam_cer=tuned_cer, settings=chosen.to_dict())

    calibration = dict(bundle.get("calibration") or {})
    for name, paths in (("greedy", greedy_paths), ("beam", tuned_paths)):
        data = calibration_data(codec, paths, log_probs, references)
        fitted, report["calibration"][name] = _fit_calibration(data, calibration.get(name))
        if fitted is not None:
            calibration[name] = fitted
    tuned = {**bundle, "beam": chosen.to_dict(), "calibration": calibration or None,
             "model_sha256": checkpoint_sha256}
    report["seconds"] = time.perf_counter() - start
    return tuned, report


def _choose(previous: BeamOptions, grid: TuneGrid, word_lm: bool,
            score: Callable[[BeamOptions], float]) -> BeamOptions:
    """Settings chosen one step at a time at ``grid.beam_width``: a coordinate search, one group of settings
    that act together per step, cheaper than their product and as good on IAM val (fortieth session).

    Each step tries the current values first and then the grid's, in order, and moves only to a strictly
    lower CER, so a tie keeps the earlier, more default setting.
    """

    def best(options: BeamOptions, candidates: list[dict]) -> BeamOptions:
        unique = [dict(c) for c in dict.fromkeys(tuple(c.items()) for c in candidates)]
        winner, winner_cer = None, float("inf")
        for change in unique:
            candidate = BeamOptions(**{**options.to_dict(), **change})
            error = score(candidate)
            if error < winner_cer:
                winner, winner_cer = candidate, error
        return winner  # type: ignore[return-value]

    p = previous
    fixed = {} if grid.corrections is None else {"corrections": grid.corrections}
    # 1. LM weight x word bonus, the character LM alone (the word LM's re-scoring off)
    options = BeamOptions(**{**p.to_dict(), **fixed, "beam_width": grid.beam_width, "word_lm_weight": 0.0})
    options = best(options, [{"lm_weight": w, "word_bonus": b} for w, b in
                             [(p.lm_weight, p.word_bonus), *itertools.product(grid.lm_weights, grid.word_bonuses)]])
    # 2. the word LM's re-scoring: its weight x the penalty per unknown word (x its score per word and the
    # character LM's weight there, when the grid has them); at weight 0 there is no re-scoring to set
    if word_lm:
        candidates = [{"word_lm_weight": p.word_lm_weight, "oov_penalty": p.oov_penalty,
                       "word_lm_bonus": p.word_lm_bonus, "rescore_lm_weight": p.rescore_lm_weight}]
        for a in (p.word_lm_weight, *grid.word_lm_weights):
            if a <= 0:
                candidates.append({"word_lm_weight": a})
                continue
            candidates += [{"word_lm_weight": a, "oov_penalty": q, "word_lm_bonus": c, "rescore_lm_weight": r}
                           for q, c, r in itertools.product((p.oov_penalty, *grid.oov_penalties),
                                                            (p.word_lm_bonus, *grid.word_lm_bonuses),
                                                            (p.rescore_lm_weight, *grid.rescore_lm_weights))]
        options = best(options, candidates)
    else:
        options = BeamOptions(**{**options.to_dict(), "word_lm_weight": p.word_lm_weight})  # no word LM: unused
    # 3. the blank penalty, with the rest chosen
    options = best(options, [{"blank_penalty": q} for q in (p.blank_penalty, *grid.blank_penalties)])
    return BeamOptions(**{**options.to_dict(), "beam_width": grid.reading_beam_width or p.beam_width})


def tune_for_checkpoint(checkpoint: Path, bundle: dict, records: Sequence[LineRecord],
                        grid: TuneGrid = TuneGrid()) -> tuple[dict, dict]:
    """``tune_bundle`` for a checkpoint and held-out line records: the model's log-probabilities of the
    lines, its sha256, and the tuning; what the fine-tuning command calls after training."""
    start = time.perf_counter()
    codec = load_checkpoint(checkpoint, map_location="cpu").codec
    if bundle.get("lm") is None:  # before running the model over the lines
        raise LanguageModelError("the decoder bundle has no language model to tune for: build one with "
                                 "python -m training.decoder.build_lm")
    log_probs = held_out_log_probs(checkpoint, records)
    tuned, report = tune_bundle(bundle, codec, log_probs, [record.text for record in records],
                                checkpoint_sha256(checkpoint), grid)
    seconds = time.perf_counter() - start
    report.update(model_seconds=seconds - report["seconds"], seconds=seconds)
    return tuned, report


def format_report(report: dict) -> list[str]:
    """The report as a few lines for people."""
    lines = [f"{report['lines']} held-out lines, {report['seconds']:.1f} s"]
    cers = (f"CER greedy {100 * report['greedy_cer']:.2f}%, beam with the bundle's settings "
            f"{100 * report['default_beam_cer']:.2f}%")
    if not report["tuned"]:
        return [*lines, cers, f"not tuned: {report['note']}"]
    lines.append(f"{cers}, tuned beam {100 * report['tuned_beam_cer']:.2f}%")
    lines.append("settings: " + ", ".join(f"{k} {report['settings'][k]}" for k in TUNED)
                 + f" ({report['trials']} tried at beam width {report['tuning_beam_width']}, "
                   f"reading at {report['settings']['beam_width']})")
    if report["note"]:
        lines.append(report["note"])
    lines.append("calibration: " + "; ".join(f"{name} " + ", ".join(f"{level} {how}" for level, how in levels.items())
                                             for name, levels in report["calibration"].items()))
    return lines





