"""custom_fwd / custom_bwd for custom Functions, PyTorch's deprecated per-device amp names and
the autocast state functions, against torch on the CPU."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_async as aa

RNG = np.random.default_rng(5)
A = RNG.standard_normal((4, 6)).astype(np.float32)
B = RNG.standard_normal((6, 3)).astype(np.float32)


def _matmul_function(lib, fwd_decorator=None, bwd_decorator=None):
    """A custom matmul whose forward and backward record the autocast state they ran under."""
    seen = {}

    def forward(ctx, a, b):
        seen["fwd"] = (lib.is_autocast_enabled("cpu"), str(a.dtype), str(b.dtype))
        ctx.save_for_backward(a, b)
        return a @ b

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        seen["bwd"] = (lib.is_autocast_enabled("cpu"), str(lib.get_autocast_dtype("cpu")))
        g = g.to(a.dtype)  # the output's gradient comes in the output's dtype
        ga, gb = g @ b.transpose(0, 1), a.transpose(0, 1) @ g
        seen["bwd_dtypes"] = (str(ga.dtype), str(gb.dtype))
        return ga, gb

    if fwd_decorator is not None:
        forward = fwd_decorator(forward)
    if bwd_decorator is not None:
        backward = bwd_decorator(backward)
    cls = type(
        "MyMM",
        (lib.autograd.Function,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward)},
    )
    return cls, seen


def _run(lib, fwd_kwargs, with_bwd, autocast_dtype="bfloat16"):
    fwd = lib.amp.custom_fwd(device_type="cpu", **fwd_kwargs)
    bwd = lib.amp.custom_bwd(device_type="cpu") if with_bwd else None
    fn, seen = _matmul_function(lib, fwd, bwd)
    a = lib.tensor(A, requires_grad=True)
    b = lib.tensor(B, requires_grad=True)
    dtype = getattr(lib, autocast_dtype)
    with lib.autocast("cpu", dtype=dtype):
        out = fn.apply(a, b)
    out.float().sum().backward()
    return {
        "out": (str(out.dtype), out.detach().float().numpy()),
        "grads": (str(a.grad.dtype), a.grad.numpy(), str(b.grad.dtype), b.grad.numpy()),
        "seen": dict(seen),
    }


def _names(result):
    """dtype names without the library's prefix ("torch.float32" -> "float32")."""

    def clean(v):
        if isinstance(v, str):
            return v.replace("torch.", "")
        if isinstance(v, tuple):
            return tuple(clean(x) for x in v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        return v

    return clean(result)


def _assert_same(ours, theirs):
    ours, theirs = _names(ours), _names(theirs)
    assert ours["seen"] == theirs["seen"]
    assert ours["out"][0] == theirs["out"][0]
    np.testing.assert_allclose(ours["out"][1], theirs["out"][1], rtol=2e-2, atol=2e-2)
    assert ours["grads"][0] == theirs["grads"][0] and ours["grads"][2] == theirs["grads"][2]
    np.testing.assert_allclose(ours["grads"][1], theirs["grads"][1], rtol=3e-2, atol=3e-2)
    np.testing.assert_allclose(ours["grads"][3], theirs["grads"][3], rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("with_bwd", [False, True])
def test_custom_fwd_keeps_the_autocast_state_like_torch(torch, with_bwd):
    ours = _run(aa, {}, with_bwd)
    theirs = _run(torch, {}, with_bwd)
    _assert_same(ours, theirs)
    # forward ran under autocast; backward runs under it only through custom_bwd
    assert ours["seen"]["fwd"][0] is True
    assert ours["seen"]["bwd"][0] is with_bwd


@pytest.mark.parametrize("cast", ["float32", "bfloat16"])
def test_custom_fwd_cast_inputs_casts_and_disables_autocast_like_torch(torch, cast):
    ours = _run(aa, {"cast_inputs": getattr(aa, cast)}, True)
    theirs = _run(torch, {"cast_inputs": getattr(torch, cast)}, True)
    _assert_same(ours, theirs)
    assert ours["seen"]["fwd"] == (False, cast, cast)
    assert ours["seen"]["bwd"][0] is False  # forward ran with autocast off: so does backward


def test_custom_fwd_outside_autocast_changes_nothing(torch):
    for lib in (aa, torch):
        fn, seen = _matmul_function(
            lib,
            lib.amp.custom_fwd(device_type="cpu", cast_inputs=lib.bfloat16),
            lib.amp.custom_bwd(device_type="cpu"),
        )
        a = lib.tensor(A, requires_grad=True)
        out = fn.apply(a, lib.tensor(B))
        out.sum().backward()
        assert str(out.dtype).replace("torch.", "") == "float32"
        assert seen["fwd"] == (False, str(a.dtype), str(a.dtype))


def test_custom_fwd_and_bwd_without_parentheses_and_bad_device_type(torch):
    for lib in (aa, torch):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.amp.custom_fwd(device_type=None)
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.amp.custom_bwd(device_type=1)


def test_cast_floating_walks_containers_like_torch(torch):
    from torch.amp.autocast_mode import _cast

    from autograd_async.amp.custom_functions import cast_floating

    def build(lib):
        f32 = lib.ones(2)
        return {
            "a": [f32, lib.ones(2, dtype=lib.float64), lib.ones(2, dtype=lib.int64)],
            "b": (f32, "text", 3),
            "c": np.ones(2, np.float32),
        }

    ours = cast_floating(build(aa), "cpu", aa.bfloat16)
    theirs = _cast(build(torch), "cpu", torch.bfloat16)
    assert [str(t.dtype) for t in ours["a"]] == [
        str(t.dtype).replace("torch.", "") for t in theirs["a"]
    ]
    assert str(ours["b"][0].dtype) == "bfloat16" and ours["b"][1:] == ("text", 3)
    assert ours["c"].dtype == np.float32 and type(theirs["b"]) is tuple
    assert cast_floating(aa.ones(2), "cuda", aa.bfloat16).dtype == aa.float32  # other device


def _future_warning(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    messages = [str(w.message) for w in caught if w.category is FutureWarning]
    assert len(messages) == 1, messages
    return value, messages[0]


def test_deprecated_per_device_amp_names_warn_like_torch(torch):
    cases = [
        (lambda lib: lib.cpu.amp.autocast(), "cpu autocast"),
        (lambda lib: lib.cuda.amp.autocast(enabled=False), "cuda autocast"),
        (lambda lib: lib.cuda.amp.GradScaler(enabled=False), "cuda scaler"),
        (lambda lib: lib.cpu.amp.GradScaler(enabled=False), "cpu scaler"),
        (lambda lib: lib.cuda.amp.custom_fwd(lambda ctx, x: x), "custom_fwd"),
        (lambda lib: lib.cuda.amp.custom_bwd(lambda ctx, g: g), "custom_bwd"),
    ]
    for make, what in cases:
        _, ours = _future_warning(lambda make=make: make(aa))
        _, theirs = _future_warning(lambda make=make: make(torch))
        assert ours == theirs, what


def test_deprecated_cpu_autocast_is_amp_autocast_on_cpu(torch):
    for lib in (aa, torch):
        region, _ = _future_warning(lambda lib=lib: lib.cpu.amp.autocast())
        with region:
            assert lib.is_autocast_enabled("cpu")
            assert str(lib.get_autocast_dtype("cpu")).endswith("bfloat16")
            out = lib.tensor(A) @ lib.tensor(B)
        assert str(out.dtype).endswith("bfloat16")
        assert not lib.is_autocast_enabled("cpu")
        region, _ = _future_warning(lambda lib=lib: lib.cuda.amp.autocast(enabled=False))
        assert region.device == "cuda"


def test_deprecated_cpu_autocast_as_decorator(torch):
    for lib in (aa, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)

            @lib.cpu.amp.autocast()
            def inside(lib=lib):
                return lib.is_autocast_enabled("cpu")

        assert inside() is True
        assert not lib.is_autocast_enabled("cpu")


def test_deprecated_cuda_grad_scaler_is_amp_grad_scaler(torch):
    scaler, _ = _future_warning(lambda: aa.cuda.amp.GradScaler(enabled=False))
    assert isinstance(scaler, aa.amp.GradScaler)
    assert not scaler.is_enabled()
    scaler, _ = _future_warning(lambda: aa.cpu.amp.GradScaler(init_scale=8.0))
    assert scaler.get_scale() == 8.0


def test_autocast_state_functions_like_torch(torch):
    for lib in (aa, torch):
        assert lib.is_autocast_enabled() is False
        assert lib.amp.is_autocast_available("cpu") is True
        assert str(lib.get_autocast_dtype("cpu")).endswith("bfloat16")
        assert str(lib.get_autocast_dtype("cuda")).endswith("float16")
        with lib.autocast("cpu"):
            assert lib.is_autocast_enabled("cpu") and not lib.is_autocast_enabled()
        lib.set_autocast_enabled(True)  # the old one-argument form: cuda
        try:
            assert lib.is_autocast_enabled("cuda") and lib.is_autocast_enabled()
        finally:
            lib.set_autocast_enabled(False)
        lib.set_autocast_enabled("cpu", True)
        try:
            assert lib.is_autocast_enabled("cpu")
        finally:
            lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_dtype("cpu", lib.float16)
        try:
            assert str(lib.get_autocast_dtype("cpu")).endswith("float16")
        finally:
            lib.set_autocast_dtype("cpu", lib.bfloat16)
        with pytest.raises(TypeError):
            lib.get_autocast_dtype()


def test_deprecated_per_device_state_functions_warn_like_torch(torch):
    def calls(lib):
        return [
            lambda: lib.is_autocast_cpu_enabled(),
            lambda: lib.get_autocast_cpu_dtype(),
            lambda: lib.get_autocast_gpu_dtype(),
            lambda: lib.set_autocast_cpu_enabled(False),
            lambda: lib.set_autocast_cpu_dtype(lib.bfloat16),
            lambda: lib.set_autocast_gpu_dtype(lib.float16),
        ]

    for ours_call, theirs_call in zip(calls(aa), calls(torch), strict=True):
        with warnings.catch_warnings(record=True) as mine:
            warnings.simplefilter("always")
            ours = ours_call()
        with warnings.catch_warnings(record=True) as ref:
            warnings.simplefilter("always")
            theirs = theirs_call()
        assert str(ours).replace("torch.", "") == str(theirs).replace("torch.", "")
        assert [w.category for w in mine] == [DeprecationWarning]
        assert str(ref[0].message).startswith(str(mine[0].message))
