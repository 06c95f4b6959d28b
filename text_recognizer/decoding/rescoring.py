"""The last step of beam decoding: re-score the beam's readings, and lexicon corrections of them, as whole lines.

Why: the search ranks hypotheses by their single best frame alignment and a 6-character LM, and
it can only keep what the model's top characters spell. At the end, every distinct reading left
in the beam (about 20 per line) is scored again with what the search could not use:

    log p_ctc(text)                    all alignments summed (the CTC loss), not the best one alone
    + lm_weight   * log10 p_char(text) the character LM, in KenLM's units as in the search
    + word_weight * ln p_word(text)    the word n-gram model (``word_lm.py``)
    + word_bonus  * words - oov_penalty * unknown words

and a reading with a word that neither the word model nor the lexicon knows (``Flathrop``) also
proposes *corrections*: the same line with that word replaced by lexicon words a few edits away
(``Lathrop``), each scored with the same terms, its acoustic one on the replaced word's own frames.
The acoustic term keeps a correction honest: a real surname the lexicon lacks stays when the image
supports it better than any neighbour does.
Measured on IAM val and two out-of-domain sets (``benchmarks/RESULTS.md``, "Whole-line re-scoring").

The chosen reading is returned as a frame path, like the search's own result: readings from the
beam keep their path; a correction keeps it too, with the replaced word's frames re-aligned (``viterbi_path``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from text_recognizer.codec import BLANK_ID, Codec
from text_recognizer.decoding.greedy import runs
from text_recognizer.decoding.word_lm import WordLanguageModel

#: Readings whose full CTC probability is computed (~0.5 ms each on a long line): those within
#: ``SHORTLIST_MARGIN`` of the best when scored with their beam path's own probability (the search's
#: alignment) instead, at most ``SHORTLIST``. Chosen on IAM val's tuning half (``benchmarks/RESULTS.md``,
#: "Whole-line re-scoring"): as accurate as scoring all ~20 readings, with ~3 full scores a line instead of 20.
SHORTLIST = 8
SHORTLIST_MARGIN = 3.0
_LETTERS = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Weights:
    """The re-scoring's weights (``BeamOptions`` carries them; tuned on half of IAM val)."""

    lm_weight: float
    word_weight: float
    word_bonus: float
    oov_penalty: float


def line_log_likelihoods(log_probs: torch.Tensor, targets: Sequence[Sequence[int]]) -> list[float]:
    """``log p_ctc(target | log_probs)`` (all alignments) for each target; ``-inf`` where none fits."""
    frames = log_probs.shape[0]
    lengths = torch.tensor([len(t) for t in targets])
    flat = torch.tensor([i for t in targets for i in t] or [BLANK_ID + 1])  # ctc_loss wants a non-empty tensor
    expanded = log_probs.float()[:, None].expand(frames, len(targets), -1)  # (T, N, C)
    losses = F.ctc_loss(expanded, flat, torch.full((len(targets),), frames), lengths, blank=BLANK_ID,
                        reduction="none", zero_infinity=False)  # (N,)
    return [-x for x in losses.tolist()]


def viterbi_path(log_probs: torch.Tensor, target: Sequence[int]) -> list[int]:
    """The most likely frame path (one class per frame) that collapses to ``target``.

    Dynamic programming over the CTC states ``blank, t1, blank, t2, ..., blank``; raises
    ``ValueError`` when the line has too few frames for the target.
    """
    scores = log_probs.detach().to("cpu", torch.float64).numpy()  # (T, C)
    frames = scores.shape[0]
    states = [BLANK_ID]
    for token in target:
        states += [token, BLANK_ID]
    states = np.array(states)
    n = len(states)
    skip = np.zeros(n, dtype=bool)  # a state may be entered from two states back: a label after a blank,
    skip[2:] = (states[2:] != BLANK_ID) & (states[2:] != states[:-2])  # unless it repeats the previous label
    best = np.full(n, -np.inf)
    best[0] = scores[0, states[0]]
    if n > 1:
        best[1] = scores[0, states[1]]
    back = np.zeros((frames, n), dtype=np.int8)  # 0: stayed, 1: from the previous state, 2: skipped a blank
    for t in range(1, frames):
        stay, step = best, np.concatenate(([-np.inf], best))[:n]
        jump = np.where(skip, np.concatenate(([-np.inf, -np.inf], best))[:n], -np.inf)
        moves = np.stack([stay, step, jump])  # (3, S)
        back[t] = moves.argmax(0)
        best = moves.max(0) + scores[t, states]
    ends = [n - 1] + ([n - 2] if n > 1 else [])
    state = max(ends, key=lambda s: best[s])
    if not math.isfinite(best[state]):
        raise ValueError(f"{frames} frames cannot hold a reading of {len(target)} characters")
    path = []
    for t in range(frames - 1, -1, -1):
        path.append(int(states[state]))
        state -= int(back[t, state])
    return path[::-1]


