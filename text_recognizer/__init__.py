"""text_recognizer: a handwritten text-line recognizer (CRNN + CTC).

The library has no imports from ``training/`` or ``api/``; both are thin layers on top of it.
"""

__version__ = "0.1.0"
