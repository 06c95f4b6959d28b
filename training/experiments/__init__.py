"""Experiments over the training loop: specs and sweeps turned into ``run_experiment.py`` commands
(``prepare_experiment``), Weights & Biases logging (``wandb_logger``) and comparing runs from their own files
(``compare_runs``). The YAML specs beside them are examples (docs/experiments.md).

It imports ``training.loop`` (and ``text_recognizer``) only.
"""
