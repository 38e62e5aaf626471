"""docs/torch-coverage.md stays true: every PyTorch name it marks present exists here.

Reads the document, not torch, so it runs where torch is not installed.
"""

from __future__ import annotations

import re
from pathlib import Path

import autograd_async as aa

COVERAGE = Path(__file__).resolve().parents[1] / "docs" / "torch-coverage.md"
ROW = re.compile(r"^\| `([A-Za-z_][\w.]*)` \| (yes|no) \|$")


def marked_rows() -> list[tuple[str, str]]:
    """(dotted name, yes/no) for every row of the per-section tables."""
    matches = (ROW.match(line) for line in COVERAGE.read_text().splitlines())
    return [m.groups() for m in matches if m]


def resolve(dotted: str) -> bool:
    """Whether `autograd_async.<dotted>` exists."""
    target: object = aa
    for part in dotted.split("."):
        if not hasattr(target, part):
            return False
        target = getattr(target, part)
    return True


def test_the_list_covers_every_section():
    rows = marked_rows()
    assert len(rows) > 1000
    owners = {name.rsplit(".", 1)[0] if "." in name else "" for name, _ in rows}
    expected = {"", "Tensor", "linalg", "special", "fft", "nn", "nn.functional", "nn.init"}
    assert expected | {"optim", "optim.lr_scheduler"} <= owners


def test_every_name_marked_present_exists():
    missing = [name for name, mark in marked_rows() if mark == "yes" and not resolve(name)]
    assert not missing, f"marked present in docs/torch-coverage.md but missing: {missing}"


def test_section_totals_match_their_rows():
    text = COVERAGE.read_text()
    for title, have, total, body in re.findall(
        r"^## (.+): (\d+) of (\d+)\n\n\| name \| here \|\n\| --- \| --- \|\n((?:\|.*\n)*)",
        text,
        flags=re.MULTILINE,
    ):
        marks = [line.rsplit("|", 2)[1].strip() for line in body.splitlines()]
        assert (marks.count("yes"), len(marks)) == (int(have), int(total)), title
