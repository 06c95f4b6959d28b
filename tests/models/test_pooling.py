"""MaxPool: without gradients exactly max_pool2d's values; training and export keep max_pool2d."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from text_recognizer.models.pooling import MaxPool

KERNELS = [(2, 2), (2, 1), (1, 2), (1, 1)]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("shape", [(1, 3, 40, 1024), (2, 5, 9, 17), (3, 1, 2, 3), (1, 2, 7, 2)])
def test_matches_max_pool2d_without_gradients(kernel, shape):
    torch.manual_seed(0)
    x = torch.randn(shape)
    x[..., ::3] = 0.0  # ties, as after a ReLU
    expected = F.max_pool2d(x, kernel)
    with torch.inference_mode():
        assert torch.equal(MaxPool(*kernel)(x), expected)
    with torch.no_grad():
        assert torch.equal(MaxPool(*kernel)(x), expected)
    assert torch.equal(MaxPool(*kernel)(x), expected)  # a tensor that needs no gradient


def test_training_uses_max_pool2d_and_its_gradient():
    torch.manual_seed(1)
    x = torch.randn(2, 4, 10, 12, requires_grad=True)
    grad = torch.randn(2, 4, 5, 6)
    (ours,) = torch.autograd.grad(MaxPool(2, 2)(x), x, grad)
    (theirs,) = torch.autograd.grad(F.max_pool2d(x, (2, 2)), x, grad)
    assert torch.equal(ours, theirs)


def test_traced_graph_holds_one_max_pool_node():
    with torch.no_grad():
        graph = str(torch.jit.trace(MaxPool(2, 1), torch.randn(1, 2, 8, 8)).graph)
    assert "max_pool2d" in graph
    assert "maximum" not in graph


@pytest.mark.parametrize("kernel", [(3, 2), (2, 0), (4, 4)])
def test_other_kernels_are_refused(kernel):
    with pytest.raises(ValueError, match="1 or 2"):
        MaxPool(*kernel)
