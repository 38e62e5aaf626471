"""stft and istft with PyTorch's arguments, built from differentiable ops (padding, unfold, the
FFT ops, fold), so gradients and double backward come from those ops' rules.

stft: pad the signal by n_fft // 2 at each end (`center`), cut frames of n_fft every hop_length
samples, weigh each by the window (padded to n_fft in the middle) and transform it. istft undoes
it by overlap-add, dividing by the summed squared window (the NOLA condition).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ..core.op import require_tensor, torch_description
from ..core.tensor import Tensor
from ..creation import ones
from .complex_parts import imag, real
from .complex_views import _complex_dtype, view_as_real
from .complex_views import complex as make_complex
from .conv import fold
from .fft import c2c, c2r, r2c
from .sampling import pad

NO_WINDOW_WARNING = (
    "A window was not provided. A rectangular window will be applied,which is known to cause "
    "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
    "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
    "window, explicitly set `window=torch.ones(n_fft, device=<device>)`."
)
REAL_OUTPUT_WARNING = (
    "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
    "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
    "Note: you can still call torch.view_as_real on the complex output to recover the old "
    "return format."
)


def _call(
    name: str, input: Tensor, n_fft: int, hop: int, win: int, window: Any, **flags: Any
) -> str:
    """The call as PyTorch's stft/istft errors show it."""
    shown = "None" if window is None else f"{torch_description(window)[1:-1]}"
    text = ", ".join(f"{k}={'None' if v is None else int(v)}" for k, v in flags.items())
    return (
        f"{name}({torch_description(input)[1:-1]}, n_fft={n_fft}, hop_length={hop}, "
        f"win_length={win}, window={shown}, {text})"
    )


def _full_window(window: Tensor | None, n_fft: int, win: int, like: Tensor) -> Tensor:
    """The window padded with zeros to n_fft, centred (ones of win_length when none)."""

    if window is None:
        window = ones(
            win, dtype=like.real.dtype if like.is_complex() else like.dtype, device=like.device
        )
    left = (n_fft - win) // 2
    if left or n_fft - win - left:
        window = pad(window, (left, n_fft - win - left))
    return window


def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
) -> Tensor:
    """The short-time Fourier transform of a signal (L,) or batch (B, L): (B?, bins, frames)."""
    require_tensor("stft", input)
    complex_case = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_case:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release."
            )
        return_complex = True
    if align_to_window is not None and center:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if center:
        signal_dim = input.ndim
        extended = (1,) * (3 - signal_dim) + tuple(input.shape)
        half = n_fft // 2
        input = pad(input.reshape(extended), (half, half), pad_mode)
        input = input.reshape(tuple(input.shape)[3 - signal_dim :])
    call = _call(
        "stft",
        input,
        n_fft,
        hop,
        win,
        window,
        normalized=normalized,
        onesided=onesided,
        return_complex=return_complex,
        align_to_window=align_to_window,
    )
    if window is None:
        warnings.warn(NO_WINDOW_WARNING, UserWarning, stacklevel=2)
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{call} : expected a 1D or 2D tensor")
    length = input.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"{call} : expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{call} : expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{call} : expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(
            f"{call} : expected a 1D window tensor of size equal to win_length={win}, but got "
            f"window with size {list(window.shape)}"
        )
    if onesided is None:
        onesided = not complex_case
    elif onesided and complex_case:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    batched = input if input.ndim == 2 else input.unsqueeze(0)
    if align_to_window and win < n_fft:
        # Frames start where their window starts: the window's zero margins may reach past
        # the signal's ends, where they meet zeros.
        left = (n_fft - win) // 2
        batched = pad(batched, (left, n_fft - win - left))
    frames = batched.unfold(-1, n_fft, hop)  # (B, frames, n_fft)
    frames = frames * _full_window(window, n_fft, win, input)
    norm = "ortho" if normalized else "backward"
    if onesided:
        spectrum = r2c(frames, (2,), (n_fft,), norm)
    else:
        if not frames.is_complex():
            frames = frames.to(dtype=_complex_of(frames))
        spectrum = c2c(frames, (2,), (n_fft,), norm, True)
    out = spectrum.transpose(1, 2)
    if input.ndim == 1:
        out = out.squeeze(0)
    if not return_complex:
        warnings.warn(REAL_OUTPUT_WARNING, UserWarning, stacklevel=2)
        return view_as_real(out)
    return out


def _complex_of(t: Tensor) -> Any:
    return _complex_dtype(t.dtype)


def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """The inverse of `stft` by overlap-add: a signal (B?, L) from a complex (B?, bins, frames)."""
    require_tensor("istft", input)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    call = _call(
        "istft",
        input,
        n_fft,
        hop,
        win,
        window,
        center=center,
        normalized=normalized,
        onesided=onesided,
        length=length,
        return_complex=return_complex,
    )
    if not input.is_complex():
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            "return_complex=True."
        )
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{call}: expected a tensor with 2 or 3 dimensions of complex dtype")
    batched = input if input.ndim == 3 else input.unsqueeze(0)
    bins, n_frames = batched.shape[-2], batched.shape[-1]
    if onesided is None:
        onesided = bins != n_fft
    if onesided and n_fft // 2 + 1 != bins:
        raise RuntimeError(
            f"{call}: expected the frequency dimension (3rd to the last) of the input tensor to "
            f"match n_fft / 2 + 1 when onesided=True, but got {bins}"
        )
    if not onesided and bins != n_fft:
        raise RuntimeError(
            f"{call}: expected the frequency dimension (3rd to the last) of the input tensor to "
            f"match n_fft when onesided=False, but got {bins}"
        )
    if not (0 < hop <= win):
        raise RuntimeError(f"{call}: expected 0 < hop_length <= win_length")
    if not (0 < win <= n_fft):
        raise RuntimeError(f"{call}: expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(
            f"{call}: Invalid window shape. window has to be 1D and length of `win_length`"
        )
    full_window = _full_window(window, n_fft, win, input)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = c2c(batched, (1,), (n_fft,), norm, False)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            batched = batched[:, : n_fft // 2 + 1]
        frames = c2r(batched, (1,), (n_fft,), norm)
    frames = frames * full_window.reshape(1, -1, 1)  # (B, n_fft, frames)
    expected = n_fft + hop * (n_frames - 1)
    signal = _overlap_add(frames, expected, n_fft, hop)
    squares = (
        full_window * full_window.conj() if full_window.is_complex() else full_window * full_window
    )
    envelope = _overlap_add(
        squares.reshape(1, -1, 1).expand(1, n_fft, n_frames), expected, n_fft, hop
    )
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = expected - n_fft // 2 if center else expected
    signal = signal[:, start : min(end, expected)]
    envelope = envelope[:, start : min(end, expected)]
    smallest = envelope.abs().min().item() if envelope.numel() else math.inf
    if smallest < 1e-11:
        raise RuntimeError(f"{call} window overlap add min: {smallest:g}")
    signal = signal / envelope
    if input.ndim == 2:
        signal = signal.squeeze(0)
    if end > expected:
        signal = pad(signal, (0, end - expected))
    return signal


def _overlap_add(frames: Tensor, total: int, n_fft: int, hop: int) -> Tensor:
    """Frames (B, n_fft, F) summed into signals (B, total), frame f starting at f * hop."""
    if frames.is_complex():
        return make_complex(
            _overlap_add(real(frames), total, n_fft, hop),
            _overlap_add(imag(frames), total, n_fft, hop),
        )
    out = fold(frames, (1, total), (1, n_fft), stride=(1, hop))
    return out.reshape(frames.shape[0], total)


FUNCTIONS = {"stft": stft, "istft": istft}
