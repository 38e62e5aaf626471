"""torch.special's names: `autograd_async.special.erfcx(x)`, `special.gammaln(x)`, ...

The functions live with the other ops (`ops.special_functions` and the elementwise families);
this module gathers them under PyTorch's names.
"""

from __future__ import annotations

from typing import Any

from .core.tensor import Tensor
from .ops.elementwise import sigmoid as expit
from .ops.nn_ops import erf
from .ops.nn_ops import log_softmax as _log_softmax
from .ops.nn_ops import softmax as _softmax
from .ops.pointwise import xlogy
from .ops.reduction import logsumexp
from .ops.special import erfinv, expm1, log1p, round  # noqa: A004 - PyTorch's name
from .ops.special_functions import SPECIAL, digamma, erfc, exp2, i0, logit, polygamma, sinc
from .ops.special_functions import lgamma as gammaln
from .ops.special_functions import mvlgamma as multigammaln

psi = digamma


def softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """exp(input) / sum(exp(input)) along `dim`, computed in `dtype` when given."""
    return _softmax(input if dtype is None else input.to(dtype=dtype), dim)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """input - logsumexp(input) along `dim`, computed in `dtype` when given."""
    return _log_softmax(input if dtype is None else input.to(dtype=dtype), dim)


globals().update(SPECIAL)

__all__ = [
    "digamma", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "log1p",
    "log_softmax", "logit", "logsumexp", "multigammaln", "polygamma", "psi", "round", "sinc",
    "softmax", "xlogy",
]  # fmt: skip
__all__ += sorted(SPECIAL)
