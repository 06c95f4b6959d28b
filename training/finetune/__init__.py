"""Fine-tuning a model on a user's few hundred lines in one command (docs/finetuning.md): the plan (held-out
lines, alphabet, small-data defaults), one run of the training loop, and the parent's decoder bundles re-tuned
for the new model (``training.decoder.tune``). It imports ``training.loop`` and ``training.decoder``.
"""
