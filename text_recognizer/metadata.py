"""Defaults that several modules must agree on, kept in one place so they cannot drift apart.

Two line heights, on purpose:

* :data:`LINE_HEIGHT` (64 px) is the height at which lines are *stored*: synthetic lines are
  rendered at it, prepared IAM and EMNIST Lines folders are written at it, and it is the stem's
  default. Storing lines taller than any model input means the stem only ever shrinks them
  (downsampling keeps strokes sharp; upsampling would blur them), and one prepared folder serves
  models of any height up to 64 px.
* :data:`MODEL_HEIGHT` (48 px) is the default *input* height of a new model: the stem resizes every
  line to it. It is lower than the storage height because the window CNN's work grows with the
  height (48 px is ~0.56x the pixels of 64 px) while lines stay readable; a model's own height
  travels in its checkpoint (the bundled IAM model uses 40 px), so this default only matters when
  training a new one.
"""

from __future__ import annotations

#: Height (px) at which dataset lines are rendered and stored; the stem's default output height.
LINE_HEIGHT = 64

#: Default input height (px) of a newly trained model (``ModelConfig.height``).
MODEL_HEIGHT = 48
