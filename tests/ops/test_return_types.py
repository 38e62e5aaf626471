"""Named results of ops that return several tensors: PyTorch's type names, and they pickle as
PyTorch's do (a result class made under another name than its module gives it cannot)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import autograd_async as aa

A = np.random.default_rng(11).standard_normal((3, 4))
SQUARE = A[:, :3] + 3 * np.eye(3)

CASES = {
    "max": lambda lib, x: lib.max(x, 1),
    "min": lambda lib, x: lib.min(x, 0),
    "sort": lambda lib, x: lib.sort(x),
    "topk": lambda lib, x: lib.topk(x, 2),
    "kthvalue": lambda lib, x: lib.kthvalue(x, 2),
    "frexp": lambda lib, x: lib.frexp(x),
    "histogram": lambda lib, x: lib.histogram(x.reshape(-1), bins=3),
    "histogramdd": lambda lib, x: lib.histogramdd(x[:, :2], bins=[2, 2]),
    "triangular_solve": lambda lib, x: lib.triangular_solve(x[:, :1], x[:, :3].triu()),
    "lu_unpack": lambda lib, x: lib.lu_unpack(*lib.linalg.lu_factor(x[:, :3])),
}


@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
@pytest.mark.parametrize("name", list(CASES))
def test_named_result_pickles_like_torch(torch, name: str) -> None:
    data = SQUARE if name in ("triangular_solve", "lu_unpack") else A
    ours = CASES[name](aa, aa.tensor(data))
    ref = CASES[name](torch, torch.tensor(data))
    assert type(ours).__name__ == type(ref).__name__ == name
    back, ref_back = pickle.loads(pickle.dumps(ours)), pickle.loads(pickle.dumps(ref))
    assert type(back) is type(ours) and len(back) == len(ref_back)
    for got, want in zip(back, ref_back):
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-12)
