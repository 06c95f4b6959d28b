"""Training: the CLI (run_experiment.py), the loop, evaluation and experiment tooling."""
