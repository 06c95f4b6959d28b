"""Training: everything that builds the models and decoder bundles ``text_recognizer`` reads with.

One package per job, each importing only the packages below it (``pyproject.toml``'s import contracts):

- ``run_experiment.py`` and ``evaluate.py``: the two commands (``text-recognizer-train``, ``-evaluate``);
- ``finetune``: adapting a model to a user's lines; ``recipe``: multi-stage, resumable rebuilds;
- ``segmenter``: the page segmenter's training and page evaluation; ``decoder``: language models and the one
  decoder tuner; ``release``: averaging and exporting checkpoints for serving;
- ``experiments``: specs, sweeps, W&B and run comparison;
- ``loop``: the training loop and its parts (configuration, data, batching, the step, checkpoints, validation);
- ``sources``: fetching and preparing the open handwriting collections.
"""
