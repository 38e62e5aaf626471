"""Layers forward and backward against PyTorch, dropout modes, and an MLP's training steps."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn, optim

from .helpers import has_op, needs

RNG = np.random.default_rng(0)

# tensor.py's `_version`/`detach` use `self._base or self`, which calls bool() on a multi-element
# base, so saving a view (reshape's output) for backward raises; remove once that is fixed.


def _np(t) -> np.ndarray:
    return np.asarray(t)


def _to_torch(torch, ours: nn.Module, theirs):
    """Copy our module's weights into the torch module of the same structure."""
    theirs.load_state_dict({k: torch.tensor(_np(v)) for k, v in ours.state_dict().items()})
    return theirs


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(
        a, b.detach().numpy() if hasattr(b, "detach") else b, rtol=rtol, atol=atol
    )


def _backward_with(out, weights):
    (out * weights).sum().backward()


@needs("F.linear", "sum")
def test_linear_forward_backward(torch, device):
    ours = nn.Linear(5, 3).to(device)
    theirs = _to_torch(torch, ours, torch.nn.Linear(5, 3))
    x = RNG.standard_normal((4, 5)).astype("float32")
    r = RNG.standard_normal((4, 3)).astype("float32")
    xa = aa.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out = ours(xa)
    assert str(out.device) == device
    _close(_np(out), theirs(xt))
    _backward_with(out, aa.tensor(r, device=device))
    (theirs(xt) * torch.tensor(r)).sum().backward()
    _close(_np(ours.weight.grad), theirs.weight.grad)
    _close(_np(ours.bias.grad), theirs.bias.grad)
    _close(_np(xa.grad), xt.grad)
    assert str(ours.weight.grad.device) == device


@needs("F.linear")
def test_linear_without_bias(torch):
    ours = nn.Linear(3, 2, bias=False)
    theirs = _to_torch(torch, ours, torch.nn.Linear(3, 2, bias=False))
    x = RNG.standard_normal((2, 3)).astype("float32")
    _close(_np(ours(aa.tensor(x))), theirs(torch.tensor(x)))
    assert [n for n, _ in ours.named_parameters()] == ["weight"]


@pytest.mark.parametrize(
    ("make", "torch_name", "ops"),
    [
        (lambda: nn.ReLU(), "ReLU", ("F.relu",)),
        (lambda: nn.GELU(), "GELU", ("F.gelu",)),
        (lambda: nn.GELU("tanh"), "GELU", ("F.gelu",)),
        (lambda: nn.Tanh(), "Tanh", ("tanh",)),
        (lambda: nn.Sigmoid(), "Sigmoid", ("sigmoid",)),
        (lambda: nn.Softmax(dim=1), "Softmax", ("F.softmax",)),
        (lambda: nn.LogSoftmax(dim=-1), "LogSoftmax", ("F.log_softmax",)),
        pytest.param(lambda: nn.Flatten(), "Flatten", ("reshape",)),
        pytest.param(lambda: nn.Flatten(0, 1), "Flatten", ("reshape",)),
        (lambda: nn.Identity(), "Identity", ()),
    ],
)
def test_activations_and_shapes(torch, make, torch_name, ops):
    missing = [n for n in ops + ("sum",) if not has_op(n)]
    if missing:
        pytest.skip(f"ops not implemented yet: {missing}")
    ours = make()
    kwargs = {}
    if isinstance(ours, (nn.Softmax, nn.LogSoftmax)):
        kwargs["dim"] = ours.dim
    if isinstance(ours, nn.GELU):
        kwargs["approximate"] = ours.approximate
    if isinstance(ours, nn.Flatten):
        kwargs = {"start_dim": ours.start_dim, "end_dim": ours.end_dim}
    theirs = getattr(torch.nn, torch_name)(**kwargs)
    x = RNG.standard_normal((3, 4, 2)).astype("float32")
    r = RNG.standard_normal(tuple(theirs(torch.tensor(x)).shape)).astype("float32")
    xa, xt = aa.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = ours(xa)
    _close(_np(out), theirs(xt))
    _backward_with(out, aa.tensor(r))
    (theirs(xt) * torch.tensor(r)).sum().backward()
    _close(_np(xa.grad), xt.grad)


