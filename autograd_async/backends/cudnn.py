"""PyTorch's `torch.backends.cudnn` switches, so training scripts that set them run unchanged.

No kernel here comes from cuDNN (convolutions are NumPy/CuPy matrix products), so the switches
are recorded but change nothing: `benchmark` has no algorithms to choose among, and results are
already deterministic for a given device and input.
"""

from __future__ import annotations

__all__ = ["allow_tf32", "benchmark", "deterministic", "enabled", "is_available", "version"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: no kernel of this library runs through cuDNN."""
    return False


def version() -> None:
    """None: cuDNN is not used."""
    return None
