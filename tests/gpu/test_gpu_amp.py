"""float16 products on the GPU under autocast, and GradScaler's skip on overflow (cuBLAS)."""

from __future__ import annotations

from .amp_checks import check_grad_scaler_skips_inf, check_half_matmuls


def test_float16_matmuls_under_autocast_on_cuda():
    check_half_matmuls("cuda:0", "cuda")


def test_grad_scaler_skips_an_overflowing_step_on_cuda():
    check_grad_scaler_skips_inf("cuda:0", "cuda")
