"""Models: the sliding-window CNN (``LineCNN``) and the ``CRNN`` built on it."""

from text_recognizer.models.config import ModelConfig
from text_recognizer.models.crnn import CRNN, build_model
from text_recognizer.models.line_cnn import LineCNN, WindowGeometry

__all__ = ["CRNN", "LineCNN", "ModelConfig", "WindowGeometry", "build_model"]
