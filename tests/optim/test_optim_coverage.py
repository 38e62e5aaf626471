"""docs/optim-coverage.md stays true: every name it marks present exists here, and it lists every
public name of torch.optim, its schedulers and swa_utils (when torch is installed)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import autograd_async as aa

COVERAGE = Path(__file__).resolve().parents[2] / "docs" / "optim-coverage.md"
ROW = re.compile(r"^\| `(optim(?:\.[A-Za-z_]+)*)\.(\w+)` \| (yes|no) \|$")
HEADING = re.compile(r"^## (\S+): (\d+) of (\d+)$")


def _rows() -> list[tuple[str, str, str]]:
    rows = [ROW.match(line) for line in COVERAGE.read_text().splitlines()]
    return [m.groups() for m in rows if m]


def _resolve(owner: str):
    target = aa
    for part in owner.split("."):
        target = getattr(target, part)
    return target


def test_every_name_marked_present_exists():
    rows = _rows()
    assert len(rows) > 50
    missing = [f"{o}.{n}" for o, n, mark in rows if mark == "yes" and not hasattr(_resolve(o), n)]
    assert not missing, f"marked present in docs/optim-coverage.md but missing: {missing}"
    absent_but_here = [
        f"{o}.{n}" for o, n, mark in rows if mark == "no" and hasattr(_resolve(o), n)
    ]
    assert not absent_but_here, f"present but marked no: {absent_but_here}"


def test_section_counts_add_up():
    text = COVERAGE.read_text().splitlines()
    rows = _rows()
    for line in text:
        heading = HEADING.match(line)
        if heading:
            owner, present, total = heading.group(1), int(heading.group(2)), int(heading.group(3))
            marks = [mark for o, _, mark in rows if o == owner]
            assert (present, total) == (marks.count("yes"), len(marks)), owner


def test_lists_every_public_torch_name(torch):
    listed = {(o, n) for o, n, _ in _rows()}
    expected = {("optim", n) for n in torch.optim.__all__ if n not in ("lr_scheduler", "swa_utils")}
    expected |= {("optim.lr_scheduler", n) for n in torch.optim.lr_scheduler.__all__}
    expected |= {("optim.swa_utils", n) for n in torch.optim.swa_utils.__all__}
    expected |= {
        ("optim.Optimizer", n)
        for n, v in vars(torch.optim.Optimizer).items()
        if not n.startswith("_") and inspect.isfunction(getattr(v, "__func__", v))
    }
    expected |= {
        ("optim.lr_scheduler.LRScheduler", n)
        for n, v in vars(torch.optim.lr_scheduler.LRScheduler).items()
        if not n.startswith("_") and inspect.isfunction(v)
    }
    assert not expected - listed, f"not in docs/optim-coverage.md: {sorted(expected - listed)}"
