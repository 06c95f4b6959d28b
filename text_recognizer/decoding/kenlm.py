"""Load an ARPA text into KenLM (inside flashlight-text), for the beam search and the word LM alike."""

from __future__ import annotations

import os
import tempfile

from text_recognizer.decoding.bundle import LanguageModelError


def load_kenlm(kenlm_class, arpa: str, dictionary):
    """KenLM reads from a path: write the ARPA text to a private temporary file and load it."""
    fd, path = tempfile.mkstemp(suffix=".arpa")
    saved = os.dup(2)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(arpa)
        with open(os.devnull, "w") as quiet:  # KenLM draws a progress bar on stderr while loading
            os.dup2(quiet.fileno(), 2)
            try:
                return kenlm_class(path, dictionary)
            finally:
                os.dup2(saved, 2)
    except RuntimeError as error:
        raise LanguageModelError(f"the language model could not be loaded by KenLM: {error}") from error
    finally:
        os.close(saved)
        os.unlink(path)
