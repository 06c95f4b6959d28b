"""Open collections of handwriting as training data: manifests, fetching at a pinned commit, one transcription
guideline, lines cut and split by document (``text-recognizer-data``; ``data/README.md``, ``docs/transcription.md``).

It may import the library (``text_recognizer``: layouts, line cutting, the alphabet) and nothing else of ``training``:
the training loop reads what it writes as plain ``labels.tsv`` and PAGE/ALTO folders.
"""
