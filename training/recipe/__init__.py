"""Multi-stage training recipes (docs/recipe.md): one YAML file, one command, resumable. ``spec`` is the data
model, ``load`` reads and checks a file, ``plan`` says what a run would do, ``fetch`` brings packages from the npm
registry, ``runner`` runs the stages. Stages run other packages' commands as processes or by module name, so it
imports only ``training.loop`` (for the training flags).
"""
