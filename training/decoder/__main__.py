"""``python -m training.decoder``: the decoder tuner's command (``training.decoder.cli``)."""

from training.decoder.cli import main

raise SystemExit(main())
