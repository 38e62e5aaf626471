"""Running an example script as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example_command(name: str, *args: str) -> list[str]:
    """The command line that runs `examples/<name>` with this interpreter."""
    return [sys.executable, str(EXAMPLES / name), *args]


def example_env() -> dict[str, str]:
    """The environment for an example subprocess: unbuffered, so output arrives as printed."""
    return dict(os.environ, PYTHONUNBUFFERED="1")


# A hang guard, not a speed bound: whole example runs took up to 27 s on a 2-core machine with
# every core busy. Tests that run an example mark themselves with EXAMPLE_TEST_TIMEOUT.
EXAMPLE_TIMEOUT = 180
EXAMPLE_TEST_TIMEOUT = EXAMPLE_TIMEOUT + 30


def run_example(
    name: str, *args: str, timeout: float = EXAMPLE_TIMEOUT
) -> subprocess.CompletedProcess:
    """Run `examples/<name>` to completion; its output is captured as text."""
    return subprocess.run(
        example_command(name, *args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=example_env(),
        cwd=EXAMPLES.parent,
    )
