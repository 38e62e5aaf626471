"""Inverse hyperbolic cosine and tangent, and the conversions between degrees and radians.

Written in the compact `_Unary` form of `ops.special`: the array function and its slope.
Integer inputs compute in the default float dtype, as PyTorch's do.
"""

from __future__ import annotations

import math
from typing import Any

from .dual import xp_of
from .special import RsqrtBackward0, _Unary, _unary, on


class AcoshBackward0(_Unary):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).arccosh(a)

    def slope(self, x: Any) -> Any:
        return on(RsqrtBackward0, (x - 1) * (x + 1))


class AtanhBackward0(_Unary):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).arctanh(a)

    def slope(self, x: Any) -> Any:
        return 1 / (1 - x * x)


class _Scale(_Unary):
    """Multiplication by a constant `factor`: its slope needs no saved input."""

    __slots__ = ()
    saved_inputs = ()
    factor = 1.0

    @classmethod
    def compute(cls, a: Any) -> Any:
        return a * cls.factor

    def backward(self, g: Any) -> Any:
        return g * self.factor


class Deg2RadBackward0(_Scale):
    __slots__ = ()
    factor = math.pi / 180


class Rad2DegBackward0(_Scale):
    __slots__ = ()
    factor = 180 / math.pi


acosh = _unary(AcoshBackward0, "acosh", "Elementwise inverse hyperbolic cosine (nan below 1).")
atanh = _unary(AtanhBackward0, "atanh", "Elementwise inverse hyperbolic tangent on (-1, 1).")
deg2rad = _unary(Deg2RadBackward0, "deg2rad", "Elementwise degrees to radians.")
rad2deg = _unary(Rad2DegBackward0, "rad2deg", "Elementwise radians to degrees.")

FUNCTIONS: dict[str, Any] = {
    "acosh": acosh,
    "arccosh": acosh,
    "atanh": atanh,
    "arctanh": atanh,
    "deg2rad": deg2rad,
    "rad2deg": rad2deg,
}
