"""The base of every differentiable op: the policy shared by all ops lives here, the math in
subclasses.

An op instance is the graph node (`grad_fn`) of its outputs, so recording an op costs one node and
its output tensors. `Op.apply` checks devices, decides which inputs need a gradient, saves tensors
(only those the needed gradients use) with their version, runs the subclass's `forward` on raw
arrays and wraps the results. A subclass writes only `forward(*arrays, **kwargs)` and
`backward(*grads)`; `backward` gets arrays, or Tensors when the engine builds a differentiable
backward (`create_graph=True`), and uses operators and `ops.dual` helpers that work on both.
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

from ..autocast_state import autocast_state
from ..backends.sim_mode import sim_mode_state
from ..batching import batched_op
from ..devices import Device, launching
from ..grad_mode import anomaly_enabled, grad_enabled, inference_enabled
from .graph import Node
from .history import (
    device_mismatch,
    forward_name,
    init_node,
    keep_forward_trace,
    refresh_if_stale,
)
from .recording import ForwardOp, forward_sink
from .saved import PACKED, pack_output, pack_slots, save_packed, unpack_slots, unpacked
from .saved_hooks import hooks_stack
from .stream_checks import check_op_streams
from .tensor import (
    INFERENCE_SAVED_MESSAGE,
    InferenceTensor,
    Tensor,
    mark_inference,
    mark_no_grad_view,
)

_wrap = Tensor._wrap  # bound once: `Op.apply` calls it for every op

#: What `Op.route_autocast` returns for a call that runs as it is.
NOT_ROUTED = object()

RELEASED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


DETACHED_MESSAGE = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is "
    "not supported, please use out-of-place `.detach()` instead"
)


def require_tensor(name: str, value: Any, argument: str = "input", position: int = 1) -> None:
    """PyTorch's TypeError for an argument that is not a Tensor, naming the function.

    Without it a list gets as far as `.ndim` or `._data` and fails with an AttributeError that
    names neither the function nor what it expected.
    """
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
            f"{type(value).__name__}"
        )


def describe(t: Tensor) -> str:
    """A short description of a tensor for error messages: dtype, shape, device."""
    return f"[{t.dtype} tensor of shape {tuple(t.shape)} on {t.device}]"


# Canonical `((shape, dtype),)` tuples: nodes share them instead of each keeping two tuples alive,
# since objects that outlive graph building are what the garbage collector spends its time on.
# A memo of a few thousand distinct shapes; cleared when full so varying shapes cannot grow it.
_META_MEMO: dict[tuple, tuple] = {}
_META_MEMO_LIMIT = 4096


def single_output_meta(out: Any) -> tuple:
    """The shared metadata tuple of a single-output node."""
    key = (out.shape, out.dtype)
    meta = _META_MEMO.get(key)
    if meta is None:
        if len(_META_MEMO) >= _META_MEMO_LIMIT:
            _META_MEMO.clear()
        meta = _META_MEMO[key] = (key,)
    return meta


_NO_GRAD = {n: (False,) * n for n in range(1, 5)}
# Every `needs_input_grad` of up to four inputs, each its own key: recorded nodes share these.
_NEEDS = {needs: needs for n in range(1, 5) for needs in itertools.product((False, True), repeat=n)}


_TORCH_TYPE_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


def torch_type_name(dtype: Any) -> str:
    """A dtype as PyTorch's messages name it: `Float`, `Double`, `Long`."""
    return _TORCH_TYPE_NAMES.get(str(dtype), str(dtype))


def require_kernel_dtype(kernel: str, t: Tensor, kinds: str = "f", also: tuple = ()) -> None:
    """PyTorch's NotImplementedError for a dtype its kernel `kernel` has no version for.

    `kinds` are the NumPy dtype kinds the kernel takes ("f" floats, "fc" with complex), `also`
    names single dtypes beyond them (uint8 for image resampling, int64 for average pooling).
    """
    if t.dtype.kind not in kinds and str(t.dtype) not in also:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_type_name(t.dtype)}'")


