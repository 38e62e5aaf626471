"""Corners of PyTorch's autograd API that careful users hit, each compared with PyTorch's behaviour:
legacy Functions, `vjp`, calling a node, `Tensor.new`, batched `grad`, and gradcheck's options."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd.gradcheck import GradcheckError


def _error(fn) -> tuple[type, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011 - compared with PyTorch's below
        fn()
    return info.type, str(info.value)


# ------------------------------------------------------------------------------ custom Functions
def _legacy(lib):
    class Legacy(lib.autograd.Function):
        def forward(self, x):
            return x * 2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        instance = Legacy()
    return instance(lib.ones(2, requires_grad=True))


def test_a_legacy_function_is_refused_as_pytorch(torch) -> None:
    ours, theirs = _error(lambda: _legacy(aa)), _error(lambda: _legacy(torch))
    assert ours == theirs


def test_instantiating_a_function_warns() -> None:
    class Double(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        Double()


def _vjp_only(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 5

    x = lib.ones(2, dtype=lib.float64, requires_grad=True)
    Scale.apply(x).sum().backward()
    return x.grad


def test_vjp_is_backwards_other_name(torch) -> None:
    np.testing.assert_array_equal(_vjp_only(aa).numpy(), _vjp_only(torch).numpy())


@pytest.mark.parametrize("which", ["neither", "both"])
def test_backward_and_vjp_one_or_the_other(torch, which: str) -> None:
    def run(lib):
        namespace = {"forward": staticmethod(lambda ctx, x: x * 2)}
        if which == "both":
            namespace["backward"] = staticmethod(lambda ctx, g: g)
            namespace["vjp"] = staticmethod(lambda ctx, g: g)
        fn = type("F", (lib.autograd.Function,), namespace)
        fn.apply(lib.ones(2, requires_grad=True)).sum().backward()

    ours, theirs = _error(lambda: run(aa)), _error(lambda: run(torch))
    assert ours[1] == theirs[1]
    assert issubclass(ours[0], RuntimeError | NotImplementedError)


# --------------------------------------------------------------------------------- calling nodes
@pytest.mark.parametrize("count", [0, 2])
def test_a_node_called_with_the_wrong_count_says_so(torch, count: int) -> None:
    def run(lib):
        y = lib.ones(2, requires_grad=True) * 2
        return y.grad_fn(*[lib.ones(2)] * count)

    assert _error(lambda: run(aa)) == _error(lambda: run(torch))


def test_integer_outputs_take_no_gradient_when_a_node_is_called(torch) -> None:
    def node(lib):
        values, _ = lib.tensor([[1.0, 3.0], [4.0, 2.0]], requires_grad=True).max(1)
        return values.grad_fn

    np.testing.assert_array_equal(node(aa)(aa.ones(2)).numpy(), node(torch)(torch.ones(2)))
    twice = [_error(lambda lib=lib: node(lib)(lib.ones(2), lib.ones(2))) for lib in (aa, torch)]
    assert twice[0] == twice[1]


# ------------------------------------------------------------------------------------ Tensor.new
@pytest.mark.parametrize(
    "args",
    [(), (2, 3), (4,), ([1, 2],), ([[1.5, 2], [3, 4]],), (np.array([1, 2]),)],
    ids=["empty", "sizes", "one-size", "list", "nested", "ndarray"],
)
def test_new_as_pytorch(torch, device: str, args: tuple) -> None:
    ours = aa.ones(2, dtype=aa.float64, device=device).new(*args)
    theirs = torch.ones(2, dtype=torch.float64).new(*args)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype == aa.float64 and ours.device == aa.device(device)
    assert not ours.requires_grad
    if args and not isinstance(args[0], int):
        np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())


def test_new_of_a_shape_tuple_is_sizes() -> None:
    x = aa.zeros(2, 3)
    assert x.new(x.shape).shape == (2, 3)


def test_new_of_a_tensor_aliases_it(torch) -> None:
    base = aa.arange(3.0).double()
    alias = aa.ones(1, dtype=aa.float64).new(base)
    assert alias.data_ptr() == base.data_ptr()
    with pytest.raises(TypeError, match="dtype"):
        aa.ones(1, dtype=aa.float64).new(aa.arange(3))


@pytest.mark.parametrize("bad", ["a", 2.5])
def test_new_refuses_what_pytorch_refuses(torch, bad) -> None:
    ours = _error(lambda: aa.ones(2).new(bad))
    theirs = _error(lambda: torch.ones(2).new(bad))
    assert ours == theirs


# -------------------------------------------------------------------------- grad with a batch
def test_is_grads_batched_gives_one_vjp_per_row(torch, device: str) -> None:
    rng = np.random.default_rng(0)
    x_np, rows = rng.standard_normal((3, 4)), rng.standard_normal((5, 3, 2))
    w_np = rng.standard_normal((4, 2))

    def run(lib, **where):
        x = lib.tensor(x_np, requires_grad=True, **where)
        w = lib.tensor(w_np, requires_grad=True, **where)
        y = (x @ w).tanh()
        return lib.autograd.grad(y, (x, w), lib.tensor(rows, **where), is_grads_batched=True)

    ours, theirs = run(aa, device=device), run(torch)
    for a, b in zip(ours, theirs, strict=True):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.cpu().numpy(), b.detach().numpy(), rtol=1e-12)


async def test_is_grads_batched_awaited() -> None:
    x = aa.tensor([1.0, 2.0], dtype=aa.float64, requires_grad=True)
    (g,) = await aa.autograd.grad_async(
        x * x, x, aa.eye(2, dtype=aa.float64), is_grads_batched=True
    )
    np.testing.assert_array_equal(g.numpy(), np.diag([2.0, 4.0]))


def test_is_grads_batched_needs_one_batch_size() -> None:
    x = aa.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="batch"):
        aa.autograd.grad((x * 2, x * 3), x, (aa.ones(3, 2), aa.ones(4, 2)), is_grads_batched=True)


def test_only_inputs_sits_where_pytorch_has_it() -> None:
    x, other = aa.ones(2, requires_grad=True), aa.ones(1, requires_grad=True)
    # outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs, allow_unused
    g, unused = aa.autograd.grad((x * 2).sum(), (x, other), None, None, False, True, True)
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])
    assert unused is None
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        aa.autograd.grad((x * 2).sum(), x, only_inputs=False)


# ------------------------------------------------------------------------------------ gradcheck
def _x(lib):
    return lib.tensor([0.3, -1.2, 2.0], dtype=lib.float64, requires_grad=True)


@pytest.mark.parametrize(
    "options",
    [
        {"check_batched_grad": True},
        {"check_forward_ad": True},
        {"check_backward_ad": False, "check_forward_ad": True},
        {"check_grad_dtypes": True},
        {"fast_mode": True, "check_batched_grad": True},
    ],
    ids=["batched", "forward", "forward-only", "dtypes", "fast-batched"],
)
def test_gradcheck_options_pass_a_right_gradient(torch, options: dict) -> None:
    def f(lib):
        return lambda t: (t.sin() * t, t.exp().sum())

    assert aa.autograd.gradcheck(f(aa), (_x(aa),), **options)
    assert torch.autograd.gradcheck(f(torch), (_x(torch),), **options)


def _wrong(lib):
    class Wrong(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    return Wrong.apply


@pytest.mark.parametrize("options", [{}, {"check_batched_grad": True}, {"fast_mode": True}])
def test_gradcheck_catches_a_wrong_backward(options: dict) -> None:
    with pytest.raises(GradcheckError, match="mismatch"):
        aa.autograd.gradcheck(_wrong(aa), (_x(aa),), **options)
    assert not aa.autograd.gradcheck(_wrong(aa), (_x(aa),), raise_exception=False, **options)


def test_gradcheck_forward_ad_catches_a_wrong_backward() -> None:
    with pytest.raises(GradcheckError, match="forward mode"):
        aa.autograd.gradcheck(_wrong(aa), (_x(aa),), check_backward_ad=False, check_forward_ad=True)


def test_gradcheck_of_a_detached_output_as_pytorch(torch) -> None:
    ours = _error(lambda: aa.autograd.gradcheck(lambda t: t.detach() * 2, (_x(aa),)))
    theirs = _error(lambda: torch.autograd.gradcheck(lambda t: t.detach() * 2, (_x(torch),)))
    assert ours[1] == theirs[1] == "Numerical gradient for function expected to be zero"


def test_gradcheck_of_a_constant_output_passes() -> None:
    assert aa.autograd.gradcheck(lambda t: aa.ones(3, dtype=aa.float64), (_x(aa),))


def test_gradgradcheck_options(torch) -> None:
    fn = lambda t: (t**3).sin()  # noqa: E731
    for lib in (aa, torch):
        assert lib.autograd.gradgradcheck(fn, (_x(lib),), gen_non_contig_grad_outputs=True)
        assert lib.autograd.gradgradcheck(fn, (_x(lib),), check_batched_grad=True)
    assert aa.autograd.gradgradcheck(fn, (_x(aa),), check_fwd_over_rev=True)


# ------------------------------------------------------------------ Functions returning duplicates
def _double_duplicate(lib):
    class DoubleDuplicate(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            output = x * 2
            return output, output

        @staticmethod
        def backward(ctx, grad1, grad2):
            return grad1 * 2 + grad2 * 2

    return DoubleDuplicate


def test_a_tensor_returned_twice_stays_one_tensor(torch) -> None:
    for lib in (aa, torch):
        x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
        a, b = _double_duplicate(lib).apply(x)
        assert a is b
        assert a.output_nr == 1  # the history of its last position, as PyTorch

    def fn(x):
        a, b = _double_duplicate(aa).apply(x)
        return a + b

    x = aa.tensor([0.5, -1.0, 2.0], dtype=aa.float64, requires_grad=True)
    assert aa.autograd.gradcheck(fn, [x])
    assert aa.autograd.gradgradcheck(fn, [x])


def test_a_dirty_view_with_several_outputs_is_refused_as_pytorch(torch) -> None:
    def run(lib):
        class InplaceAndMore(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 * 2

        x = lib.ones(3, 3, dtype=lib.float64, requires_grad=True)
        return InplaceAndMore.apply(x.clone()[0])

    assert _error(lambda: run(aa)) == _error(lambda: run(torch))


def test_anomaly_mode_at_the_top_level(torch) -> None:
    for lib in (aa, torch):
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        lib.set_anomaly_enabled(True)
        try:
            assert lib.is_anomaly_enabled()
        finally:
            lib.set_anomaly_enabled(False)
