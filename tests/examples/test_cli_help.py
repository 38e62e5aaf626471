"""Every example that is a command-line program answers `--help` (argparse %-formats help texts,
so one stray `%` in a help string makes `--help` crash while normal runs still work)."""

from __future__ import annotations

import pytest

from .helpers import EXAMPLES, run_example


def cli_examples() -> list[str]:
    """The example scripts that parse a command line when run as programs."""
    return sorted(
        path.name
        for path in EXAMPLES.glob("*.py")
        if 'if __name__ == "__main__":' in (text := path.read_text()) and "argparse" in text
    )


def test_the_examples_with_a_command_line_are_all_found():
    # Guards the discovery below: a glob that found nothing would make the help test vacuous.
    assert {
        "async_training.py",
        "distributed_training.py",
        "gradient_service.py",
        "multi_device.py",
    } <= set(cli_examples())


@pytest.mark.parametrize("name", cli_examples())
def test_help_prints_usage_and_exits_cleanly(name):
    done = run_example(name, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {name}"), done.stdout
    assert "--help" in done.stdout
    assert done.stderr == ""