def torch_description(t: Tensor) -> str:
    """A tensor as PyTorch's messages show it: `[torch.FloatTensor [2, 3]]` (device if not cpu)."""
    kind = _TORCH_TYPE_NAMES.get(str(t.dtype), str(t.dtype)) + "Tensor"
    where = "" if t.device.type == "cpu" else f"{t.device.type}."
    return f"[torch.{where}{kind} {list(t.shape)}]"


def version_error(t: Tensor, expected: int, maker: Any = None) -> RuntimeError:
    """PyTorch's error for a saved tensor changed in place since it was saved.

    It names the op that made the tensor's current value (the in-place op's, once it ran), or
    `maker`, the node that saved the tensor as its own output: PyTorch keeps no history for a
    saved output and names the node that saved it.
    """
    fn = t.grad_fn if maker is None else maker
    origin = f", which is output {t._output_nr} of {forward_name(fn)}," if fn is not None else ""
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {torch_description(t)}{origin} is at version {t._version}; expected "
        f"version {expected} instead. Hint: enable anomaly detection to find the operation "
        "that failed to compute its gradient, with "
        "autograd_async.autograd.set_detect_anomaly(True)."
    )


def broadcast_error(op_name: str, arrays: Any) -> RuntimeError:
    """PyTorch's error for operands whose shapes do not broadcast, naming the op in a note."""
    shapes = [tuple(a.shape) for a in arrays if hasattr(a, "shape")]
    for i, a in enumerate(shapes):
        for b in shapes[i + 1 :]:
            ndim = max(len(a), len(b))
            for dim in range(ndim - 1, -1, -1):
                offset = ndim - 1 - dim
                size_a = a[len(a) - 1 - offset] if offset < len(a) else 1
                size_b = b[len(b) - 1 - offset] if offset < len(b) else 1
                if size_a != size_b and size_a != 1 and size_b != 1:
                    error = RuntimeError(
                        f"The size of tensor a ({size_a}) must match the size of tensor b "
                        f"({size_b}) at non-singleton dimension {dim}"
                    )
                    error.add_note(f"in {op_name}: shapes {list(a)} and {list(b)}")
                    return error
    return RuntimeError(f"{op_name}: shapes {shapes} cannot be broadcast together")


