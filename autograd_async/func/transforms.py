"""`grad`, `grad_and_value`, `vjp`, `jvp`, `linearize`, `jacrev`, `jacfwd` and `hessian`.

Each runs the function on fresh inputs that require grad and asks the engine for gradients
(`autograd.grad`). Under `vmap` an input is broadcast over every active batch first, so that
its gradient comes out per example. Inside another transform (or with inputs that require grad)
the gradients are computed with `create_graph=True`, so the outer transform differentiates them.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any

from ..autograd.api import grad as autograd_grad
from ..batching import vmap_levels
from ..core.tensor import Tensor
from ..creation import ones_like, zeros_like
from ..grad_mode import enable_grad
from ..ops.shape import stack
from .batched import BatchedTensor, batched, level_size, physical
from .dispatch import per_example
from .pytree import tree_flatten, tree_map, tree_unflatten

# How many transforms that differentiate are running around this point.
_depth: contextvars.ContextVar[int] = contextvars.ContextVar("autograd_async_func_depth", default=0)


def _levels_of(x: Tensor) -> list[int]:
    levels = []
    while isinstance(x, BatchedTensor):
        levels.append(x._vmap_level)
        x = x.value
    return levels[::-1]  # outermost level (lowest number) first, as the physical dims


def _lifted(x: Tensor, levels: list[int] | None = None) -> tuple[Tensor, list[int]]:
    """The physical tensor of `x` broadcast over vmap `levels` (default: every active one)."""
    if levels is None:
        levels = [v.level for v in vmap_levels.get()]
    have = _levels_of(x)
    p = physical(x)
    if have == levels:
        return p, have
    logical = tuple(p.shape[len(have) :])
    shape, sizes = [], []
    for level in levels:
        if level in have:
            n = p.shape[have.index(level)]
            shape.append(n)
        else:
            shape.append(1)
            n = level_size(level)
        sizes.append(n)
    p = p.reshape(tuple(shape) + logical).expand(tuple(sizes) + logical)
    return p, list(levels)


def _rewrap(p: Tensor, levels: list[int]) -> Tensor:
    for level in levels:
        p = batched(p, level)
    return p


class _Input:
    """One differentiated input: what the function sees and what the engine differentiates."""

    __slots__ = ("leaf", "levels", "seen")

    def __init__(self, x: Any) -> None:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
        p, self.levels = _lifted(x)
        if p.requires_grad:  # an outer transform differentiates through: an alias keeps the path
            self.leaf = p.view_as(p)
        else:
            self.leaf = Tensor._wrap(p._data, p.device).requires_grad_(True)
        self.seen = _rewrap(self.leaf, self.levels)

    def result(self, g: Tensor | None) -> Tensor:
        """A gradient for this input, batched as the input is seen."""
        if g is None:
            g = zeros_like(self.leaf)
        return _rewrap(g, self.levels)


def _check_argnums(argnums: Any, count: int) -> tuple[int, ...]:
    many = isinstance(argnums, tuple)
    nums = argnums if many else (argnums,)
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(n)}")
        if not -count <= n < count:
            raise RuntimeError(f"Got argnum={n}, but only {count} positional inputs")
    normal = tuple(n % count for n in nums)
    if len(set(normal)) != len(normal):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return normal


def _create_graph(values: list) -> bool:
    """Whether the gradients must be differentiable: inside a transform, or inputs that need it."""
    return _depth.get() > 0 or any(isinstance(v, Tensor) and v.requires_grad for v in values)


def _engine_grad(outputs: list, inputs: list[_Input], cotangents: list, create: bool) -> list:
    # Outputs and cotangents broadcast over the vmaps the inputs were made under, as they are.
    levels = inputs[0].levels if inputs else None
    grads = autograd_grad(
        [_lifted(o, levels)[0] for o in outputs],
        [i.leaf for i in inputs],
        [_lifted(c, levels)[0] for c in cotangents],
        retain_graph=True,
        create_graph=create,
        allow_unused=True,
    )
    return [i.result(g if create or g is None else g.detach()) for i, g in zip(inputs, grads)]


def _prepare(args: tuple, argnums: tuple[int, ...]) -> tuple[list, list[_Input], list, Any]:
    """The call's arguments with the differentiated ones replaced by fresh inputs."""
    new_args = list(args)
    inputs: list[_Input] = []
    specs = []
    for n in argnums:
        leaves, spec = tree_flatten(args[n])
        made = [_Input(x) for x in leaves]
        inputs.extend(made)
        specs.append((spec, len(made)))
        new_args[n] = tree_unflatten([m.seen for m in made], spec)
    return new_args, inputs, specs, None