@needs("mean", "sqrt", "sum")
@pytest.mark.parametrize("shape", [(6,), (2, 6)])
def test_layer_norm_forward_backward(torch, device, shape):
    ours = nn.LayerNorm(shape, eps=1e-5)
    with aa.no_grad():
        ours.weight._data[...] = RNG.standard_normal(shape)
        ours.bias._data[...] = RNG.standard_normal(shape)
    theirs = _to_torch(torch, ours, torch.nn.LayerNorm(shape, eps=1e-5))
    ours.to(device)
    x = (RNG.standard_normal((3, 2, 6)) * 3 + 1).astype("float32")
    r = RNG.standard_normal((3, 2, 6)).astype("float32")
    xa = aa.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out = ours(xa)
    _close(_np(out), theirs(xt), rtol=1e-4, atol=1e-5)
    _backward_with(out, aa.tensor(r, device=device))
    (theirs(xt) * torch.tensor(r)).sum().backward()
    _close(_np(ours.weight.grad), theirs.weight.grad, rtol=1e-4, atol=1e-5)
    _close(_np(ours.bias.grad), theirs.bias.grad, rtol=1e-4, atol=1e-5)
    _close(_np(xa.grad), xt.grad, rtol=1e-4, atol=1e-4)


@needs("mean", "sqrt")
def test_layer_norm_shape_error():
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*, 4\]"):
        nn.LayerNorm(4)(aa.zeros(2, 3))


@needs("indexing", "sum")
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_forward_backward(torch, device, padding_idx):
    ours = nn.Embedding(6, 3, padding_idx=padding_idx)
    theirs = _to_torch(torch, ours, torch.nn.Embedding(6, 3, padding_idx=padding_idx))
    ours.to(device)
    idx = np.array([[0, 2, 2, 5], [2, 1, 0, 0]])  # repeated indices accumulate
    r = RNG.standard_normal((2, 4, 3)).astype("float32")
    out = ours(aa.tensor(idx, device=device))
    expected = theirs(torch.tensor(idx))
    _close(_np(out), expected)
    _backward_with(out, aa.tensor(r, device=device))
    (expected * torch.tensor(r)).sum().backward()
    _close(_np(ours.weight.grad), theirs.weight.grad)
    assert str(ours.weight.grad.device) == device


@needs("indexing")
def test_embedding_needs_integer_indices():
    # PyTorch's type and text (the layer used to raise its own TypeError)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
        nn.Embedding(3, 2)(aa.tensor([0.0, 1.0]))


@needs("F.cross_entropy", "F.mse_loss")
@pytest.mark.parametrize(
    ("ours", "theirs_name", "kwargs"),
    [
        (nn.CrossEntropyLoss(), "CrossEntropyLoss", {}),
        (nn.CrossEntropyLoss(reduction="sum"), "CrossEntropyLoss", {"reduction": "sum"}),
        (nn.CrossEntropyLoss(ignore_index=1), "CrossEntropyLoss", {"ignore_index": 1}),
        (nn.MSELoss(), "MSELoss", {}),
        (nn.MSELoss(reduction="none"), "MSELoss", {"reduction": "none"}),
    ],
)
def test_losses(torch, ours, theirs_name, kwargs):
    theirs = getattr(torch.nn, theirs_name)(**kwargs)
    x = RNG.standard_normal((5, 4)).astype("float32")
    if theirs_name == "CrossEntropyLoss":
        target = np.array([0, 3, 1, 1, 2])
    else:
        target = RNG.standard_normal((5, 4)).astype("float32")
    xa, xt = aa.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = ours(xa, aa.tensor(target)), theirs(xt, torch.tensor(target))
    _close(_np(out), expected)
    if out.ndim:
        out = out.sum()
        expected = expected.sum()
    out.backward()
    expected.backward()
    _close(_np(xa.grad), xt.grad)


def test_loss_reduction_is_checked():
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        nn.MSELoss(reduction="avg")


