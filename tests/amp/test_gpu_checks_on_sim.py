"""The GPU's mixed-precision checks (tests/gpu/test_gpu_amp.py) rehearsed on a sim device, so
that they are known to be right before a GPU runs them."""

from __future__ import annotations

from tests.gpu.amp_checks import check_grad_scaler_skips_inf, check_half_matmuls


def test_float16_matmuls_under_autocast_on_sim():
    check_half_matmuls("sim:0", "sim")


def test_grad_scaler_skips_an_overflowing_step_on_sim():
    check_grad_scaler_skips_inf("sim:0", "sim")