def _regroup(grads: list, specs: list, many: bool) -> Any:
    out, start = [], 0
    for spec, count in specs:
        out.append(tree_unflatten(grads[start : start + count], spec))
        start += count
    return tuple(out) if many else out[0]


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """`func`'s gradient with respect to the inputs `argnums`, and its value."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _check_argnums(argnums, len(args))
        create = _create_graph(tree_flatten(args)[0])
        with enable_grad():
            token = _depth.set(_depth.get() + 1)
            try:
                new_args, inputs, specs, _ = _prepare(args, nums)
                out = func(*new_args, **kwargs)
            finally:
                _depth.reset(token)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(
                        "grad_and_value(f)(*args): output of function f should be a tuple: "
                        "(output, aux) if has_aux is True"
                    )
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(
                    f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                    f"{type(out)}"
                )
            if out.ndim != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                    f"tensor with {out.ndim} dims. Maybe you wanted to use the vjp or jacrev "
                    "APIs instead?"
                )
            create = create or _depth.get() > 0
            grads = _engine_grad([out], inputs, [ones_like(out)], create)
        value = out if create else out.detach()
        result = _regroup(grads, specs, isinstance(argnums, tuple))
        if has_aux:
            return result, (value, _detached(aux, create))
        return result, value

    return wrapper


def _detached(tree: Any, create: bool) -> Any:
    if create:
        return tree
    return tree_map(lambda x: x.detach() if isinstance(x, Tensor) else x, tree)


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """The gradient of scalar-valued `func` with respect to its inputs `argnums`."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, value = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """`func(*primals)` and a function of cotangents that gives the vector-Jacobian products."""
    create = _create_graph(tree_flatten(primals)[0])
    with enable_grad():
        token = _depth.set(_depth.get() + 1)
        try:
            new_args, inputs, specs, _ = _prepare(primals, tuple(range(len(primals))))
            out = func(*new_args)
        finally:
            _depth.reset(token)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError(
                "vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                "has_aux is True"
            )
        out, aux = out
    out_leaves, out_spec = tree_flatten(out)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(
                f"vjp(f, *primals): Expected f(*primals) to return only tensors, got unsupported "
                f"type {type(o)}"
            )

    made_under = {v.level for v in vmap_levels.get()}

    def vjp_fn(cotangents: Any) -> tuple:
        cts, ct_spec = tree_flatten(cotangents)
        newer = [
            lv for c in cts if isinstance(c, Tensor) for lv in _levels_of(c) if lv not in made_under
        ]
        if newer:  # cotangents batched by a vmap entered since: one product per example
            flat_spec: list = []

            def one(*picked: Any) -> tuple:
                grads = vjp_fn(tree_unflatten(list(picked), ct_spec))
                leaves, spec = tree_flatten(grads)
                flat_spec[:] = [spec]
                return tuple(leaves)

            stacked = per_example("vjp", one, max(newer), tuple(cts), warn=False)
            return tree_unflatten(list(stacked), flat_spec[0])
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}"
            )
        for o, c in zip(out_leaves, cts):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[0] has a shape of {list(c.shape)} and "
                    f"output[0] has a shape of {list(o.shape)}."
                )
        make = create or _depth.get() > 0 or any(c.requires_grad for c in cts)
        with enable_grad():
            grads = _engine_grad(out_leaves, inputs, cts, make)
        return tuple(
            tree_unflatten(grads[s : s + n], spec) for (spec, n), s in zip(specs, _starts(specs))
        )

    value = tree_map(lambda x: x if create else x.detach(), out)
    if has_aux:
        return value, vjp_fn, _detached(aux, create)
    return value, vjp_fn


def _starts(specs: list) -> list[int]:
    starts, at = [], 0
    for _, n in specs:
        starts.append(at)
        at += n
    return starts


class _ForwardProducts:
    """`func(*primals)` run once, with the graph of u -> Jᵀu kept: Jacobian-vector products for
    any tangents then cost one reverse pass each (u -> Jᵀu is linear; its vjp with t is J·t)."""

    def __init__(self, func: Callable, primals: tuple, has_aux: bool) -> None:
        self.create = _create_graph(tree_flatten(primals)[0])
        with enable_grad():
            token = _depth.set(_depth.get() + 1)
            try:
                new_args, inputs, _, _ = _prepare(primals, tuple(range(len(primals))))
                out = func(*new_args)
                self.aux = None
                if has_aux:
                    out, self.aux = out
                outs, self.out_spec = tree_flatten(out)
                self.dummies = [_Input(zeros_like(o)) for o in outs]
                self.vjps = _engine_grad(outs, inputs, [d.seen for d in self.dummies], True)
            finally:
                _depth.reset(token)
        self.out = out

    def value(self, make: bool) -> Any:
        """The function's output (detached unless the products are differentiated)."""
        return tree_map(lambda x: x if make else x.detach(), self.out)

    def __call__(self, tangents: list) -> tuple[list, bool]:
        """J·t for flat tangents, one per input, and whether it is differentiable."""
        make = (
            self.create
            or _depth.get() > 0
            or any(isinstance(t, Tensor) and t.requires_grad for t in tangents)
        )
        with enable_grad():
            pairs = [(v, t) for v, t in zip(self.vjps, tangents) if physical(v).requires_grad]
            if pairs:
                results = _engine_grad(
                    [v for v, _ in pairs], self.dummies, [t for _, t in pairs], make
                )
            else:
                results = [d.result(None) for d in self.dummies]
        return results, make


