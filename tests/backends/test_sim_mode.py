"""The sim mode switch: chosen before the first use of a sim device, fixed afterwards."""

from __future__ import annotations

import pytest

import autograd_async as aa

from .helpers import run_json

SWITCH = r"""
import json
import os

os.environ.pop("AUTOGRAD_ASYNC_SIM", None)
import autograd_async as aa

results = {"initial": aa.sim_mode()}
aa.set_sim_mode("cuda")
x = aa.ones(2, device="sim:1")
results["after_use"] = aa.sim_mode()
try:
    aa.set_sim_mode("plain")
    results["switch_back"] = "allowed"
except RuntimeError as exc:
    results["switch_back"] = str(exc)
results["sum"] = (x * 2).sum().item()
print(json.dumps(results))
"""


def test_set_sim_mode_before_first_use_then_fixed():
    got = run_json(SWITCH)
    assert got["after_use"] == "cuda" and got["sum"] == 4.0
    assert "must come before the first use of a sim device" in got["switch_back"]


def test_this_process_uses_sim_devices_under_one_fixed_mode():
    aa.ones(1, device="sim:0")
    other = "cuda" if aa.sim_mode() == "plain" else "plain"
    with pytest.raises(RuntimeError, match="already in use"):
        aa.set_sim_mode(other)
    aa.set_sim_mode(aa.sim_mode())  # choosing the mode in force again is fine
