"""CTC: the loss (PyTorch or fused Triton kernels), InterCTC, smoothing and feasibility rules.

Decoding (turning a model's frames into text) lives in ``text_recognizer.decoding``.
"""

from text_recognizer.ctc.feasibility import required_frames
from text_recognizer.ctc.loss import ctc_loss

__all__ = ["ctc_loss", "required_frames"]
