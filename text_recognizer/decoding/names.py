"""The decoders and reading counts the package offers, by name.

Why a module of its own: argument parsers (``text_recognizer.decoding.options``) and the batch command's driver list
them without importing torch, which the decoders themselves need.
"""

#: ``--decoder``: best path, or beam search with the checkpoint's language models.
DECODERS = ("greedy", "beam")
#: ``--readings``: each line read once, or three times (as it is, moved up, moved down) and the posteriors averaged.
READINGS = (1, 3)