class LexiconCorrector:
    """Proposes lines with each unknown word replaced by known words within a few edits.

    ``alphabet``: the characters the model can write; a word it cannot spell (``naïve`` for an ASCII
    model, or a capitalised word for a model without capitals) is never proposed, since the acoustic
    score of a correction needs its characters' ids.
    """

    def __init__(self, model: WordLanguageModel, candidates: int, max_distance: int, alphabet: str | None = None):
        self.model = model
        self.candidates = candidates
        self.max_distance = max_distance
        self._alphabet = set(alphabet) if alphabet is not None else None
        words = sorted((w for w in model.known_words if w.isalpha() and self._spellable(w)), key=lambda w: (len(w), w))
        self._words = words  # by length (alphabetical within one), so the words of lengths n-k..n+k are one slice
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))  # (N,), ascending
        self._starts = np.searchsorted(lengths, np.arange(lengths.max(initial=0) + 2))  # first word of each length
        codes = np.frombuffer("".join(words).encode("utf-32-le"), dtype=np.uint32)  # every letter of every word
        letters, which = np.unique(codes, return_inverse=True)
        self._bits = {chr(c): 1 << (i % 64) for i, c in enumerate(letters.tolist())}  # letters share bits past 64
        bits = np.left_shift(np.uint64(1), (which % 64).astype(np.uint64))  # (letters in all,)
        self._masks = (np.bitwise_or.reduceat(bits, np.cumsum(lengths) - lengths) if words
                       else np.zeros(0, np.uint64))  # (N,): the letters each word has

    def _spellable(self, word: str) -> bool:
        return self._alphabet is None or set(word) <= self._alphabet

    def neighbours(self, word: str) -> list[str]:
        """Known words closest to ``word`` (lower case): at most ``max_distance`` edits (one for words of
        up to 3 letters, where two edits reach almost anything), nearest first, then the more frequent
        (by the word model's unigram probability; lexicon-only words last)."""
        limit = self.max_distance if len(word) > 3 else min(1, self.max_distance)
        last = len(self._starts) - 1
        lo, hi = self._starts[min(max(len(word) - limit, 0), last)], self._starts[min(len(word) + limit + 1, last)]
        pool = self._near_in_letters(word, lo, hi, limit)
        found = process.extract(word, pool, scorer=Levenshtein.distance, score_cutoff=limit, limit=None)
        unigram = self.model.unigram_log10
        found.sort(key=lambda item: (item[1], -unigram.get(item[0], -99.0), item[0]))
        return [w for w, _, _ in found[: self.candidates]]

    def _mask(self, word: str) -> int:
        mask = 0
        for ch in set(word):
            mask |= self._bits.get(ch, 0)
        return mask

    def _near_in_letters(self, word: str, lo: int, hi: int, limit: int) -> list[str]:
        """The words in ``self._words[lo:hi]`` that can be ``limit`` edits from ``word``: an edit adds or
        removes at most two letters from a word's set of letters, so sets further apart than ``2 * limit``
        are out (letters no lexicon word has each count as one apart; letters sharing a bit only bring
        sets closer). A vectorised filter that spares the edit distance ~94% of the words of those lengths."""
        foreign = sum(ch not in self._bits for ch in set(word))
        apart = np.bitwise_count(self._masks[lo:hi] ^ np.uint64(self._mask(word))) + foreign  # (hi - lo,)
        return [self._words[lo + i] for i in np.flatnonzero(apart <= 2 * limit)]

    def slots(self, text: str) -> list[tuple[int, int, list[str]]]:
        """The unknown words of ``text`` that have known neighbours: ``(start, end, replacements)``,
        character offsets into ``text``; replacements keep the word's capitals."""
        found = []
        for match in _LETTERS.finditer(text):
            word = match.group()
            if len(word) < 2 or self.model.is_known(word.lower()):
                continue
            options = [w for w in (_recase(w, word) for w in self.neighbours(word.lower())) if self._spellable(w)]
            if options:
                found.append((match.start(), match.end(), options))
        return found


def _recase(word: str, like: str) -> str:
    if len(like) > 1 and like.isupper():
        return word.upper()
    return word[0].upper() + word[1:] if like[0].isupper() else word


