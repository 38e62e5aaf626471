"""Module machinery against PyTorch: dict and parameter containers (state_dict keys), forward
pre-/post-hooks, full backward pre-/post-hooks, Unflatten and Bilinear. Each program runs on
both libraries and the records are compared."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn


def _lib(torch, which):
    return aa if which == "ours" else torch


def _np(t):
    if t is None:
        return None
    return (
        t.detach().numpy()
        if hasattr(t, "numpy") and not isinstance(t, aa.Tensor)
        else (np.asarray(t.detach()))
    )


def containers_program(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = lib.nn.ModuleDict({"a": lib.nn.Linear(2, 3), "b": lib.nn.Linear(3, 1)})
            self.scales = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(3)), lib.zeros(2)])
            self.extra = lib.nn.ParameterDict({"shift": lib.nn.Parameter(lib.zeros(1))})
            self.extra["gain"] = lib.nn.Parameter(lib.ones(1))
            self.blocks.update([("c", lib.nn.Identity())])
            self.scales.append(lib.nn.Parameter(lib.ones(4)))

    net = Net()
    record = {
        "keys": list(net.state_dict()),
        "n_params": len(list(net.parameters())),
        "dict_keys": list(net.blocks.keys()),
        "len": (len(net.blocks), len(net.scales), len(net.extra)),
        "in": ("a" in net.blocks, "gain" in net.extra, "zz" in net.extra),
        "plain_tensor_became_parameter": isinstance(net.scales[1], lib.nn.Parameter),
        "slice_len": len(net.scales[1:]),
    }
    popped = net.blocks.pop("c")
    del net.extra["shift"]
    record["after_pop"] = (list(net.blocks.keys()), list(net.state_dict()), type(popped).__name__)
    return record


def test_containers_match_torch(torch):
    assert containers_program(aa) == containers_program(torch)


def forward_hooks_program(lib):
    log = []
    lin = lib.nn.Linear(2, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        lin.bias.zero_()
    h1 = lin.register_forward_pre_hook(lambda m, args: log.append(("pre", len(args))))
    lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    lin.register_forward_pre_hook(lambda m, args: log.append("first"), prepend=True)
    lin.register_forward_pre_hook(
        lambda m, args, kwargs: log.append(("kw", sorted(kwargs))), with_kwargs=True
    )
    lin.register_forward_hook(lambda m, args, out: out + 1)
    lin.register_forward_hook(
        lambda m, args, kwargs, out: log.append(
            ("post", [round(float(v), 4) for v in out.detach()])
        ),
        with_kwargs=True,
    )
    out = lin(lib.tensor([1.0, 1.0]))
    log.append([round(float(v), 4) for v in out.detach()])
    h1.remove()
    h1.remove()  # twice is harmless
    lin(lib.tensor([0.0, 0.0]))
    return log


def test_forward_hooks_match_torch(torch):
    assert forward_hooks_program(aa) == forward_hooks_program(torch)


def always_call_program(lib):
    class Broken(lib.nn.Module):
        def forward(self, x):
            raise ValueError("broken forward")

    log = []
    m = Broken()
    m.register_forward_hook(lambda m, a, o: log.append(("always", o)), always_call=True)
    m.register_forward_hook(lambda m, a, o: log.append("normal"))
    with pytest.raises(ValueError, match="broken forward"):
        m(lib.zeros(1))
    return log


def test_always_call_forward_hook_runs_on_error(torch):
    assert always_call_program(aa) == always_call_program(torch) == [("always", None)]


def backward_hooks_program(lib, *, scale_grad_output=False, replace_grad_input=False):
    log = []
    lin = lib.nn.Linear(3, 2).double()
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(np.arange(6.0).reshape(2, 3) / 7))
        lin.bias.copy_(lib.tensor([0.5, -0.5]))

    def pre(module, grad_output):
        log.append(("pre", [_np(g) for g in grad_output]))
        if scale_grad_output:
            return tuple(g * 2 for g in grad_output)
        return None

    def post(module, grad_input, grad_output):
        log.append(("post", [_np(g) for g in grad_input], [_np(g) for g in grad_output]))
        if replace_grad_input:
            return tuple(None if g is None else g * 10 for g in grad_input)
        return None

    lin.register_full_backward_pre_hook(pre)
    lin.register_full_backward_hook(post)
    x = lib.tensor(np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 2.0]]), requires_grad=True)
    (lin(x) * lib.tensor([[1.0, 3.0], [-1.0, 2.0]], dtype=lib.float64)).sum().backward()
    log.append(("x.grad", _np(x.grad)))
    log.append(("w.grad", _np(lin.weight.grad)))
    return log


def _assert_logs_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a[0] == b[0]
        flat_a, flat_b = _flatten(a[1:]), _flatten(b[1:])
        assert len(flat_a) == len(flat_b)
        for u, v in zip(flat_a, flat_b, strict=True):
            if u is None or v is None:
                assert u is None and v is None
            else:
                np.testing.assert_allclose(u, v, rtol=1e-12)


def _flatten(items):
    out = []
    for item in items:
        if isinstance(item, list | tuple):
            out.extend(_flatten(item))
        else:
            out.append(item)
    return out


@pytest.mark.parametrize(
    "options",
    [{}, {"scale_grad_output": True}, {"replace_grad_input": True}],
    ids=["observe", "pre-hook-scales-grad-output", "hook-replaces-grad-input"],
)
def test_full_backward_hooks_match_torch(torch, options):
    _assert_logs_equal(
        backward_hooks_program(aa, **options), backward_hooks_program(torch, **options)
    )


def inputs_without_grad_program(lib):
    log = []
    lin = lib.nn.Linear(2, 1)
    lin.register_full_backward_hook(lambda m, gi, go: log.append((gi, len(go))))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lin(lib.ones(1, 2)).sum().backward()
    log.append(any("no inputs require gradients" in str(w.message) for w in caught))
    return log


def test_backward_hook_when_no_input_requires_grad(torch):
    assert inputs_without_grad_program(aa) == inputs_without_grad_program(torch)
    assert inputs_without_grad_program(aa) == [((None,), 1), True]


def test_backward_hook_with_two_outputs_and_a_non_tensor_argument(torch):
    def program(lib):
        class Split(lib.nn.Module):
            def forward(self, x, factor, y):
                return x * factor, (x * y).sum()

        log = []
        m = Split()
        m.register_full_backward_hook(
            lambda mod, gi, go: log.append(
                (
                    [None if g is None else _np(g).tolist() for g in gi],
                    [None if g is None else _np(g).tolist() for g in go],
                )
            )
        )
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, 4.0])
        a, b = m(x, 3.0, y)
        (a.sum() + 2 * b).backward()
        return log, _np(x.grad).tolist()

    assert program(aa) == program(torch)


def test_hook_handles_remove_backward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    handle = lin.register_full_backward_hook(lambda *a: calls.append(1))
    lin(aa.ones(1, 2, requires_grad=True)).sum().backward()
    handle.remove()
    lin(aa.ones(1, 2, requires_grad=True)).sum().backward()
    assert calls == [1]


def test_backward_pre_hook_wrong_length_raises():
    lin = nn.Linear(2, 2)
    lin.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_output, got 2, but expected 1"):
        lin(aa.ones(1, 2, requires_grad=True)).sum().backward()


@pytest.mark.parametrize(("dim", "sizes"), [(1, (2, 4)), (-1, (4, -1)), (0, [3])])
def test_unflatten_matches_torch(torch, dim, sizes):
    x = np.arange(24.0).reshape(3, 8)
    ours = nn.Unflatten(dim, sizes)(aa.tensor(x))
    theirs = torch.nn.Unflatten(dim, sizes)(torch.tensor(x))
    np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())
    assert repr(nn.Unflatten(dim, sizes)) == repr(torch.nn.Unflatten(dim, sizes))


def test_unflatten_errors():
    with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1"):
        nn.Unflatten(1, (3, 3))(aa.zeros(2, 8))
    with pytest.raises(TypeError, match="unflattened_size must be a tuple or list of ints"):
        nn.Unflatten(1, "ab")


def test_bilinear_matches_torch(torch):
    rng = np.random.default_rng(0)
    ours = nn.Bilinear(3, 4, 2).double()
    theirs = torch.nn.Bilinear(3, 4, 2).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(np.asarray(ours.weight.detach())))
        theirs.bias.copy_(torch.tensor(np.asarray(ours.bias.detach())))
    x1, x2 = rng.standard_normal((5, 2, 3)), rng.standard_normal((5, 2, 4))
    a1, a2 = aa.tensor(x1, requires_grad=True), aa.tensor(x2, requires_grad=True)
    t1, t2 = torch.tensor(x1, requires_grad=True), torch.tensor(x2, requires_grad=True)
    out, expected = ours(a1, a2), theirs(t1, t2)
    np.testing.assert_allclose(np.asarray(out.detach()), expected.detach().numpy(), rtol=1e-12)
    (out**2).sum().backward()
    (expected**2).sum().backward()
    pairs = [
        (a1.grad, t1.grad),
        (a2.grad, t2.grad),
        (ours.weight.grad, theirs.weight.grad),
        (ours.bias.grad, theirs.bias.grad),
    ]
    for mine, ref in pairs:
        np.testing.assert_allclose(np.asarray(mine), ref.numpy(), rtol=1e-10)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_bilinear_errors():
    with pytest.raises(RuntimeError, match=r"input2 has shape \(2, 5\), expected \(\*, 4\)"):
        nn.Bilinear(3, 4, 2)(aa.zeros(2, 3), aa.zeros(2, 5))


def test_backward_hooks_see_an_unused_output_like_torch(torch):
    def program(lib):
        class Two(lib.nn.Module):
            def forward(self, x):
                return x * 2, x * 3

        log = []
        m = Two()
        m.register_full_backward_pre_hook(
            lambda mod, go: log.append([None if g is None else _np(g).tolist() for g in go])
        )
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        first, _unused = m(x)
        first.sum().backward()
        return log, _np(x.grad).tolist()

    assert program(aa) == program(torch)
