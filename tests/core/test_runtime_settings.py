"""Process-wide switches and the default generator's seed and state, as PyTorch's."""

from __future__ import annotations

import threading

import pytest

import autograd_async as aa


@pytest.fixture(autouse=True)
def _restore_settings():
    yield
    aa.use_deterministic_algorithms(False)
    aa.set_float32_matmul_precision("highest")
    aa.set_warn_always(False)


def test_deterministic_switches_like_torch(torch):
    for lib in (aa, torch):
        try:
            assert not lib.are_deterministic_algorithms_enabled()
            lib.set_deterministic_debug_mode("warn")
            assert lib.are_deterministic_algorithms_enabled()
            assert lib.is_deterministic_algorithms_warn_only_enabled()
            assert lib.get_deterministic_debug_mode() == 1
            lib.use_deterministic_algorithms(True)
            assert lib.get_deterministic_debug_mode() == 2
            assert not lib.is_deterministic_algorithms_warn_only_enabled()
            lib.set_deterministic_debug_mode(0)
            assert not lib.are_deterministic_algorithms_enabled()
            with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
                lib.set_deterministic_debug_mode("bad")
            with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 5"):
                lib.set_deterministic_debug_mode(5)
            with pytest.raises(TypeError, match="argument 'mode' \\(position 1\\) must be bool"):
                lib.use_deterministic_algorithms("yes")
        finally:
            lib.use_deterministic_algorithms(False)


def test_a_setting_is_seen_by_other_threads():
    aa.use_deterministic_algorithms(True)
    seen = []
    thread = threading.Thread(target=lambda: seen.append(aa.are_deterministic_algorithms_enabled()))
    thread.start()
    thread.join(timeout=10)
    assert seen == [True]


def test_matmul_precision_and_warn_always_like_torch(torch):
    for lib in (aa, torch):
        try:
            assert lib.get_float32_matmul_precision() == "highest"
            lib.set_float32_matmul_precision("medium")
            assert lib.get_float32_matmul_precision() == "medium"
            with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
                lib.set_float32_matmul_precision("fast")
            assert lib.get_float32_matmul_precision() == "medium"
            assert not lib.is_warn_always_enabled()
            lib.set_warn_always(True)
            assert lib.is_warn_always_enabled()
        finally:
            lib.set_float32_matmul_precision("highest")
            lib.set_warn_always(False)


def test_seed_state_and_initial_seed():
    aa.manual_seed(7)
    assert aa.initial_seed() == 7
    state = aa.get_rng_state()
    first = aa.rand(5).tolist()
    aa.set_rng_state(state)
    assert aa.rand(5).tolist() == first
    fresh = aa.seed()
    assert aa.initial_seed() == fresh and fresh >= 0


def test_typename_and_get_device_like_torch(torch):
    for lib in (aa, torch):
        assert lib.typename(lib.ones(2)) == "torch.FloatTensor"
        assert lib.typename(lib.ones(2, dtype=lib.int64)) == "torch.LongTensor"
        assert lib.typename(3) == "int" and lib.typename(int) == "int"
        assert lib.typename(None) == "NoneType"
        assert lib.get_device(lib.ones(1)) == -1
    assert aa.typename(aa.nn.Linear(1, 1)) == "autograd_async.nn.modules.linear.Linear"
    assert aa.get_device(aa.ones(1, device="sim:0")) == 0
