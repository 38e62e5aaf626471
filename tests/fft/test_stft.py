"""stft and istft against PyTorch: values and gradients for each argument, batched and single
signals, round trips, finite differences (first and second order), warnings and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck
from tests.gradients import to_numpy

_RNG = np.random.default_rng(0)
SIGNAL = _RNG.normal(size=(2, 40))
HANN10 = np.hanning(10) + 0.1
HANN8 = np.hanning(8) + 0.1

STFT_CASES = [
    {"n_fft": 8},
    {"n_fft": 8, "hop_length": 3},
    {"n_fft": 12, "win_length": 10, "window": HANN10},
    {"n_fft": 8, "center": False},
    {"n_fft": 8, "normalized": True, "onesided": False},
    {"n_fft": 8, "pad_mode": "constant"},
    {"n_fft": 8, "pad_mode": "replicate", "hop_length": 5},
    {"n_fft": 8, "return_complex": False},
    {"n_fft": 12, "win_length": 10, "window": HANN10, "center": False, "align_to_window": True},
]
ISTFT_CASES = [
    {"n_fft": 8, "window": HANN8},
    {"n_fft": 8, "hop_length": 3, "window": np.ones(8)},
    {"n_fft": 12, "win_length": 10, "window": HANN10},
    {"n_fft": 8, "center": False, "window": HANN8},
    {"n_fft": 8, "normalized": True, "onesided": False, "window": np.ones(8)},
    {"n_fft": 8, "window": np.ones(8), "length": 35},
    {"n_fft": 8, "window": np.ones(8), "length": 45},
]
_STFT_ONLY = ("pad_mode", "return_complex", "align_to_window")


def _run(lib, signal, kwargs, inverse, device=None):
    on = {} if device is None else {"device": device}
    x = lib.tensor(signal, requires_grad=True, **on)
    kwargs = dict(kwargs)
    if "window" in kwargs:
        kwargs["window"] = lib.tensor(kwargs["window"], **on)
    forward = {k: v for k, v in kwargs.items() if k != "length"}
    forward.setdefault("return_complex", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = lib.stft(x, **forward)
    if inverse:
        out = lib.istft(out, **{k: v for k, v in kwargs.items() if k not in _STFT_ONLY})
    real = lib.view_as_real(out) if out.is_complex() else out
    weights = np.random.default_rng(1).normal(size=tuple(real.shape))
    (real * lib.tensor(weights, **on)).sum().backward()
    return real, x.grad


def _compare(torch, device, kwargs, inverse):
    for signal in (SIGNAL, SIGNAL[0]):
        out, grad = _run(aa, signal, kwargs, inverse, device)
        ref, ref_grad = _run(torch, signal, kwargs, inverse)
        assert out.device == aa.device(device)
        assert tuple(out.shape) == tuple(ref.shape)
        np.testing.assert_allclose(to_numpy(out), ref.detach().numpy(), atol=1e-10)
        np.testing.assert_allclose(to_numpy(grad), ref_grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_stft_matches_torch(torch, device, case):
    _compare(torch, device, STFT_CASES[case], inverse=False)


@pytest.mark.parametrize("case", range(len(ISTFT_CASES)))
def test_istft_of_stft_matches_torch(torch, device, case):
    _compare(torch, device, ISTFT_CASES[case], inverse=True)


def test_round_trip_gives_the_signal_back(device):
    x = aa.tensor(SIGNAL, device=device)
    window = aa.hann_window(16, dtype=aa.float64, device=device)
    spectrum = x.stft(16, hop_length=4, window=window, return_complex=True)
    assert tuple(spectrum.shape) == (2, 9, 11) and spectrum.dtype == aa.complex128
    back = spectrum.istft(16, hop_length=4, window=window, length=40)
    np.testing.assert_allclose(to_numpy(back), SIGNAL, atol=1e-12)


def test_finite_differences_first_and_second_order(device):
    window = aa.tensor(HANN8, device=device)

    def spectrum(x):
        return aa.view_as_real(aa.stft(x, 8, hop_length=3, window=window, return_complex=True))

    def round_trip(x):
        s = aa.stft(x, 8, hop_length=2, window=window, return_complex=True)
        return aa.istft(s * s.abs().to(s.dtype), 8, hop_length=2, window=window)

    x = aa.tensor(SIGNAL[:, :20], device=device, requires_grad=True)
    for fn in (spectrum, round_trip):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


def test_warnings_match_torch(torch):
    x = aa.tensor(SIGNAL[0])
    with pytest.warns(UserWarning, match="A window was not provided"):
        aa.stft(x, 8, return_complex=True)
    with pytest.warns(UserWarning, match="stft with return_complex=False is deprecated"):
        assert tuple(aa.stft(x, 8, window=aa.ones(8), return_complex=False).shape) == (5, 21, 2)


ERRORS = [
    (lambda m: m.stft(m.ones(20), 8), "stft requires the return_complex parameter be given"),
    (
        lambda m: m.stft(m.ones(20), 8, hop_length=0, return_complex=True),
        "expected hop_length > 0, but got hop_length=0",
    ),
    (
        lambda m: m.stft(m.ones(20), 8, win_length=9, return_complex=True),
        "expected 0 < win_length <= n_fft, but got win_length=9",
    ),
    (
        lambda m: m.stft(m.ones(20), 8, window=m.ones(7), return_complex=True),
        "expected a 1D window tensor of size equal to win_length=8, but got window with size [7]",
    ),
    (lambda m: m.stft(m.ones(2, 2, 5), 4, return_complex=True), "expected a 1D or 2D tensor"),
    (
        lambda m: m.stft(m.ones(20), 30, center=False, return_complex=True),
        "expected 0 < n_fft < 20, but got n_fft=30",
    ),
    (
        lambda m: m.stft(m.ones(20) + 0j, 8, onesided=True, return_complex=True),
        "Cannot have onesided output if window or input is complex",
    ),
    (
        lambda m: m.istft(m.stft(m.ones(20), 8, return_complex=True), 8, window=m.zeros(8)),
        "window overlap add min",
    ),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(torch, case):
    fn, text = ERRORS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as ours:
            fn(aa)
        with pytest.raises(RuntimeError) as theirs:
            fn(torch)
    assert text in str(ours.value)
    assert text in str(theirs.value)
