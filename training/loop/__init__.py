"""The training loop and its parts: configuration and flags (``config``), data and batching, the step and its
non-finite guard, checkpoints and resuming, validation, devices and distributed training (``trainer.fit``).

It imports ``text_recognizer`` and ``training.sources`` only: every other training package builds on it.
"""
