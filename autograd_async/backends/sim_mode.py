"""Which rules `sim:N` devices follow: "plain" (NumPy arrays with device labels) or "cuda".

In "cuda" mode sim devices follow the CUDA rules that break code on real GPUs: a per-thread current
device, per-device streams and events checked by a stream sanitizer, and cross-device copies of
non-contiguous arrays refused. Chosen once, from AUTOGRAD_ASYNC_SIM or `set_sim_mode` before first
use: arrays and streams made under one set of rules cannot be mixed with the other's.
"""

from __future__ import annotations

import os
import threading

SIM_MODE_ENV = "AUTOGRAD_ASYNC_SIM"
SIM_MODES = ("plain", "cuda")


class SimMode:
    """The mode, fixed at first use so that no array outlives the rules it was made under."""

    def __init__(self) -> None:
        raw = os.environ.get(SIM_MODE_ENV, "").strip().lower() or "plain"
        if raw not in SIM_MODES:
            raise ValueError(f"{SIM_MODE_ENV} must be one of {SIM_MODES}, got {raw!r}")
        self.mode = raw
        self.used = False
        self._lock = threading.Lock()

    def set(self, mode: str) -> None:
        """Choose the mode; refused once a sim device has been used under another mode."""
        if mode not in SIM_MODES:
            raise ValueError(f"sim mode must be one of {SIM_MODES}, got {mode!r}")
        with self._lock:
            if self.used and mode != self.mode:
                raise RuntimeError(
                    f"set_sim_mode({mode!r}) must come before the first use of a sim device; "
                    f"sim devices are already in use in {self.mode!r} mode"
                )
            self.mode = mode

    def get(self, mark_used: bool = False) -> str:
        """The mode in force (and, with `mark_used`, fix it from now on)."""
        if mark_used and not self.used:
            with self._lock:
                self.used = True
        return self.mode


sim_mode_state = SimMode()


def set_sim_mode(mode: str) -> None:
    """Choose "plain" or "cuda" rules for sim devices (before first use; see module docstring)."""
    sim_mode_state.set(mode)


def sim_mode() -> str:
    """The rules sim devices follow: "plain" or "cuda"."""
    return sim_mode_state.get()


def cuda_rules() -> bool:
    """True when sim devices follow CUDA's rules."""
    return sim_mode_state.mode == "cuda"
