"""Arithmetic ops: + - * / ** and negation, with NumPy broadcasting.

Broadcast gradients are reduced to each input's shape by the engine (one policy, in one place), so the
rules here return gradients in the broadcast shape.
"""

from __future__ import annotations

from typing import Any

from .base import Op


class AddBackward0(Op):
    __slots__ = ()
    op_name = "add"

    def forward(self, a: Any, b: Any) -> Any:
        return a + b

    def backward(self, g: Any) -> tuple:
        return g, g


class SubBackward0(Op):
    __slots__ = ()
    op_name = "sub"

    def forward(self, a: Any, b: Any) -> Any:
        return a - b

    def backward(self, g: Any) -> tuple:
        return g, (-g if self.needs_input_grad[1] else None)


class MulBackward0(Op):
    __slots__ = ()
    op_name = "mul"
    saved_inputs = (0, 1)

    def forward(self, a: Any, b: Any) -> Any:
        return a * b

    def backward(self, g: Any) -> tuple:
        a, b = self.saved(g)
        need = self.needs_input_grad
        return (g * b if need[0] else None), (g * a if need[1] else None)


class DivBackward0(Op):
    __slots__ = ()
    op_name = "div"
    saved_inputs = (0, 1)

    def forward(self, a: Any, b: Any) -> Any:
        return a / b

    def backward(self, g: Any) -> tuple:
        a, b = self.saved(g)
        need = self.needs_input_grad
        ga = g / b if need[0] else None
        gb = -g * a / (b * b) if need[1] else None
        return ga, gb


class NegBackward0(Op):
    __slots__ = ()
    op_name = "neg"

    def forward(self, a: Any) -> Any:
        return -a

    def backward(self, g: Any) -> Any:
        return -g


class TanhBackward0(Op):
    __slots__ = ()
    op_name = "tanh"
    saves_output = True

    def forward(self, a: Any) -> Any:
        return self._xp(a).tanh(a)

    def backward(self, g: Any) -> Any:
        (y,) = self.saved(g)
        return g * (1 - y * y)

    @staticmethod
    def _xp(a: Any) -> Any:
        from .dual import xp_of  # noqa: PLC0415

        return xp_of(a)
