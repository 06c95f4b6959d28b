"""CTC: the loss (PyTorch or fused Triton), feasibility rules and greedy decoding."""

from text_recognizer.ctc.decode import DecodedLine, ctc_decode
from text_recognizer.ctc.feasibility import required_frames
from text_recognizer.ctc.loss import ctc_loss

__all__ = ["DecodedLine", "ctc_decode", "ctc_loss", "required_frames"]