@needs("F.dropout")
def test_dropout_train_and_eval(device):
    drop = nn.Dropout(0.25)
    x = aa.ones(200, 100, device=device)
    out = np.asarray(drop(x))
    zeros = (out == 0).mean()
    assert 0.22 < zeros < 0.28
    np.testing.assert_allclose(out[out != 0], 1 / 0.75, rtol=1e-6)
    model = nn.Sequential(nn.Identity(), drop)
    model.eval()
    assert model(x) is x or np.array_equal(np.asarray(model(x)), np.asarray(x))
    model.train()
    assert (np.asarray(model(x)) == 0).any()
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


@needs("F.dropout", "sum")
def test_dropout_backward_masks_gradient():
    drop = nn.Dropout(0.5)
    x = aa.ones(50, 40, requires_grad=True)
    out = drop(x)
    out.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.asarray(out.detach()))


def _mlp(nn_mod):
    return nn_mod.Sequential(
        nn_mod.Linear(6, 16),
        nn_mod.ReLU(),
        nn_mod.Linear(16, 16),
        nn_mod.Tanh(),
        nn_mod.LayerNorm(16),
        nn_mod.Linear(16, 4),
    )


MLP_OPS = ("F.linear", "F.relu", "tanh", "mean", "sqrt", "F.cross_entropy")


@needs(*MLP_OPS)
@pytest.mark.parametrize(
    ("opt_name", "config"),
    [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.01}), ("AdamW", {"lr": 0.01})],
)
def test_mlp_training_steps_match_torch(torch, device, opt_name, config):
    aa.manual_seed(3)
    ours = _mlp(nn)
    theirs = _to_torch(torch, ours, _mlp(torch.nn))
    ours.to(device)
    opt = getattr(optim, opt_name)(ours.parameters(), **config)
    topt = getattr(torch.optim, opt_name)(theirs.parameters(), foreach=False, **config)
    loss_fn, tloss_fn = nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss()
    x = RNG.standard_normal((8, 6)).astype("float32")
    y = RNG.integers(0, 4, 8)
    for _ in range(3):
        opt.zero_grad()
        topt.zero_grad()
        loss = loss_fn(ours(aa.tensor(x, device=device)), aa.tensor(y, device=device))
        tloss = tloss_fn(theirs(torch.tensor(x)), torch.tensor(y))
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-5)
        loss.backward()
        tloss.backward()
        for (name, p), tp in zip(ours.named_parameters(), theirs.parameters(), strict=True):
            _close(_np(p.grad), tp.grad, rtol=1e-4, atol=1e-6)
            assert str(p.grad.device) == device, name
        opt.step()
        topt.step()
    for (name, p), tp in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        assert str(p.device) == device, name
        _close(_np(p), tp, rtol=1e-4, atol=1e-5)


@needs(*MLP_OPS)
async def test_mlp_step_with_backward_async():
    aa.manual_seed(4)
    model = _mlp(nn).to("sim:1")
    opt = optim.SGD(model.parameters(), lr=0.5)
    x = aa.randn(8, 6, device="sim:1")
    y = aa.tensor(RNG.integers(0, 4, 8), device="sim:1")
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = nn.CrossEntropyLoss()(model(x), y)
        await loss.backward_async()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


@needs(*MLP_OPS)
def test_checkpoint_resume_reproduces_training(tmp_path):
    aa.manual_seed(5)
    x = aa.randn(8, 6)
    y = aa.tensor(RNG.integers(0, 4, 8))

    def train(model, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            nn.CrossEntropyLoss()(model(x), y).backward()
            opt.step()

    model = _mlp(nn)
    opt = optim.Adam(model.parameters(), lr=0.01)
    train(model, opt, 2)
    aa.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 2}, tmp_path / "c")
    train(model, opt, 2)

    ckpt = aa.load(tmp_path / "c")
    resumed = _mlp(nn)
    resumed.load_state_dict(ckpt["model"])
    ropt = optim.Adam(resumed.parameters(), lr=0.01)
    ropt.load_state_dict(ckpt["optim"])
    assert ckpt["epoch"] == 2
    train(resumed, ropt, 2)
    for a, b in zip(model.parameters(), resumed.parameters(), strict=True):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-7)
