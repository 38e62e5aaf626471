"""`LBFGS`: limited-memory BFGS over all parameters as one flat vector, with a closure."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable
from typing import Any

from ..core.tensor import Tensor
from ..devices import array_module, launching
from ..grad_mode import enable_grad, no_grad
from .line_search import strong_wolfe
from .optimizer import Optimizer, grad_array

# State entries that hold flat arrays (wrapped as tensors so state dicts save and move them).
_ARRAY_STATE = ("d", "prev_flat_grad")
_ARRAY_LIST_STATE = ("old_dirs", "old_stps")


class LBFGS(Optimizer):
    """PyTorch's L-BFGS (`torch.optim.LBFGS`): up to `max_iter` iterations per `step(closure)`.

    One parameter group only; all parameters on one device. The state lives under the first
    parameter, with PyTorch's keys (`func_evals`, `n_iter`, `d`, `t`, `old_dirs`, `old_stps`,
    `ro`, `H_diag`, `prev_flat_grad`, `prev_loss`, `al`); its scalars are Python/NumPy numbers
    where PyTorch keeps 0-d tensors.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]
        devices = {str(p.device) for p in self._params}
        if len(devices) > 1:
            raise ValueError(
                f"LBFGS needs all parameters on one device, but they are on {sorted(devices)}"
            )
        self._device = self._params[0].device

    def _on_device(self) -> contextlib.AbstractContextManager:
        if self._device._entry is None:
            return contextlib.nullcontext()
        return launching(self._device, "LBFGS.step")

    def _gather_flat_grad(self) -> Any:
        xp = array_module(self._device)
        views = []
        for p in self._params:
            grad = grad_array(p)
            views.append(xp.zeros(p._data.size, p._data.dtype) if grad is None else grad.ravel())
        return xp.concatenate(views)

    def _add_grad(self, step_size: Any, update: Any) -> None:
        offset = 0
        for p in self._params:
            size = p._data.size
            p._data += step_size * update[offset : offset + size].reshape(p._data.shape)
            p._bump_version()
            offset += size

    def _clone_param(self) -> list[Any]:
        return [p._data.copy() for p in self._params]

    def _set_param(self, arrays: list[Any]) -> None:
        for p, data in zip(self._params, arrays, strict=True):
            p._data[...] = data
            p._bump_version()

    def _directional_evaluate(
        self, closure: Callable[[], Any], x: list[Any], t: Any, *, d: Any
    ) -> tuple[float, Any]:
        with self._on_device():
            self._add_grad(t, d)
        loss = float(closure())
        with self._on_device():
            flat_grad = self._gather_flat_grad()
            self._set_param(x)
        return loss, flat_grad

    @no_grad()
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to `max_iter` L-BFGS iterations; `closure` re-evaluates and returns the loss."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        def evaluate() -> Any:
            with enable_grad():
                return closure()

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        with self._on_device():
            flat_grad = self._gather_flat_grad()
            if abs(flat_grad).max() <= tolerance_grad:
                return orig_loss
        d = _array(state.get("d"))
        t = state.get("t")
        old_dirs = [_array(v) for v in state.get("old_dirs") or []]
        old_stps = [_array(v) for v in state.get("old_stps") or []]
        ro: list[Any] = state.get("ro", [])
        h_diag = state.get("H_diag")
        prev_flat_grad = _array(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            with self._on_device():
                if state["n_iter"] == 1:
                    d = -flat_grad
                    old_dirs, old_stps, ro = [], [], []
                    h_diag = 1
                else:
                    d, h_diag = self._direction(
                        state,
                        flat_grad,
                        prev_flat_grad,
                        d,
                        t,
                        old_dirs,
                        old_stps,
                        ro,
                        h_diag,
                        history_size,
                    )
                prev_flat_grad = flat_grad.copy()
                prev_loss = loss
                if state["n_iter"] == 1:
                    t = min(1.0, 1.0 / abs(flat_grad).sum()) * lr
                else:
                    t = lr
                gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break
            evaluations = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()
                loss, flat_grad, t, evaluations = strong_wolfe(
                    functools.partial(self._directional_evaluate, evaluate, x_init, d=d),
                    t,
                    d,
                    loss,
                    flat_grad,
                    gtd,
                    max_ls=max_eval - current_evals,
                )
                with self._on_device():
                    self._add_grad(t, d)
                    opt_cond = abs(flat_grad).max() <= tolerance_grad
            else:
                with self._on_device():
                    self._add_grad(t, d)
                if n_iter != max_iter:
                    loss = float(evaluate())
                    with self._on_device():
                        flat_grad = self._gather_flat_grad()
                        opt_cond = abs(flat_grad).max() <= tolerance_grad
                    evaluations = 1
            current_evals += evaluations
            state["func_evals"] += evaluations
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if abs(d * t).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        wrap = self._wrap
        state["d"] = wrap(d)
        state["t"] = t
        state["old_dirs"] = [wrap(v) for v in old_dirs]
        state["old_stps"] = [wrap(v) for v in old_stps]
        state["ro"] = ro
        state["H_diag"] = h_diag
        state["prev_flat_grad"] = wrap(prev_flat_grad)
        state["prev_loss"] = prev_loss
        return orig_loss

    def _wrap(self, array: Any) -> Tensor | None:
        return None if array is None else Tensor._wrap(array, self._device)

    @staticmethod
    def _direction(
        state: dict[str, Any],
        flat_grad: Any,
        prev_flat_grad: Any,
        d: Any,
        t: Any,
        old_dirs: list[Any],
        old_stps: list[Any],
        ro: list[Any],
        h_diag: Any,
        history_size: int,
    ) -> tuple[Any, Any]:
        """The next search direction by the two-loop recursion, after recording the last step's
        curvature pair (when it is positive enough); also the new Hessian diagonal estimate."""
        y = flat_grad - prev_flat_grad
        s = d * t
        ys = y.dot(s)
        if ys > 1e-10:
            if len(old_dirs) == history_size:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            h_diag = ys / y.dot(y)
        count = len(old_dirs)
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = -flat_grad
        for i in range(count - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q += -al[i] * old_dirs[i]
        r = q * h_diag
        for i in range(count):
            be_i = old_dirs[i].dot(r) * ro[i]
            r += (al[i] - be_i) * old_stps[i]
        return r, h_diag


def _array(value: Any) -> Any:
    """A state entry's array (None stays None)."""
    return value._data if isinstance(value, Tensor) else value
