"""`SGD`: stochastic gradient descent with momentum, dampening, Nesterov, weight decay, maximize."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..devices import array_module
from ..grad_mode import no_grad
from ..tensor import Tensor
from .optimizer import Optimizer, grad_array


class SGD(Optimizer):
    """PyTorch's SGD update, step for step (`torch.optim.SGD`'s single-tensor form)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
        }
        super().__init__(params, defaults)
        self._scratch: dict[Any, Any] = {}

    def _subtract_scaled(self, param: Any, data: Any, grad: Any, lr: float) -> None:
        """data -= lr * grad without a temporary the size of the parameter.

        A scratch array per parameter, kept outside the state dict, instead of a fresh
        parameter-sized temporary on every step. (Not SciPy's BLAS axpy, though it is one pass:
        SciPy ships its own OpenBLAS, and a second BLAS thread pool spinning beside NumPy's made
        every training step several times slower on two cores.)
        """
        if data.ndim == 0 or data.size < 4096:
            data -= lr * grad
            return
        scratch = self._scratch.get(param)
        if scratch is None or scratch.shape != data.shape or scratch.dtype != data.dtype:
            scratch = self._scratch[param] = array_module(param.device).empty_like(data)
        array_module(param.device).multiply(grad, lr, out=scratch)
        data -= scratch

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One SGD update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, momentum = group["lr"], group["momentum"]
            dampening, weight_decay = group["dampening"], group["weight_decay"]
            for param in group["params"]:
                grad = grad_array(param)
                if grad is None:
                    continue
                if group["maximize"]:
                    grad = -grad
                data = param._data
                if weight_decay != 0:
                    grad = grad + weight_decay * data
                if momentum != 0:
                    state = self.state[param]
                    buf_t = state.get("momentum_buffer")
                    if buf_t is None:
                        # (an array even for 0-d parameters, whose arithmetic gives scalars)
                        buf = array_module(param.device).array(grad, copy=True)
                        state["momentum_buffer"] = Tensor._wrap(buf, param.device)
                    else:
                        buf = buf_t._data
                        buf *= momentum
                        if dampening:
                            buf += (1 - dampening) * grad
                        else:
                            buf += grad
                        buf_t._bump_version()
                    grad = grad + momentum * buf if group["nesterov"] else buf
                self._subtract_scaled(param, data, grad, lr)
                param._bump_version()
        return loss
