"""The parts of the promised surface that other files compare with PyTorch only on the cpu, or not
at all: values, dtypes and gradients on every device (with gradcheck), PyTorch's keyword names,
and views sharing storage and version counter on every device."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
from gradients import to_numpy, versus_torch
from torch_reference import check_like_torch

import autograd_async as aa
from autograd_async.nn import functional as aa_F

RNG = np.random.default_rng(23)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
C = RNG.standard_normal((2, 3, 4))

CASES = {
    # 3-argument where: tensors, numbers and broadcasting on either side
    "where": (lambda lib, T, x, y: lib.where(x > 0, x, y), A, B),
    "where_broadcast": (
        lambda lib, T, x, y: lib.where(T([True, False, True, False]), x, y[0]),
        A,
        B,
    ),
    "where_number_other": (lambda lib, T, x: lib.where(x > 0.5, x, -1.0), A),
    "where_number_input": (lambda lib, T, x: lib.where(x > 0.5, 2.5, x), A),
    "where_method": (lambda lib, T, x, y: x.where(y > 0, y * 2), A, B),
    # split with a list of sizes, every piece used
    "split_sizes": (
        lambda lib, T, x: lib.cat([p * (i + 1) for i, p in enumerate(x.split([1, 2, 1], 2))], 2),
        C,
    ),
    "split_sizes_dim0": (lambda lib, T, x: x.split([2, 0, 1])[0] + x.split([2, 0, 1])[2], A),
    # the views of tests/core/test_views.py, on every device
    "narrow": (lambda lib, T, x: x.narrow(1, 1, 2) * 3, A),
    "narrow_function": (lambda lib, T, x: lib.narrow(x, 0, -2, 2), A),
    "select": (lambda lib, T, x: x.select(2, -1), C),
    "select_function": (lambda lib, T, x: lib.select(x, 0, 1), A),
    "view_as": (lambda lib, T, x, y: x.view_as(y) * y, A, B.reshape(2, 6)),
    "diagonal": (lambda lib, T, x: x.diagonal(), A),
    "diagonal_dims": (lambda lib, T, x: lib.diagonal(x, -1, 2, 0), C),
    "diagonal_offset": (lambda lib, T, x: x.diagonal(offset=1, dim1=1, dim2=2), C),
    # keyword names PyTorch code passes
    "swapaxes_keywords": (lambda lib, T, x: lib.swapaxes(x, axis0=0, axis1=2), C),
    "swapaxes_method_keywords": (lambda lib, T, x: x.swapaxes(axis0=1, axis1=0), A),
    "dot_keyword": (lambda lib, T, x, y: lib.dot(x[0], tensor=y[1]), A, B),
    "flip_keyword": (lambda lib, T, x: lib.flip(x, dims=[0, 2]), C),
    "flip_method_keyword": (lambda lib, T, x: x.flip(dims=(1,)), A),
    # dtypes across operands
    "maximum_int_and_float": (lambda lib, T, x: lib.maximum(T([[1, -2, 3, 0]] * 3), x), A),
    "minimum_bool_and_float": (lambda lib, T, x: lib.minimum(x, T([True, False, True, True])), A),
    "hypot_int_and_float": (lambda lib, T, x: lib.hypot(x, T([1, 2, 3, 4])), A),
}


@pytest.mark.parametrize("name", list(CASES))
def test_like_torch(torch, device: str, name: str) -> None:
    fn, *arrays = CASES[name]
    check_like_torch(torch, device, fn, *arrays)


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x.narrow(1, 1, 2),
        lambda x: x.select(0, 1),
        lambda x: x.view_as(aa.zeros(12)),
        lambda x: x.diagonal(1),
        lambda x: x.split([1, 2])[1],
        lambda x: x.swapaxes(0, 1),
        lambda x: x.t(),
        lambda x: x.mT,
    ],
)
def test_views_share_the_version_counter_on_each_device(device: str, view) -> None:
    x = aa.zeros(3, 4, device=device)
    v = view(x)
    assert v._base is x and v._is_view()
    x.add_(1.0)
    assert v._version == x._version == 1
    assert float(v.sum()) == v.numel()  # the view sees the base's change
    v.mul_(2.0)
    assert x._version == 2 and float(x.sum()) == 12 + v.numel()


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_full_like_and_empty_like_follow_torch(torch, device: str, dtype: str) -> None:
    torch_dtype = getattr(torch, dtype)
    ours_dtype = getattr(aa, dtype if dtype != "bool" else "bool_")
    x, t = aa.zeros(2, 3, dtype=ours_dtype, device=device), torch.zeros(2, 3, dtype=torch_dtype)
    for value in (2.7, 3, True):
        ours, ref = aa.full_like(input=x, fill_value=value), torch.full_like(t, value)
        assert ours.device == aa.device(device)
        assert str(ours.dtype) == str(ref.dtype).removeprefix("torch.")
        assert to_numpy(ours).tolist() == ref.tolist()
    ours = aa.full_like(x, 1.5, dtype=aa.float64, requires_grad=True)
    assert ours.dtype == aa.float64 and ours.requires_grad and ours.is_leaf
    empty = aa.empty_like(input=x, dtype=aa.int32)
    assert empty.shape == (2, 3) and empty.dtype == aa.int32 and empty.device == aa.device(device)


def test_new_methods_match_torch_for_each_dtype(torch, device: str) -> None:
    x = aa.tensor([1, 2], dtype=aa.int32, device=device)
    t = torch.tensor([1, 2], dtype=torch.int32)
    for name, args in [
        ("new_zeros", ((2, 1),)),
        ("new_ones", (3,)),
        ("new_full", ((2,), 2.9)),
        ("new_tensor", ([[1.5, 2.5]],)),
        ("new_empty", ((0, 2),)),
    ]:
        ours, ref = getattr(x, name)(*args), getattr(t, name)(*args)
        assert str(ours.dtype) == str(ref.dtype).removeprefix("torch."), name
        assert tuple(ours.shape) == tuple(ref.shape) and ours.device == aa.device(device), name
        if name != "new_empty":
            assert to_numpy(ours).tolist() == ref.tolist(), name


def test_integer_inputs_give_torchs_float_dtype(torch, device: str) -> None:
    ints = [[1, 2], [3, 40]]
    x, t = aa.tensor(ints, device=device), torch.tensor(ints)
    for fn in (
        lambda m, v: m.logsumexp(v, 1),
        lambda m, v: m.erf(v),
        lambda m, v: m.rsqrt(v),
        lambda m, v: m.reciprocal(v),
        lambda m, v: m.atan2(v, v),
        lambda m, v: m.linalg.vector_norm(v.float(), 1, dim=0),
    ):
        ours, ref = fn(aa, x), fn(torch, t)
        assert str(ours.dtype) == str(ref.dtype).removeprefix("torch.")
        np.testing.assert_allclose(to_numpy(ours), ref.numpy(), rtol=1e-6)


def test_factories_take_the_size_keyword(torch, device: str) -> None:
    x, t = aa.zeros(1, device=device), torch.zeros(1)
    for name in ("zeros", "ones", "empty", "rand", "randn"):
        for size in ((2, 3), [4], ()):
            ours = getattr(aa, name)(size=size, device=device)
            assert tuple(ours.shape) == tuple(getattr(torch, name)(size=size).shape), (name, size)
            assert ours.device == aa.device(device)
    for name in ("new_zeros", "new_ones", "new_empty"):
        ours, ref = getattr(x, name)(size=(3, 1)), getattr(t, name)(size=(3, 1))
        assert tuple(ours.shape) == tuple(ref.shape) and ours.device == aa.device(device)
    with pytest.raises(TypeError, match="size both positionally and as size="):
        aa.zeros(2, size=(2,))


def test_close_and_equal_follow_torch(torch, device: str) -> None:
    a = np.array([[1.0, 2.0], [3.0, np.nan]])
    b = np.array([1.0 + 1e-9, 2.0])
    x, y = aa.tensor(a, device=device), aa.tensor(b, device=device)
    s, t = torch.tensor(a), torch.tensor(b)
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.0}):
        assert (
            to_numpy(aa.isclose(x, y, **kwargs)).tolist() == torch.isclose(s, t, **kwargs).tolist()
        )
        assert aa.allclose(x[:1], y, **kwargs) == torch.allclose(s[:1], t, **kwargs)
    assert aa.allclose(x, x, equal_nan=True) == torch.allclose(s, s, equal_nan=True)
    assert aa.equal(x, x) == torch.equal(s, s)  # nan != nan
    assert aa.equal(x[0], y) == torch.equal(s[0], t)
    assert aa.equal(x[:1], x[0]) == torch.equal(s[:1], s[0])  # shapes differ


# ---------------------------------------------- PyTorch's keyword names
_TORCH_ONLY = {"out", "layout", "pin_memory", "memory_format"}

FUNCTIONS = """linspace logspace eye randint randperm empty_like full_like tril triu diag narrow
select repeat_interleave flip roll movedim swapaxes unflatten t diagonal gather scatter
scatter_add index_select index_add index_copy masked_select where take_along_dim nonzero topk sort
argsort kthvalue bmm baddbmm addmm outer dot mv cumsum cumprod logsumexp var std var_mean std_mean
amax amin clamp round atan2 remainder fmod lerp hypot maximum minimum allclose isclose equal
from_dlpack""".split()
FUNCTIONAL = """conv1d conv2d conv3d conv_transpose1d conv_transpose2d max_pool1d max_pool2d
avg_pool1d avg_pool2d adaptive_avg_pool1d adaptive_max_pool2d pad one_hot cosine_similarity
pairwise_distance softplus gelu prelu hardtanh""".split()


def _documented_keywords(fn) -> list[str]:
    """The parameter names in the signature line that opens a PyTorch docstring."""
    for line in (fn.__doc__ or "").strip().splitlines()[:3]:
        found = re.match(r"\s*[\w.]+\((.*?)\)\s*(->.*)?$", line)
        if found:
            names = [
                re.split(r"[=:]", part.strip().lstrip("\\"))[0].strip()
                for part in found.group(1).split(",")
            ]
            return [n for n in names if n and not n.startswith("*") and n.isidentifier()]
    return []


@pytest.mark.parametrize("name", FUNCTIONS + [f"F.{n}" for n in FUNCTIONAL])
def test_torch_keyword_names_are_accepted(torch, name: str) -> None:
    ours = getattr(aa_F, name[2:]) if name.startswith("F.") else getattr(aa, name)
    theirs = (
        getattr(torch.nn.functional, name[2:]) if name.startswith("F.") else getattr(torch, name)
    )
    documented = _documented_keywords(theirs)
    assert documented, f"no signature line in torch's docstring of {name}"
    params = inspect.signature(ours).parameters.values()
    accepted = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    missing = [k for k in documented if k not in accepted | _TORCH_ONLY]
    assert not missing, f"{name} lacks PyTorch's keyword(s) {missing}"


@pytest.mark.parametrize(
    "name",
    [
        "max_pool1d",
        "max_pool2d",
        "adaptive_max_pool2d",
        "softmax",
        "mse_loss",
        "log_softmax",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "kl_div",
        "nll_loss",
        "cross_entropy",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "margin_ranking_loss",
        "cosine_embedding_loss",
        "batch_norm",
        "group_norm",
        "layer_norm",
        "instance_norm",
        "embedding",
        "normalize",
        "interpolate",
        "unfold",
        "fold",
        "glu",
        "silu",
        "elu",
        "selu",
        "celu",
        "leaky_relu",
        "relu6",
        "hardsigmoid",
        "hardswish",
        "mish",
        "softsign",
        "tanhshrink",
        "logsigmoid",
    ],
)
def test_functional_signatures_match_torch(torch, name: str) -> None:
    # PyTorch writes these in Python: names, order and defaults must be the same.
    theirs = torch.nn.functional.__dict__[name]
    theirs = getattr(theirs, "__wrapped__", theirs)
    try:
        expected = inspect.signature(theirs).parameters.values()
    except (TypeError, ValueError):
        pytest.skip(f"torch.nn.functional.{name} has no Python signature")
    if any(p.kind == p.VAR_POSITIONAL for p in expected):
        pytest.skip(f"torch.nn.functional.{name} is a dispatcher")
    expected = [(p.name, p.default) for p in expected if not p.name.startswith("_")]
    ours = [(p.name, p.default) for p in inspect.signature(getattr(aa_F, name)).parameters.values()]
    assert ours == expected


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_with_weight_matches_torch(torch, device: str, reduction: str) -> None:
    versus_torch(
        torch,
        device,
        lambda x, t, w: aa_F.mse_loss(x, t, reduction=reduction, weight=w),
        lambda x, t, w: torch.nn.functional.mse_loss(x, t, reduction=reduction, weight=w),
        A,
        B,
        np.abs(A) + 0.5,
    )
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        legacy = aa_F.mse_loss(
            aa.ones(2, device=device), aa.zeros(2, device=device), size_average=False
        )
    assert legacy.item() == 2.0  # summed, as PyTorch's legacy arguments ask
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        aa_F.mse_loss(aa.zeros(3), aa.zeros(3), weight=aa.ones(2))
