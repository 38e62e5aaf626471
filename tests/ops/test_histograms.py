"""histogram and histogramdd against PyTorch on every device."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

RNG = np.random.default_rng(43)
VALUES = RNG.standard_normal(50)
POINTS = RNG.uniform(0, 1, (40, 2))
WEIGHTS = RNG.uniform(0, 2, 40)

HISTOGRAM = {
    "bins": lambda L, x, T: L.histogram(x, 5),
    "method": lambda L, x, T: x.histogram(4, range=(-1.0, 2.0)),
    "edges_weight_density": lambda L, x, T: L.histogram(
        x, T([-3.0, -1.0, 0.0, 0.5, 3.0]), weight=x.abs(), density=True
    ),
    "constant": lambda L, x, T: L.histogram(x * 0 + 1, 2),
}


def _run(lib, fn, data, device):
    kwargs = {"device": device} if lib is aa else {}
    x = lib.tensor(data, **kwargs)
    return fn(lib, x, lambda values: lib.tensor(values, dtype=lib.float64, **kwargs))


@pytest.mark.parametrize("name", sorted(HISTOGRAM))
def test_histogram_like_torch(torch, device, name):
    ours = _run(aa, HISTOGRAM[name], VALUES, device)
    theirs = _run(torch, HISTOGRAM[name], VALUES, "cpu")
    for o, t in zip(ours, theirs, strict=True):
        assert o.device == aa.device(device) and str(o.dtype) == "float64"
        np.testing.assert_allclose(o.cpu().numpy(), t.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    ("bins", "options"),
    [(3, {}), ([2, 4], {"range": [0.0, 1.0, 0.0, 2.0]}), ([3, 2], {"density": True})],
)
def test_histogramdd_like_torch(torch, device, bins, options):
    ours = aa.histogramdd(
        aa.tensor(POINTS, device=device), bins, weight=aa.tensor(WEIGHTS, device=device), **options
    )
    theirs = torch.histogramdd(torch.tensor(POINTS), bins, weight=torch.tensor(WEIGHTS), **options)
    np.testing.assert_allclose(ours.hist.cpu().numpy(), theirs.hist.numpy(), rtol=1e-12)
    assert len(ours.bin_edges) == len(theirs.bin_edges) == 2
    for o, t in zip(ours.bin_edges, theirs.bin_edges, strict=True):
        assert o.device == aa.device(device)
        np.testing.assert_allclose(o.cpu().numpy(), t.numpy(), rtol=1e-12)


def test_integer_input_and_mixed_dtypes_are_refused_like_torch(torch):
    for lib in (aa, torch):
        with pytest.raises(
            RuntimeError,
            match="got input with dtype double and bins for dimension 0 with dtype float",
        ):
            lib.histogram(lib.tensor([1.0], dtype=lib.float64), lib.tensor([0.0, 2.0]))
        with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
            lib.histogram(lib.tensor([1, 2]), 2)
