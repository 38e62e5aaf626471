"""The lists of files in tests/conftest.py name files that exist: a renamed or split file would
otherwise lose its place (first for the workers, or out of the CUDA-rules pass) in silence."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RULES_FREE_FILES, SLOW_FILES_FIRST

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("listed", [SLOW_FILES_FIRST, sorted(RULES_FREE_FILES)])
def test_every_listed_file_exists(listed):
    missing = [name for name in listed if not (ROOT / name).is_file()]
    assert not missing, missing


def test_slow_files_are_listed_once():
    assert len(set(SLOW_FILES_FIRST)) == len(SLOW_FILES_FIRST)