def jvp(
    func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False
) -> tuple:
    """`func(*primals)` and the Jacobian-vector product with `tangents` (forward mode, computed
    as the transpose of a vector-Jacobian product)."""
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
            "should be valid to call f(*primals)."
        )
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the "
            "same python structure."
        )
    products = _ForwardProducts(func, primals, has_aux)
    results, make = products(tree_flatten(tangents)[0])
    value = products.value(make)
    tangent_out = tree_unflatten(results, products.out_spec)
    if has_aux:
        return value, tangent_out, _detached(products.aux, make)
    return value, tangent_out


def linearize(func: Callable, *primals: Any) -> tuple:
    """`func(*primals)` and a function that gives its Jacobian-vector product with tangents,
    without running `func` again."""
    products = _ForwardProducts(func, primals, False)

    def jvp_fn(*tangents: Any) -> Any:
        results, _ = products(tree_flatten(tangents)[0])
        return tree_unflatten(results, products.out_spec)

    return products.value(products.create), jvp_fn


def _basis(like: Tensor) -> list[Tensor]:
    """One-hot tensors shaped like `like`, one per element."""
    count = like.numel()
    eye = physical(zeros_like(like)).reshape((-1,))
    out = []
    for i in range(count):
        e = zeros_like(eye)
        e[i] = 1
        out.append(e.reshape(tuple(like.shape)))
    return out


def jacrev(
    func: Callable, argnums: Any = 0, *, has_aux: bool = False, chunk_size: int | None = None
) -> Callable:
    """The Jacobian of `func` with respect to inputs `argnums`, one reverse pass per output
    element."""

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        nums = _check_argnums(argnums, len(args))
        primals = tuple(args[n] for n in nums)

        def partial(*picked: Any) -> Any:
            full = list(args)
            for n, p in zip(nums, picked):
                full[n] = p
            return func(*full)

        result = vjp(partial, *primals, has_aux=has_aux)
        out, vjp_fn = result[0], result[1]
        outs, out_spec = tree_flatten(out)
        in_leaves = tree_flatten(primals)[0]
        per_output = []
        for k, o in enumerate(outs):
            rows = []
            for e in _basis(o):
                cts = [e if j == k else zeros_like(q) for j, q in enumerate(outs)]
                rows.append(tree_flatten(vjp_fn(tree_unflatten(cts, out_spec)))[0])
            jac = []
            for i, x in enumerate(in_leaves):
                if rows:
                    stacked = stack([r[i] for r in rows])
                else:
                    stacked = zeros_like(x).reshape((0,) + tuple(x.shape))
                jac.append(stacked.reshape(tuple(o.shape) + tuple(x.shape)))
            per_output.append(_group_inputs(jac, primals, argnums))
        jac_tree = tree_unflatten(per_output, out_spec)
        return (jac_tree, result[2]) if has_aux else jac_tree

    return wrapper


def _group_inputs(jac: list, primals: tuple, argnums: Any) -> Any:
    out, at = [], 0
    for p in primals:
        leaves, spec = tree_flatten(p)
        out.append(tree_unflatten(jac[at : at + len(leaves)], spec))
        at += len(leaves)
    return tuple(out) if isinstance(argnums, tuple) else out[0]


def jacfwd(
    func: Callable,
    argnums: Any = 0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
    chunk_size: int | None = None,
) -> Callable:
    """The Jacobian of `func` with respect to inputs `argnums`, one forward product per input
    element."""

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        nums = _check_argnums(argnums, len(args))
        primals = tuple(args[n] for n in nums)

        def partial(*picked: Any) -> Any:
            full = list(args)
            for n, p in zip(nums, picked):
                full[n] = p
            return func(*full)

        in_leaves = tree_flatten(primals)[0]
        products = _ForwardProducts(partial, primals, has_aux)
        outs, out_spec, aux = tree_flatten(products.out)[0], products.out_spec, products.aux
        columns: list[list] = []
        make = False
        for i, x in enumerate(in_leaves):
            cols = []
            for e in _basis(x):
                tans = [e if j == i else zeros_like(q) for j, q in enumerate(in_leaves)]
                results, make = products(tans)
                cols.append(results)
            columns.append(cols)
        aux = _detached(aux, make) if has_aux else None
        per_output = []
        for k, o in enumerate(outs):
            jac = []
            for i, x in enumerate(in_leaves):
                cols = columns[i]
                if cols:
                    stacked = stack([c[k] for c in cols], dim=-1)
                else:
                    stacked = zeros_like(o).unsqueeze(-1)[..., :0]
                jac.append(stacked.reshape(tuple(o.shape) + tuple(x.shape)))
            per_output.append(_group_inputs(jac, primals, argnums))
        jac_tree = tree_unflatten(per_output, out_spec)
        return (jac_tree, aux) if has_aux else jac_tree

    return wrapper


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """The Hessian of scalar-valued `func` with respect to inputs `argnums` (the Jacobian of its
    gradient: one reverse pass per input element through the gradient's graph)."""
    return jacrev(jacrev(func, argnums), argnums)
