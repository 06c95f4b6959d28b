"""Training and evaluation data: synthetic lines, line folders, checks."""
