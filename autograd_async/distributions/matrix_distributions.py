"""Distributions over matrices: LKJCholesky (Cholesky factors of correlation matrices, by the
onion method) and Wishart (positive-definite matrices, by Bartlett's decomposition)."""

from __future__ import annotations

import math
import warnings
from numbers import Real
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..creation import arange, randn, tensor
from ..ops.cholesky import cholesky, solve_triangular
from ..ops.distribution_math import digamma, lgamma, mvlgamma
from ..ops.elementwise import where
from ..ops.shape import cat
from . import constraints
from .distribution import Distribution, as_shape
from .gamma import Beta, Chi2
from .multivariate_normal import _cholesky_inverse, _precision_to_scale_tril
from .utils import broadcast_all, diag_embed, finfo, lazy_property

__all__ = ["LKJCholesky", "Wishart"]

_LOG_2 = math.log(2)


class LKJCholesky(Distribution):
    """The LKJ distribution of the lower Cholesky factor of a `dim` x `dim` correlation matrix,
    with concentration eta: density proportional to det(L L^T) ** (eta - 1)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(
        self, dim: int, concentration: Any = 1.0, validate_args: bool | None = None
    ) -> None:
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = tuple(self.concentration.shape)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = arange(
            self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device
        )
        offset = cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, (dim, dim), validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LKJCholesky:
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = as_shape(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Any = ()) -> Tensor:
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(
            -1
        )
        norms = (u_normal * u_normal).sum(-1, keepdim=True).sqrt()
        first_row = np.arange(self.dim)[:, None] == 0
        rows = tensor(first_row, device=y.device)
        u_hypersphere = where(rows, 0.0, u_normal / where(rows, 1.0, norms))
        w = y.sqrt() * u_hypersphere
        diag_elems = (1 - (w * w).sum(-1)).clamp(min=float(finfo(w).tiny)).sqrt()
        return (w + diag_embed(diag_elems)).detach()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = arange(
            2, self.dim + 1, dtype=self.concentration.dtype, device=self.concentration.device
        )
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = lgamma(alpha) * dm1
        numerator = mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The derivative of mvlgamma(x, p): sum of digamma(x - i / 2) for i < p."""
    offsets = -arange(p, dtype=x.dtype, device=x.device) / 2
    return digamma(x.unsqueeze(-1) + offsets).sum(-1)


class Wishart(Distribution):
    """The Wishart distribution of positive-definite matrices, with `df` degrees of freedom and
    exactly one of `covariance_matrix`, `precision_matrix` or `scale_tril`."""

    support = constraints.positive_definite
    has_rsample = True

    @property
    def arg_constraints(self) -> dict:  # type: ignore[override]
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(
        self,
        df: Any,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise AssertionError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        param = given[0]
        if param.ndim < 2:
            raise ValueError(
                "scale_tril must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if isinstance(df, Real):
            batch_shape = tuple(param.shape[:-2])
            self.df = tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = tuple(np.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        if bool((self.df <= event_shape[-1] - 1).any()):
            raise ValueError(
                f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}."
            )
        name = (
            "scale_tril"
            if scale_tril is not None
            else "covariance_matrix"
            if covariance_matrix is not None
            else "precision_matrix"
        )
        setattr(self, name, param.expand(batch_shape + event_shape))
        if bool((self.df < event_shape[-1]).any()):
            warnings.warn(
                "Low df values detected. Singular samples are highly likely to occur for "
                "ndim - 1 < df < ndim.",
                stacklevel=2,
            )
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None  # exactly one of the three: checked above
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape: tuple) -> Chi2:
        """The chi-squared laws of the squared diagonal of Bartlett's factor."""
        p = self._event_shape[-1]
        steps = arange(
            p,
            dtype=self._unbroadcasted_scale_tril.dtype,
            device=self._unbroadcasted_scale_tril.device,
        )
        return Chi2(df=self.df.unsqueeze(-1) - steps.expand(batch_shape + (p,)))

    def expand(self, batch_shape: Any, _instance: Any = None) -> Wishart:
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = as_shape(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        lower = self._unbroadcasted_scale_tril
        return (lower @ lower.mT).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        precision = _cholesky_inverse(self._unbroadcasted_scale_tril)
        return precision.expand(self._batch_shape + self._event_shape)

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(self._batch_shape + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = factor.masked_fill(factor <= 0, math.nan)
        return factor.reshape(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        v = self.covariance_matrix
        diag_v = v.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (v.pow(2) + diag_v.unsqueeze(-1) * diag_v.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape: tuple) -> Tensor:
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        chi = chi.clamp(min=float(finfo(chi).eps))
        lower = randn(
            sample_shape + self._batch_shape + self._event_shape, dtype=chi.dtype, device=chi.device
        ).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (diag_embed(chi) + lower)
        return chol @ chol.mT

    def rsample(self, sample_shape: Any = (), max_try_correction: int | None = None) -> Tensor:
        """Bartlett's construction; singular draws are redrawn up to `max_try_correction` times
        (10 by default), with a warning."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = as_shape(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = ~self.support.check(sample)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                mask = is_singular.reshape(tuple(is_singular.shape) + (1, 1))
                sample = where(mask, self._bartlett_sampling(sample_shape), sample)
                is_singular = ~self.support.check(sample)
                if not bool(is_singular.any()):
                    break
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        lower = self._unbroadcasted_scale_tril
        half_logdet = lower.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        value_logdet = 2 * cholesky(value).diagonal(dim1=-2, dim2=-1).log().sum(-1)
        inner = solve_triangular(lower, value, upper=False)
        trace = solve_triangular(lower, inner.mT, upper=False).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (
            -nu * (p * _LOG_2 / 2 + half_logdet)
            - mvlgamma(nu / 2, p)
            + (nu - p - 1) / 2 * value_logdet
            - trace / 2
        )

    def entropy(self) -> Tensor:
        nu = self.df
        p = self._event_shape[-1]
        half_logdet = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (
            (p + 1) * (p * _LOG_2 / 2 + half_logdet)
            + mvlgamma(nu / 2, p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
            + nu * p / 2
        )
