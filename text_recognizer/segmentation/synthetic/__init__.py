"""Synthetic handwritten pages composed from real line images, with each line's true polygon and baseline.

Why: a learned line segmenter needs many pages, and the real training pages are few and alike (a couple
of hundred scans of ruled French paper). Pasting real line crops (e.g. IAM lines) onto drawn paper
teaches the layouts those pages lack: text from small to large, lines from touching to double spaced,
paragraphs with indents or blank lines, a right-aligned date, marginal notes, two columns, a lone line,
skewed and gently curved lines, and paper that is tinted, unevenly lit, woven or laid, ruled, squared,
bled through, stamped or punched.

The truth follows the kraken/eScriptorium convention of the real pages (the ink envelope polygon and
the baseline under the dense ink band), measured on the very pixels that are pasted and mapped to the
page by the same map as the ink, so it cannot drift from the ink.

The modules, one step each (``compose.compose_page`` runs them in this order):

- ``style``: everything drawn once per page (sizes, spacing, columns, paper, rules, weave, ink, noise);
- ``crops``: line crops inverted and trimmed, cut at a word gap, joined to continue a short line;
- ``layout``: where each line goes, in reading order;
- ``truth``: a line's envelope polygon and baseline, measured on its pixels;
- ``ink``: a line bent, blurred, tilted and pasted, its truth carried along;
- ``paper``: the page image around the ink, with ``patterns`` (rules, margin rule, woven or laid
  threads, from 1-D profiles) and ``marks`` (stamps, punch holes).

Speed, because pages are made on the fly during training: the per-line work runs on each line's crop,
and the full page sees only a handful of 8-bit PIL passes.
"""

from text_recognizer.segmentation.synthetic.compose import SyntheticPage, compose_page
from text_recognizer.segmentation.synthetic.truth import SyntheticLine

__all__ = ["SyntheticLine", "SyntheticPage", "compose_page"]