class Rescorer:
    """Chooses a line's reading among the beam's readings and their corrections (see the module docstring).

    Cost control: the full CTC probability is computed for the ``SHORTLIST`` best readings only, and
    a correction is scored on the frames of the word it replaces (between the characters around it
    in the chosen reading's path), not on the whole line: replacing one word changes the alignment
    there and leaves the rest of the line's frames as they were.
    """

    def __init__(self, codec: Codec, weights: Weights, word_model: WordLanguageModel, char_lm=None,
                 corrector: LexiconCorrector | None = None):
        self.codec = codec
        self.weights = weights
        self.word_model = word_model
        self.char_lm = char_lm  # flashlight's KenLM over the decoder's tokens, or None
        self.corrector = corrector

    def language_scores(self, texts: Sequence[str]) -> list[float]:
        """Everything but the acoustic term: character LM, word LM, per-word score, unknown-word penalty."""
        w = self.weights
        out = []
        for text in texts:
            logp, unknown, count = self.word_model.score(text)
            char = self._char_log10(self.codec.encode(text)) if self.char_lm is not None and w.lm_weight else 0.0
            out.append(w.lm_weight * char + w.word_weight * logp + w.word_bonus * count - w.oov_penalty * unknown)
        return out

    def scores(self, log_probs: torch.Tensor, texts: Sequence[str]) -> list[float]:
        """The whole-line score of each text (higher is better; ``-inf``: it does not fit the frames)."""
        acoustic = line_log_likelihoods(log_probs, [self.codec.encode(text) for text in texts])
        return [a + b for a, b in zip(acoustic, self.language_scores(texts))]

    def best_path(self, log_probs: torch.Tensor, readings: Sequence[tuple[str, Sequence[int]]]) -> list[int]:
        """``(T, C)`` log-probabilities and the beam's ``(text, frame path)`` readings -> the chosen frame path."""
        texts = [text for text, _ in readings]
        paths = [list(path) for _, path in readings]
        language = self.language_scores(texts)
        frames = torch.arange(log_probs.shape[0])
        aligned = [float(log_probs[frames, torch.tensor(path)].sum()) for path in paths]  # the search's alignment
        cheap = [a + b for a, b in zip(aligned, language)]
        shortlist = sorted(range(len(texts)), key=lambda i: -cheap[i])[:SHORTLIST]
        shortlist = [i for i in shortlist if cheap[i] >= cheap[shortlist[0]] - SHORTLIST_MARGIN]
        if len(shortlist) > 1:
            acoustic = line_log_likelihoods(log_probs, [self.codec.encode(texts[i]) for i in shortlist])
            scores = {i: a + language[i] for i, a in zip(shortlist, acoustic)}
            best = max(shortlist, key=scores.__getitem__)
        else:
            best = shortlist[0]
        if self.corrector is None:
            return paths[best]
        return self._corrected(log_probs, texts[best], paths[best], language[best])

    def _corrected(self, log_probs: torch.Tensor, text: str, path: list[int], language: float) -> list[int]:
        """``path``, with the unknown words of its reading replaced where a lexicon word scores better."""
        slots = self.corrector.slots(text)
        if not slots:
            return path
        spans = [(first, last) for _, first, last in runs(path)]  # character k's frames
        wins = []  # (gain, acoustic gain, start, end, replacement, first frame, end frame)
        for start, end, options in slots:
            first = spans[start - 1][1] + 1 if start else 0  # the word's frames: between its neighbours'
            last = spans[end][0] if end < len(spans) else len(path)
            acoustic = line_log_likelihoods(log_probs[first:last],
                                            [self.codec.encode(w) for w in [text[start:end], *options]])
            lines = [text[:start] + option + text[end:] for option in options]
            gains = [(a - acoustic[0] + b - language, a - acoustic[0])
                     for a, b in zip(acoustic[1:], self.language_scores(lines))]
            k = max(range(len(options)), key=gains.__getitem__)
            if gains[k][0] > 0:
                wins.append((*gains[k], start, end, options[k], first, last))
        if not wins:
            return path
        if len(wins) > 1:  # all of them, if the language scores of the whole line agree
            combined = text
            for *_, start, end, option, _, _ in sorted(wins, key=lambda x: -x[2]):
                combined = combined[:start] + option + combined[end:]
            together = sum(w[1] for w in wins) + self.language_scores([combined])[0] - language
            if together <= max(w[0] for w in wins):
                wins = [max(wins)]
        path = list(path)
        for *_, option, first, last in wins:
            path[first:last] = viterbi_path(log_probs[first:last], self.codec.encode(option))
        return path

    def _char_log10(self, target: Sequence[int]) -> float:
        state = self.char_lm.start(False)
        total = 0.0
        for token in target:
            state, score = self.char_lm.score(state, token)
            total += score
        return total + self.char_lm.finish(state)[1]
