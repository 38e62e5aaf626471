"""`CopySlices`: the node a base gets when one of its views is changed in place.

As PyTorch's: it wraps the in-place op's node `fn`. Backward hands `fn` the gradient of the view's
region, writes the gradient `fn` returns for the view's old values back into that region, and
passes the rest of the base's gradient to the base's old history. `fn`'s other inputs keep their
edges; its edge to the view's old history is not used, so hooks on the view's old history do not
fire (the view itself now hangs off the base, see `ops.inplace`).
"""

from __future__ import annotations

from typing import Any

from ..core.graph import Node
from ..core.history import NO_EDGE, gradient_edge, init_node
from ..core.op import RELEASED_MESSAGE
from ..core.tensor import Tensor
from .dual import getitem, mul_const, xp_of
from .indexing import IndexAccumulateBackward0


class CopySlices(Node):
    """The history of a base after an in-place change of its view (region: flat indices)."""

    __slots__ = ("fn", "_region")

    fn: Node | None  # the in-place op's node; None once released

    def name(self) -> str:
        """PyTorch's name for this node, which it writes in C++."""
        return "torch::autograd::CopySlices"

    def __init__(self, base: Tensor, fn: Node, region: Any) -> None:
        init_node(self, base.device)
        self.fn = fn
        self._region = region
        edge = gradient_edge(base) if base._rg else NO_EDGE
        self._edges = (*edge, *fn._edges[2:])
        self._out_meta = ((base._data.shape, base._data.dtype),)
        # `fn` now runs only inside this node: its first edge (the view's old history) must not
        # be handed gradients (`Op.hand_over`) nor walked.
        fn._edges = (*NO_EDGE, *fn._edges[2:])

    def backward(self, g: Any) -> tuple:
        """The base's gradient outside the region, `fn`'s inside; `fn`'s other gradients."""
        fn = self.fn
        if fn is None:
            raise RuntimeError(RELEASED_MESSAGE)
        region = self._region
        key = (region.reshape(-1),)
        if isinstance(g, Tensor):
            grads = _as_tuple(fn.backward(getitem(g.reshape(-1), (region,))))
            keep = xp_of(g._data).ones(g.shape, g.dtype)
            keep.reshape(-1)[key] = 0
            result = mul_const(g, keep)
            if grads[0] is not None:
                numel = result.numel()
                scattered = IndexAccumulateBackward0.apply(
                    grads[0].reshape(-1), key=key, shape=(numel,)
                )
                result = result + scattered.reshape(g.shape)
            return (result, *grads[1:])
        grads = _as_tuple(fn.backward(g.reshape(-1)[region]))
        result = xp_of(g).array(g, copy=True)
        flat = result.reshape(-1)
        flat[key] = 0 if grads[0] is None else grads[0].reshape(-1)
        return (result, *grads[1:])

    def release_saved(self) -> None:
        """Free `fn` with what it saved; a second backward raises, as PyTorch's does."""
        self._released = True
        if self.fn is not None:
            self.fn.release_saved()
        self.fn = None


def _as_tuple(grads: Any) -> tuple:
    return grads if type(grads) is tuple else (grads,)
