"""Weight and spectral normalisation as parametrizations (PyTorch's
`torch.nn.utils.parametrizations`), with PyTorch's arithmetic so that results match."""

from __future__ import annotations

from ...core.tensor import Tensor
from ...grad_mode import no_grad
from ..functional import normalize
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from .parametrize import register_parametrization

__all__ = ["spectral_norm", "weight_norm"]


def norm_except_dim(v: Tensor, power: float = 2, dim: int = 0) -> Tensor:
    """The norm of `v` over every dimension but `dim`, shaped to broadcast against `v`
    (`dim=-1`: the norm of the whole tensor)."""
    if dim == -1:
        return v.norm(power)
    others = tuple(d for d in range(v.dim()) if d != dim % v.dim())
    if not others:
        return v.abs() if power != 0 else (v != 0).to(v.dtype)
    return v.norm(p=power, dim=others, keepdim=True)


def weight_norm_values(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """`v * (g / ||v||)`, the norm taken over every dimension but `dim`."""
    return v * (g / norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_norm_values(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize `module.<name>` as `g * v / ||v||`: `original0` is the magnitude `g`,
    `original1` the direction `v` (norms over every dimension but `dim`; None: the whole)."""
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # The buffers are updated in place, so that copies of the module share them as
        # PyTorch's do.
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(weight_mat.H.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_dim(module: Module, dim: int | None) -> int:
    """The dimension holding the outputs: 1 for transposed convolutions, else 0."""
    if dim is not None:
        return dim
    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Divide `module.<name>` by its largest singular value, estimated by power iteration on
    each forward in training mode (`dim` default: 1 for transposed convolutions, else 0)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    dim = spectral_dim(module, dim)
    register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
