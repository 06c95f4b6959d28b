"""The names of the files a run directory holds that other packages read (``training.experiments``'
run comparison reads them without importing torch, so this module imports nothing)."""

#: One JSON line per ``--resume``: the flags that resume changed (written by ``checkpointing``).
OVERRIDES_FILE = "config_overrides.jsonl"