class Op(Node):
    """A differentiable op and, once applied, the backward node of its outputs."""

    __slots__ = ("needs_input_grad", "_saved", "_saved_data", "_checks", "_out_ref", "_saved_out")

    # Per input, whether its gradient is wanted; set once when the op is recorded.
    needs_input_grad: tuple[bool, ...]
    # The saved inputs (None where `saved_for` left one out), their arrays (or PACKED), and for
    # the in-place checks four entries per saved tensor, one flat tuple: tensor, version owner,
    # version, had a history (a tuple per tensor would be one more object per saved tensor for
    # the garbage collector to visit while the graph lives). The first two are None once released.
    _saved: tuple[Any, ...] | None
    _saved_data: tuple[Any, ...] | None
    _checks: tuple[Any, ...]
    # Output 0 when `saves_output`: a weak reference to check its version, and its array (or
    # what the pack hook made of it).
    _out_ref: weakref.ref[Tensor]
    _saved_out: Any

    # Indices of inputs whose tensors backward needs (checked against in-place changes).
    saved_inputs: ClassVar[tuple[int, ...]] = ()
    # Which gradients need each saved input: `{0: (1,)}` saves input 0 only when input 1 needs a
    # gradient (as PyTorch saves `other` of `self * other` only for the gradient of `self`). An
    # entry left unsaved reads as None in `saved()`. Inputs not in the map are always saved.
    saved_for: ClassVar[dict[int, tuple[int, ...]] | None] = None
    # Whether backward needs output 0 (saved as its array, checked like an input).
    saves_output: ClassVar[bool] = False
    # Own slots holding arrays that backward needs (freed on release, like saved tensors); a
    # backward that reads them calls `check_released()` first, which raises once they are freed.
    # Other slots are metadata (shapes, dims, scalars), kept so that backward can run again.
    saved_slots: ClassVar[tuple[str, ...]] = ()
    # Outputs that never carry a gradient (e.g. indices of max).
    non_differentiable_outputs: ClassVar[tuple[int, ...]] = ()
    # Whether output 0 shares storage with input 0 when the backend returns a view.
    is_view: ClassVar[bool] = False
    # Whether the outputs are several views of input 0 (split, unbind): they refuse in-place
    # changes, as PyTorch's do.
    multi_output_view: ClassVar[bool] = False
    # The name of the op's function, for the profiler's forward records.
    op_name: ClassVar[str] = ""
    # Whether backward may write its result into the gradient array it gets, when the node that
    # feeds it made that array for it alone (`hand_over`); such a class defines `take_handed`.
    takes_handed_grad: ClassVar[bool] = False
    # Defined by the classes that set `takes_handed_grad`: keep `grad` to write the result into.
    take_handed: Callable[[Any], None]
    # `saved_for` compiled: needs_input_grad -> which saved_inputs entries to keep (None: all).
    _save_plans: ClassVar[dict[tuple[bool, ...], tuple[bool, ...]] | None] = None
    # Whether `backward` already gives PyTorch's gradients for complex values (the conjugate
    # Wirtinger derivative: grad * conj(df/dz) for holomorphic f). A rule written with the plain
    # derivative (grad * df/dz, as real rules are) is conjugated around instead, which is exact
    # for holomorphic ops and changes nothing for real ones; non-holomorphic ops (abs, real,
    # angle) and rules written with conjugates set this.
    complex_conjugate_rule: ClassVar[bool] = False

    @staticmethod
    def route_autocast(cls: type[Op], inputs: tuple, kwargs: dict, state: Any) -> Any:
        """Run `cls` on `inputs` under autocast's policy for it, or return NOT_ROUTED.

        The policy (`ops.autocast_policy`) installs itself here: it casts with ops built on
        this class.
        """
        return NOT_ROUTED

    @staticmethod
    def conjugate(x: Any) -> Any:
        """The complex conjugate of a gradient: arrays here; `ops.complex_parts` installs the
        form that records the conjugation for Tensors (double backward)."""
        return x.conj() if x.dtype.kind == "c" else x

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("op_name"):
            cls.op_name = cls.__name__.removesuffix("Backward0").lower()
        saved_for = cls.saved_for
        if saved_for is not None and not set(saved_for) <= set(cls.saved_inputs):
            raise TypeError(f"{cls.__name__}.saved_for names inputs that are not saved_inputs")
        cls._save_plans = {} if saved_for else None
        rule = cls.__dict__.get("backward")
        if rule is not None and not cls.complex_conjugate_rule:
            wrapped = _conjugated_for_complex(rule)
            cls.backward = wrapped  # type: ignore[method-assign]  # the class's own rule, wrapped

    def forward(self, *arrays: Any, **kwargs: Any) -> Any:
        """Compute the outputs from input arrays; store what backward needs in slots."""
        raise NotImplementedError

    def backward(self, *grads: Any) -> Any:
        """Gradients for each input (None where not needed) from the outputs' gradients."""
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs: Any, **kwargs: Any) -> Any:
        """Run the op on tensors (and Python scalars), recording a node when gradients are needed.

        Scalars passed positionally are inputs without an edge, `(None, 0)`; pass a scalar that
        PyTorch keeps off the graph (`x ** 2`, `2 - x`) as a keyword. Under autocast, the op's
        policy (`autocast_policy`) may first cast the inputs.
        """
        autocast = autocast_state.get()
        if autocast is not None and autocast.enabled:
            out = Op.route_autocast(cls, inputs, kwargs, autocast)
            if out is not NOT_ROUTED:
                return out
        dev: Device | None = None
        arrays = []
        needs = []
        requires = False
        for x in inputs:
            if isinstance(x, Tensor):
                if x._vmap_level:  # a tensor batched by vmap: its rule runs the op
                    return batched_op(cls, inputs, kwargs)
                if x._base is not None and x._view_version != x._version_source._ver:
                    refresh_if_stale(x)  # its base changed in place since: regenerate
                where = x.device
                if dev is None:
                    dev = where
                elif where is not dev:
                    raise device_mismatch(cls.op_name, dev, where)
                arrays.append(x._data)
                wants = x._rg
                needs.append(wants)
                if wants:
                    requires = True
            else:
                arrays.append(x)
                needs.append(False)
        if dev is None:
            raise TypeError(f"{cls.op_name}: expected at least one Tensor argument")
        requires = requires and grad_enabled.get()
        if requires and cls.is_view and type(inputs[0]) is InferenceTensor:
            requires = False  # an inference tensor's views have no history, as PyTorch's
        sink = forward_sink.get()
        started = time.perf_counter_ns() if sink is not None else 0
        if requires:
            node = init_node(object.__new__(cls), dev, inputs, needs)
            # One shared tuple per pattern: a node's own copy would be one more object for the
            # garbage collector to visit for as long as the graph lives.
            wanted = tuple(needs)
            node.needs_input_grad = _NEEDS.get(wanted, wanted)
            if cls.saved_inputs or hooks_stack.get():
                node._save_inputs(inputs)
            else:
                node._saved = node._saved_data = node._checks = ()
            if anomaly_enabled.get():
                keep_forward_trace(node)
        else:
            # Not recorded: the instance only runs forward (which may read `device`).
            node = object.__new__(cls)
            node.device = dev
            node.needs_input_grad = _NO_GRAD.get(len(inputs)) or (False,) * len(inputs)
        try:
            if dev._entry is None:  # cpu and plain sim: no current device to enter
                out = node.forward(*arrays, **kwargs)
            else:  # CUDA's rule: the op runs with its device current on this thread
                with launching(dev, cls.op_name):
                    out = node.forward(*arrays, **kwargs)
        except ValueError as exc:  # NumPy's words for a shape mismatch; PyTorch's type and text
            if "could not be broadcast" not in str(exc):
                raise
            raise broadcast_error(cls.op_name, arrays) from None
        if requires and node._saved_data is PACKED:
            pack_slots(node)  # arrays forward kept for backward (a dropout mask) go through too
        if type(out) is tuple or cls.is_view:
            result = node._wrap_outputs(out, inputs, requires)
        elif requires:  # `_wrap_outputs`'s usual case, written out: most ops record this way
            # `node.device`, not `dev`: a transfer's forward moves its node to the target.
            meta = _META_MEMO.get((out.shape, out.dtype))  # `single_output_meta`'s memo, hit
            node._out_meta = single_output_meta(out) if meta is None else meta
            result = _wrap(out, node.device, node, 0, None)
            if cls.saves_output:
                node._save_output(out, result)
        else:
            result = _wrap(out, node.device, None, 0, None)
        if sim_mode_state.mode == "cuda":  # the stream sanitizer sees what the op accessed
            check_op_streams(cls.op_name, inputs, result, cls.is_view)
        if not requires:
            if cls.is_view:
                if type(inputs[0]) is InferenceTensor:
                    mark_inference(result)  # a view of an inference tensor is one
                elif inputs[0]._rg and not grad_enabled.get():
                    # A view of a normal tensor stays normal, even in inference mode (PyTorch's
                    # rule), but remembers that it was made without grad mode.
                    mark_no_grad_view(result, "inference" if inference_enabled.get() else "no_grad")
            elif inference_enabled.get():
                mark_inference(result)  # made in inference mode
        if sink is not None:
            node._record_forward(sink, started, inputs, out, requires)
        return result

    def _save_inputs(self, inputs: tuple) -> None:
        """Keep the inputs backward reads: tensors, their arrays and their versions.

        Tensors serve a differentiable backward, their arrays the usual one; the version counters
        are checked before either is used (`saved`).
        """
        indices = self.saved_inputs
        if hooks_stack.get():
            save_packed(self, inputs, indices)
            return
        if not indices:
            self._saved = self._saved_data = self._checks = ()
            return
        plans = self._save_plans
        if plans is None:
            saved = tuple([inputs[i] for i in indices])
        else:
            keep = plans.get(self.needs_input_grad) or self._save_plan()
            saved = tuple([inputs[i] if k else None for i, k in zip(indices, keep)])
        data = []
        checks: list[Any] = []
        for t in saved:
            if isinstance(t, Tensor):
                if type(t) is InferenceTensor:
                    raise RuntimeError(INFERENCE_SAVED_MESSAGE)
                source = t._version_source
                owner = t if source is None else source
                # Whether it had a history: a saved non-leaf must not be `detach_()`ed since.
                checks += (t, owner, owner._ver, t._grad_fn is not None)
                data.append(t._data)
            else:
                data.append(t)
        self._saved = saved
        # No tensor among them: the arrays are the saved values themselves, one tuple for both
        # (a node's every object is one more for the garbage collector while the graph lives).
        self._saved_data = tuple(data) if checks else saved
        self._checks = tuple(checks)

    def _save_plan(self) -> tuple[bool, ...]:
        """Which saved_inputs entries the gradients this node computes need (cached per class)."""
        need = self.needs_input_grad
        saved_for, plans = self.saved_for, self._save_plans
        if saved_for is None or plans is None:  # `__init_subclass__` makes both or neither
            raise TypeError(f"{type(self).__name__} saves its inputs without a saved_for plan")
        keep = tuple(
            i not in saved_for or any(need[j] for j in saved_for[i]) for i in self.saved_inputs
        )
        plans[need] = keep
        return keep

    def _wrap_outputs(self, out: Any, inputs: tuple, requires: bool) -> Any:
        dev = self.device
        base = None
        if self.is_view and type(inputs[0]) is not InferenceTensor:  # those track no views
            src = inputs[0]
            base = src._base if src._base is not None else src
        if type(out) is not tuple:
            if not requires:
                return Tensor._wrap(out, dev, None, 0, base)
            self._out_meta = single_output_meta(out)
            t = Tensor._wrap(out, dev, self, 0, base)
            if self.saves_output:
                self._save_output(out, t)
            return t
        if not requires:
            return tuple(Tensor._wrap(o, dev, None, 0, base) for o in out)
        self._out_meta = tuple((o.shape, o.dtype) for o in out)
        skip = self.non_differentiable_outputs
        tensors = tuple(
            Tensor._wrap(o, dev, None, 0, base)
            if i in skip
            else Tensor._wrap(o, dev, self, i, base)
            for i, o in enumerate(out)
        )
        if self.saves_output:
            self._save_output(out[0], tensors[0])
        return tensors

    def _save_output(self, array: Any, tensor: Tensor) -> None:
        """Keep output 0 for backward: its array, and a weak reference to check its version."""
        if self._saved_data is PACKED:
            pack_output(self, tensor)
            return
        self._saved_out = array
        self._saved_data = (self._saved_data or ()) + (array,)
        self._out_ref = weakref.ref(tensor)

    def _record_forward(self, sink: Any, started: int, inputs: tuple, out: Any, requires: bool):
        thread = threading.current_thread()
        outs = out if type(out) is tuple else (out,)
        sink.record(
            ForwardOp(
                thread.ident or 0,
                thread.name,
                self.op_name,
                self._seq if requires else -1,
                started,
                time.perf_counter_ns(),
                tuple(tuple(x.shape) for x in inputs if isinstance(x, Tensor)),
                tuple(tuple(o.shape) for o in outs),
            )
        )

    # ------------------------------------------------------------- for backward
    def saved(self, like: Any) -> tuple:
        """The saved inputs (and output last, if saved): arrays, or Tensors when `like` is a Tensor.

        An input that `saved_for` left unsaved is None. Raises once the graph has been freed.
        """
        if self._saved_data is PACKED:
            if self._released:
                raise RuntimeError(RELEASED_MESSAGE)
            return unpacked(self, like)
        data = self._check_saved()
        if not isinstance(like, Tensor):
            return data
        return self._unpack_saved()

    def _check_saved(self) -> tuple[Any, ...]:
        """PyTorch's errors for a freed graph, a saved tensor changed in place or detach_()ed;
        the saved arrays when none applies."""
        data = self._saved_data
        if self._released or data is None:  # released: both
            raise RuntimeError(RELEASED_MESSAGE)
        checks = self._checks
        for i in range(0, len(checks), 4):
            version = checks[i + 2]
            if checks[i + 1]._ver != version:
                self._raise_version_error(checks[i], version)
            if checks[i + 3] and checks[i]._grad_fn is None:  # had a history, has none now
                raise RuntimeError(DETACHED_MESSAGE)
        if self.saves_output:
            out = self._out_ref()
            if out is not None and out._version != 0:
                raise version_error(out, 0, self)
        return data

    def _unpack_saved(self) -> tuple:
        """The saved tensors for a differentiable backward (output last, if saved)."""
        values = list(self._saved or ())  # None only once released, checked before
        if self.saves_output:
            out = self._out_ref()
            values.append(
                out if out is not None else Tensor._wrap(self._saved_out, self.device, self, 0)
            )
        return tuple(values)

    def hand_over(self, index: int, grad: Any) -> None:
        """Mark `grad`, a new array that backward returned for input `index` only, as reusable.

        The node of that input may then write its own result into it instead of a new array (a
        saving of a full pass over fresh memory for elementwise rules); it still checks that
        nothing else can see the gradient there. Not when this node has post-hooks: they see
        the returned gradients and may keep them.
        """
        node = self._edges[2 * index]
        if self._hooks is None and isinstance(node, Op) and node.takes_handed_grad:
            node.take_handed(grad)

    def check_released(self) -> None:
        """Raise PyTorch's error if the graph was freed: for rules that read `saved_slots`."""
        if self._released:
            raise RuntimeError(RELEASED_MESSAGE)
        if self._saved_data is PACKED:
            unpack_slots(self)

    def _raise_version_error(self, t: Tensor, expected: int) -> None:
        raise version_error(t, expected)

    def release_saved(self) -> None:
        """Drop saved tensors and arrays; metadata (shapes, dims, scalars) stays.

        As in PyTorch, only a backward that needs what was freed fails afterwards: `saved()`
        raises, while a node that saved nothing can run again.
        """
        self._released = True
        # The version checks hold the saved tensors too: drop them, so a freed graph keeps no
        # tensor alive (and a node fed by this one can tell that its output is gone).
        self._saved = self._saved_data = None
        self._checks = ()
        if self.saves_output:
            self._saved_out = None
        for name in self.saved_slots:
            setattr(self, name, None)


def _conjugated_for_complex(rule: Any) -> Any:
    """`rule` under PyTorch's complex convention: conj(rule(conj(grads))) when a grad is complex.

    For a rule that multiplies by the plain derivative, this gives grad * conj(df/dz); real
    gradients pass straight through.
    """

    def backward(self: Op, *grads: Any) -> Any:
        for g in grads:  # a plain loop: this runs for every node of every backward
            if g is not None and g.dtype.kind == "c":
                break
        else:
            return rule(self, *grads)
        conj = Op.conjugate
        out = rule(self, *[None if g is None else conj(g) for g in grads])
        if type(out) is tuple:
            return tuple(None if g is None else conj(g) for g in out)
        return None if out is None else conj(out)

    backward.__wrapped__ = rule  # type: ignore[attr-defined]
    backward.__doc__ = rule.__doc__
    backward.__qualname__ = rule.__qualname__
    return backward
