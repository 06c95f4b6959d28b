"""Run the Triton CTC kernels through Triton's CPU interpreter when there is no GPU.

Triton decides at ``@triton.jit`` decoration time (i.e. when ``text_recognizer.ctc.triton_ctc`` is
first imported) whether a kernel is compiled or interpreted, so ``TRITON_INTERPRET=1`` must be set
before that import. This conftest is loaded before the test modules of this directory. If the
kernel module was already imported in compiled mode by an earlier test (and there is no GPU),
``test_triton_ctc.py`` re-runs itself in a subprocess with the variable set.

An explicit ``TRITON_INTERPRET`` in the environment is respected; with a CUDA device and no explicit
setting, the kernels are compiled and the tests run on the GPU.
"""

import os

import torch

if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
