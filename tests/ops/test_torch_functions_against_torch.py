"""torch functions built from other ops (stacks, splits, grids, order statistics, counting) and
NumPy's `axis=`/`keepdims=` names, against PyTorch: values, dtypes and float64 gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_async as aa

R = np.random.default_rng(1)
A = R.standard_normal((2, 3))
B = R.standard_normal((3,))
C = R.standard_normal((2, 3, 4))
V = R.standard_normal(4)
M = R.standard_normal((3, 5))
NANS = M.copy()
NANS[1, 2] = np.nan
INTS = np.array([3, 1, 2, 1, 3, 0, 5])
SORTED = np.array([1.0, 3, 5, 7])
TIES = np.array([[3.0, 1, 2, 1, 3], [0, 0, 1, 1, 1], [2, 2, 2, 1, 1]])

CASES = {
    "vstack": (lambda L, a, b: L.vstack([a, b]), A, B),
    "hstack": (lambda L, a: L.hstack([a, a]), A),
    "dstack": (lambda L, a: L.dstack([a, a]), A),
    "column_stack": (lambda L, a, b: L.column_stack([b, a.T]), A, B),
    "row_stack": (lambda L, a, b: L.row_stack([a, b]), A, B),
    "atleast_3d": (lambda L, a, b: L.atleast_3d(a, b), A, B),
    "atleast_2d": (lambda L, b: L.atleast_2d(b), B),
    "atleast_1d": (lambda L, b: L.atleast_1d(b[0]), B),
    "tensor_split": (lambda L, c: L.tensor_split(c, 3, dim=2), C),
    "tensor_split_indices": (lambda L, c: L.tensor_split(c, [1, 3, 10], dim=-1), C),
    "hsplit": (lambda L, c: L.hsplit(c, 3), C),
    "vsplit": (lambda L, c: L.vsplit(c, [1]), C),
    "dsplit": (lambda L, c: L.dsplit(c, 2), C),
    "broadcast_tensors": (lambda L, a, b: L.broadcast_tensors(a, b), A, B),
    "meshgrid": (lambda L, a, b: L.meshgrid(a[0], b, indexing="ij"), A, B),
    "meshgrid_xy": (lambda L, a, b: L.meshgrid(a[0], b, indexing="xy"), A, B),
    "cartesian_prod": (lambda L, a, b: L.cartesian_prod(a[0], b), A, B),
    "combinations": (lambda L, v: L.combinations(v, 2), V),
    "combinations_replacement": (lambda L, v: L.combinations(v, 3, with_replacement=True), V),
    "block_diag": (lambda L, a, b: L.block_diag(a, b, a[0, 0]), A, B),
    "tile": (lambda L, a: L.tile(a, (2, 1, 2)), A),
    "tile_method": (lambda L, a: a.tile((2,)), A),
    "kron": (lambda L, a, c: L.kron(a, c), A, C),
    "rot90": (lambda L, c: L.rot90(c, 1, [1, 2]), C),
    "rot90_negative": (lambda L, c: L.rot90(c, -1, [0, 2]), C),
    "diag_embed": (lambda L, c: L.diag_embed(c, 1, 0, 2), C),
    "diag_embed_negative": (lambda L, a: L.diag_embed(a, -2), A),
    "diagflat": (lambda L, a: L.diagflat(a, 1), A),
    "tril_indices": (lambda L: L.tril_indices(3, 4, 1),),
    "triu_indices": (lambda L: L.triu_indices(4, 3, -1),),
    "cummax": (lambda L, a: L.cummax(a, 1), M),
    "cummin": (lambda L, a: L.cummin(a, 0), M),
    "cummax_ties": (lambda L, d: L.cummax(d, 1), TIES),
    "logcumsumexp": (lambda L, a: L.logcumsumexp(a, 1), M),
    "median": (lambda L, a: L.median(a, 1), M),
    "median_all": (lambda L, a: L.median(a), M),
    "median_nan": (lambda L, a: L.median(a, 1), NANS),
    "nanmedian": (lambda L, a: L.nanmedian(a, 1), NANS),
    "nanmedian_all": (lambda L, a: L.nanmedian(a), NANS),
    "mode": (lambda L, d: L.mode(d, 1), TIES),
    "quantile": (lambda L, a: L.quantile(a, 0.3, dim=1), M),
    "quantile_tensor_q": (
        lambda L, a: L.quantile(a, L.tensor([0.1, 0.5, 0.9], dtype=L.float64), dim=0, keepdim=True),
        M,
    ),
    "quantile_all": (lambda L, a: L.quantile(a, 0.7), M),
    "quantile_lower": (lambda L, a: L.quantile(a, 0.35, dim=1, interpolation="lower"), M),
    "quantile_higher": (lambda L, a: L.quantile(a, 0.35, dim=1, interpolation="higher"), M),
    "quantile_midpoint": (lambda L, a: L.quantile(a, 0.35, dim=1, interpolation="midpoint"), M),
    "quantile_nearest": (lambda L, a: L.quantile(a, 0.35, dim=1, interpolation="nearest"), M),
    "quantile_nan": (lambda L, a: L.quantile(a, 0.3, dim=1), NANS),
    "nanquantile": (lambda L, a: L.nanquantile(a, 0.3, dim=1), NANS),
    "nansum": (lambda L, a: L.nansum(a, 1), NANS),
    "nanmean": (lambda L, a: L.nanmean(a, 1), NANS),
    "count_nonzero": (lambda L, d: L.count_nonzero(d, 1), TIES),
    "aminmax": (lambda L, a: L.aminmax(a, dim=1), M),
    "aminmax_all": (lambda L, a: L.aminmax(a), M),
    "unique": (lambda L, i: L.unique(i, return_inverse=True, return_counts=True), INTS),
    "unique_consecutive": (
        lambda L: L.unique_consecutive(
            L.tensor([1, 1, 2, 2, 3, 1, 1]), return_inverse=True, return_counts=True
        ),
    ),
    "bincount": (lambda L, i: L.bincount(i), INTS),
    "bincount_weights": (lambda L, i: L.bincount(i, L.arange(7.0)), INTS),
    "histc": (lambda L, a: L.histc(a, bins=4, min=-1, max=1), M),
    "histc_range": (lambda L, a: L.histc(a, bins=5), M),
    "searchsorted": (lambda L, s: L.searchsorted(s, L.tensor([3.0, 6, 9]), right=True), SORTED),
    "searchsorted_rows": (lambda L, a: L.searchsorted(L.sort(a, 1)[0], a[:, :2].contiguous()), M),
    "bucketize": (lambda L, s: L.bucketize(L.tensor([3.0, 6, 9]), s), SORTED),
}


def _run(lib, fn, arrays):
    tensors = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(lib, *tensors)
    return tensors, out if isinstance(out, (tuple, list)) else (out,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_torch(torch, name):
    fn, *arrays = CASES[name]
    ours_in, ours = _run(aa, fn, arrays)
    their_in, theirs = _run(torch, fn, arrays)
    assert len(ours) == len(theirs)
    for a, t in zip(ours, theirs):
        assert tuple(a.shape) == tuple(t.shape)
        assert str(a.dtype).rsplit(".")[-1] == str(t.dtype).rsplit(".")[-1]
        np.testing.assert_allclose(
            np.asarray(a.tolist(), dtype=float),
            np.asarray(t.tolist(), dtype=float),
            rtol=1e-12,
            equal_nan=True,
        )
    floats = [(a, t) for a, t in zip(ours, theirs) if t.is_floating_point() and t.requires_grad]
    if not floats:
        return
    weights = [R.standard_normal(tuple(t.shape)) for _, t in floats]
    sum((a * aa.tensor(w)).sum() for (a, _), w in zip(floats, weights)).backward()
    sum((t * torch.tensor(w)).sum() for (_, t), w in zip(floats, weights)).backward()
    for a, t in zip(ours_in, their_in):
        if t.grad is not None:
            np.testing.assert_allclose(
                a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12, equal_nan=True
            )


def test_unique_along_a_dim(torch):
    ours = aa.unique(aa.tensor(TIES), dim=1, return_inverse=True)
    theirs = torch.unique(torch.tensor(TIES), dim=1, return_inverse=True)
    for a, t in zip(ours, theirs):
        assert a.tolist() == t.tolist()
    ours = aa.unique_consecutive(aa.tensor(TIES), dim=0, return_counts=True)
    theirs = torch.unique_consecutive(torch.tensor(TIES), dim=0, return_counts=True)
    for a, t in zip(ours, theirs):
        assert a.tolist() == t.tolist()


def test_broadcast_shapes(torch):
    assert aa.broadcast_shapes((2, 1), (3,), 1) == tuple(torch.broadcast_shapes((2, 1), (3,), 1))
    with pytest.raises(RuntimeError):
        aa.broadcast_shapes((2,), (3,))


AXIS_CALLS = [
    ("sum", {"axis": 0}),
    ("sum", {"axis": 1, "keepdims": True}),
    ("mean", {"axis": 0}),
    ("std", {"axis": 1}),
    ("var", {"axis": 0}),
    ("prod", {"axis": 1}),
    ("amax", {"axis": 0}),
    ("amin", {"axis": 1}),
    ("argmax", {"axis": 1}),
    ("argmin", {"axis": 0}),
    ("logsumexp", {"axis": 1}),
    ("cumsum", {"axis": 1}),
    ("nansum", {"axis": 0}),
    ("median", {"axis": 1}),
    ("count_nonzero", {"axis": 0}),
    ("softmax", {"axis": 1}),
    ("max", {"axis": 0}),
    ("min", {"axis": 1}),
    ("std_mean", {"axis": 0}),
    ("var_mean", {"axis": 1}),
    ("all", {"axis": 0}),
    ("any", {"axis": 1}),
    ("unbind", {"axis": 1}),
    ("squeeze", {"axis": 0}),
    ("unsqueeze", {"axis": 1}),
]


@pytest.mark.parametrize("name, kwargs", AXIS_CALLS)
def test_numpy_axis_and_keepdims_names(torch, name, kwargs):
    for values in (A, A[:1]):
        ours = getattr(aa, name)(aa.tensor(values), **kwargs)
        theirs = getattr(torch, name)(torch.tensor(values), **kwargs)
        ours = ours if isinstance(ours, tuple) else (ours,)
        theirs = theirs if isinstance(theirs, tuple) else (theirs,)
        for a, t in zip(ours, theirs):
            np.testing.assert_allclose(
                np.asarray(a.tolist(), float), np.asarray(t.tolist(), float), rtol=1e-12
            )
        method = getattr(aa.tensor(values), name)(**kwargs)
        method = method if isinstance(method, tuple) else (method,)
        assert [m.shape for m in method] == [tuple(t.shape) for t in theirs]
    assert aa.cat([aa.tensor(A)] * 2, axis=1).shape == (2, 6)
    with pytest.raises(TypeError):
        aa.sum(aa.tensor(A), dim=0, axis=0)


P = R.standard_normal((3, 4))
Q = R.standard_normal((3, 4))
SPECIAL = np.array([-1.5, 0, -0.0, 2, np.nan, np.inf, -np.inf])
LEFT_INTS = np.array([12, 18, -7, 0])
RIGHT_INTS = np.array([8, 4, 21, 5])
POINTS = np.sort(R.standard_normal(4))

NUMERIC = {
    "copysign": (lambda L, a, b: L.copysign(a, b), P, Q),
    "copysign_number": (lambda L, a: L.copysign(a, -1.0), P),
    "copysign_ints": (lambda L, i, j: L.copysign(i, j), LEFT_INTS, RIGHT_INTS),
    "heaviside": (
        lambda L, z: L.heaviside(z.detach(), L.full((7,), 0.5, dtype=L.float64)),
        SPECIAL,
    ),
    "fmax": (
        lambda L, z: L.fmax(L.tensor([1.0, 2, np.nan, np.nan, 0, 1, 2], dtype=L.float64), z),
        SPECIAL,
    ),
    "fmin": (lambda L, a, b: L.fmin(a, b), P, Q),
    "gcd": (lambda L, i, j: L.gcd(i, j), LEFT_INTS, RIGHT_INTS),
    "lcm": (lambda L, i, j: L.lcm(i, j), LEFT_INTS, RIGHT_INTS),
    "signbit": (lambda L, z: L.signbit(z), SPECIAL),
    "float_power": (lambda L, a: L.float_power(a, 2), P),
    "float_power_ints": (lambda L, i: L.float_power(i, 2), LEFT_INTS),
    "nan_to_num": (lambda L, z: L.nan_to_num(z), SPECIAL),
    "nan_to_num_values": (lambda L, z: L.nan_to_num(z, nan=1.0, posinf=9.0, neginf=-9.0), SPECIAL),
    "addcmul": (lambda L, a, b: L.addcmul(a, a, b, value=0.5), P, Q),
    "addcdiv": (lambda L, a, b: L.addcdiv(a, a, b, value=2), P, Q),
    "trace": (lambda L, a: L.trace(a), P),
    "diff": (lambda L, a: L.diff(a, n=2, dim=1), P),
    "diff_prepend_append": (lambda L, a, b: L.diff(a, dim=0, prepend=b[:1], append=b[1:]), P, Q),
    "tensordot": (lambda L, c, a: L.tensordot(c, a, dims=([1, 2], [0, 1])), C, P),
    "tensordot_int": (lambda L, c, a: L.tensordot(c, a.T, dims=1), C, P),
    "take": (lambda L, a: L.take(a, L.tensor([[0, 5], [11, 3]])), P),
    "cov": (lambda L, a: L.cov(a), P),
    "cov_correction": (lambda L, a: L.cov(a, correction=0), P),
    "cov_weights": (
        lambda L, a: L.cov(
            a,
            fweights=L.tensor([1, 2, 1, 3]),
            aweights=L.tensor([0.5, 1.0, 2.0, 1.0], dtype=L.float64),
        ),
        P,
    ),
    "corrcoef": (lambda L, a: L.corrcoef(a), P),
    "trapezoid": (lambda L, a: L.trapezoid(a), P),
    "trapezoid_x": (lambda L, a, x: L.trapezoid(a, x), P, POINTS),
    "trapezoid_dx": (lambda L, a: L.trapezoid(a, dx=0.5, dim=0), P),
    "cumulative_trapezoid": (lambda L, a, x: L.cumulative_trapezoid(a, x), P, POINTS),
    "cdist": (lambda L, a, b: L.cdist(a, b[:2]), P, Q),
    "cdist_p1": (lambda L, c, b: L.cdist(c, b[:2], p=1), C, Q),
    "unfold": (lambda L, c: c.unfold(2, 2, 1), C),
    "unfold_step": (lambda L, c: c.unfold(0, 1, 2), C),
    "conj": (lambda L, a: L.conj(a), P),
    "in_place_forms": (lambda L, a: (a * 1).sin_().mul_(2).clamp_min_(-0.5).add_(1).sqrt_(), P),
    "in_place_binary": (lambda L, a, b: (a * 1).atan2_(b).lerp_(b, 0.3), P, Q),
}


@pytest.mark.parametrize("name", sorted(NUMERIC))
def test_numeric_like_torch(torch, name):
    CASES[name] = NUMERIC[name]
    try:
        test_like_torch(torch, name)
    finally:
        del CASES[name]


def test_dtype_queries(torch):
    assert str(aa.result_type(aa.tensor([1]), 1.0)) == "float32"
    for a, b in [("int32", "float16"), ("uint8", "int8"), ("bool", "int16")]:
        ours = aa.promote_types(getattr(aa, a), getattr(aa, b))
        assert str(ours) == str(torch.promote_types(getattr(torch, a), getattr(torch, b)))[6:]
        assert aa.can_cast(getattr(aa, a), getattr(aa, b)) == torch.can_cast(
            getattr(torch, a), getattr(torch, b)
        )
    assert aa.is_floating_point(aa.tensor(1.0)) and not aa.is_complex(aa.tensor(1.0))


def test_in_place_forms_refuse_a_wider_result(torch):
    for lib in (aa, torch):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
            lib.tensor([1, 2]).exp_()


SCATTER_INDEX = [[0, 0, 2, 4], [1, 1, 1, 1], [3, 2, 3, 2]]
SCATTER_SRC = R.standard_normal((3, 4))
SCATTER_SRC[0, 1] = SCATTER_SRC[0, 0]  # a tie for amax and amin


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_like_torch(torch, reduce, include_self):
    CASES["scatter_reduce"] = (
        lambda L, x, s: L.scatter_reduce(
            x, 1, L.tensor(SCATTER_INDEX), s, reduce, include_self=include_self
        ),
        M,
        SCATTER_SRC,
    )
    try:
        test_like_torch(torch, "scatter_reduce")
    finally:
        del CASES["scatter_reduce"]


def test_scatter_with_reduce_and_integers(torch):
    for lib in (aa, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            added = lib.scatter(
                lib.tensor(M), 1, lib.tensor(SCATTER_INDEX), lib.tensor(SCATTER_SRC), reduce="add"
            )
            scaled = lib.scatter(
                lib.tensor(M), 1, lib.tensor([[0, 0, 2, 4]]), 2.0, reduce="multiply"
            )
            means = lib.scatter_reduce(
                lib.arange(6).reshape(2, 3),
                1,
                lib.tensor([[0, 0], [2, 1]]),
                lib.tensor([[5, -3], [7, 1]]),
                "mean",
            )
        if lib is aa:
            ours = (added.numpy(), scaled.numpy(), means.numpy())
    np.testing.assert_allclose(ours[0], added.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours[1], scaled.numpy(), rtol=1e-12)
    assert ours[2].tolist() == means.tolist()
