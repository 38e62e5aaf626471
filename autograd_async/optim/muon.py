"""`Muon`: momentum orthogonalised by a Newton-Schulz iteration, for 2-d parameters."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..devices import array_module
from ..grad_mode import no_grad
from ._state import bump_versions, filled_like, gradients
from .adam import _lerp_
from .optimizer import Optimizer

DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5
EPS = 1e-7


def _to_bfloat16(xp: Any, x: Any) -> Any:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32.

    PyTorch runs the iteration in bfloat16, each operation rounding its float32 result once; the
    bit form works on NumPy and CuPy arrays alike.
    """
    bits = xp.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    bits = (bits + (((bits >> 16) & 1) + np.uint32(0x7FFF))) & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


def zeropower_via_newtonschulz(
    xp: Any, grad: Any, ns_coefficients: tuple[float, float, float], ns_steps: int, eps: float
) -> Any:
    """An approximate orthogonalisation (U S' V^T, S' near 1) of a matrix, in bfloat16 steps."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients

    def bf16(x: Any) -> Any:
        return _to_bfloat16(xp, x)

    x = bf16(grad.astype(np.float32))
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = bf16(xp.sqrt((x * x).sum(dtype=np.float32)))
    x = bf16(x / xp.maximum(norm, bf16(np.float32(eps))))
    for _ in range(ns_steps):
        gram = bf16(x @ x.T)
        gram_update = bf16(np.float32(b) * gram + np.float32(c) * (gram @ gram))
        x = bf16(np.float32(a) * x + gram_update @ x)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape: tuple[int, ...]) -> float:
    """The rate scaled so that updates of rectangular matrices have a comparable RMS."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """PyTorch's Muon update (`torch.optim.Muon`): 2-d parameters only.

    The Newton-Schulz iteration runs in bfloat16 as PyTorch's does (emulated: float32 arithmetic
    rounded to bfloat16 after each operation); a float32 accumulation order different from
    PyTorch's can move an update by one bfloat16 rounding step.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
        eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS,
        adjust_lr_fn: str | None = None,
    ) -> None:
        if not lr >= 0.0:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not momentum >= 0.0:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_coefficients": ns_coefficients,
            "eps": eps,
            "ns_steps": ns_steps,
            "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for param in group["params"]:
                if param.ndim != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {_torch_size(param.shape)}"
                    )

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Muon update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, weight_decay, momentum = group["lr"], group["weight_decay"], group["momentum"]
            for param, grad in gradients(group):
                if param._data.dtype.kind == "c":
                    raise RuntimeError("Muon does not support complex parameters")
                state = self.state[param]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = filled_like(param)
                xp = array_module(param.device)
                buf = state["momentum_buffer"]._data
                _lerp_(buf, grad, 1 - momentum)
                if group["nesterov"]:
                    update = grad.copy()
                    _lerp_(update, buf, momentum)
                else:
                    update = buf
                update = zeropower_via_newtonschulz(
                    xp, update, group["ns_coefficients"], group["ns_steps"], group["eps"]
                )
                adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], param.shape)
                data = param._data
                data *= 1 - lr * weight_decay
                data += (-adjusted_lr) * update.astype(data.dtype)
                bump_versions(state)
                param._bump_version()
        return loss


def _torch_size(shape: tuple[int, ...]) -> str:
    return f"torch.Size([{', '.join(str(n) for n in shape)}])"
