"""`copy.deepcopy` of a tensor: its data, requires_grad and .grad are copied, its hooks are not."""

from __future__ import annotations

import copy

import pytest

import autograd_async as aa


def _program(lib):
    calls = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: calls.append("hook"))
    x.register_post_accumulate_grad_hook(lambda t: calls.append("post"))
    (x * 2).sum().backward()
    y = copy.deepcopy(x)
    seen = [y.requires_grad, y.is_leaf, y.grad.tolist(), y.grad is not x.grad]
    (y * 3).sum().backward()
    seen.append(y.grad.tolist())
    with lib.no_grad():
        y.add_(1.0)
    seen.append((x.tolist(), y.tolist()))
    pair = copy.deepcopy([x, x])
    seen.append(pair[0] is pair[1])
    return seen, calls


def test_deepcopy_drops_hooks_like_pytorch(torch):
    ours = _program(aa)
    assert ours == _program(torch)
    assert ours[1] == ["hook", "post"]  # only the original's backward ran the hooks


def test_deepcopy_of_a_non_leaf_raises_like_pytorch(torch):
    for lib in (aa, torch):
        x = lib.tensor([1.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
            copy.deepcopy(x * 2)


def test_deepcopy_keeps_the_parameter_type():
    p = aa.nn.Parameter(aa.ones(2))
    q = copy.deepcopy(p)
    assert type(q) is aa.nn.Parameter and q.requires_grad
    assert q._data is not p._data
