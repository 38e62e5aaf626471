"""Every code block of README.md and docs/*.md runs (see code_blocks.py for the markers), so the
documentation never shows code that no longer works."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from .code_blocks import REPO, CodeBlock, code_blocks, documentation_pages
from .run_blocks import run_in_child

# Each page runs in a process forked from this server, which has imported the library once.
_FORKSERVER = multiprocessing.get_context("forkserver")
_FORKSERVER.set_forkserver_preload(["autograd_async", "autograd_async.nn"])

RUNNER = Path(__file__).with_name("run_blocks.py")
TIMEOUT = 90.0  # per page, on a loaded two-core machine; a page takes a few seconds alone


def _gpu_available() -> bool:
    import autograd_async as aa  # noqa: PLC0415 - imported by the test, not at collection

    return aa.cuda_is_available()


def _mpi_available() -> bool:
    try:
        import mpi4py  # noqa: F401, PLC0415 - optional dependency
    except ImportError:
        return False
    from autograd_async.distributed.run import find_mpiexec  # noqa: PLC0415

    try:
        find_mpiexec(None)
    except (FileNotFoundError, RuntimeError, SystemExit):
        return False
    return True


def _unmet(block: CodeBlock) -> str | None:
    """Why the block cannot run here, or None."""
    if block.skip is not None:
        return block.skip
    if block.requires == "gpu" and not _gpu_available():
        return "needs a CUDA GPU"
    if block.requires == "mpi" and not _mpi_available():
        return "needs mpi4py and an MPI launcher"
    if block.requires not in (None, "gpu", "mpi"):
        raise AssertionError(f"{block.where}: unknown requirement {block.requires!r}")
    return None


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{path}" if path else str(REPO))


def _run(command: list[str], where: str) -> str | None:
    """Run a command from the repository root; None when it succeeds, else what went wrong."""
    try:
        proc = subprocess.run(
            command, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired as exc:
        return f"{where}: still running after {TIMEOUT:.0f} s\n{exc.stderr or ''}"
    if proc.returncode != 0:
        return f"{where}:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return None


def _run_forked(spec: Path, where: str) -> str | None:
    """`run_blocks.py spec` in a fresh process forked from one with the library imported."""
    output = spec.with_suffix(".out")
    output.write_text("")
    child = _FORKSERVER.Process(target=run_in_child, args=(str(spec), str(output), str(REPO)))
    child.start()
    child.join(TIMEOUT)
    if child.is_alive():
        child.kill()
        child.join()
        return f"{where}: still running after {TIMEOUT:.0f} s\n{output.read_text()[-5000:]}"
    if child.exitcode != 0:
        return f"{where} (exit status {child.exitcode}):\n{output.read_text()[-8000:]}"
    return None


def _python_pages() -> list[Path]:
    return [
        page
        for page in documentation_pages()
        if any(b.language == "python" for b in code_blocks(page))
    ]


def _run_page(page: Path, workdir: Path) -> str | None:
    """The page's runnable python blocks, in order, in one fresh interpreter; those needing
    several processes on two MPI ranks after the others. None when all pass."""
    blocks = [b for b in code_blocks(page) if b.language == "python" and _unmet(b) is None]
    launcher = ["-m", "autograd_async.distributed.run", "-n", "2"]
    for group, prefix in (
        ([b for b in blocks if b.requires != "mpi"], []),
        ([b for b in blocks if b.requires == "mpi"], launcher),
    ):
        if not group:
            continue
        spec = workdir / f"{page.stem}-{len(prefix)}.json"
        spec.write_text(json.dumps([{"where": b.where, "code": b.setup + b.code} for b in group]))
        if prefix:
            failure = _run([sys.executable, *prefix, str(RUNNER), str(spec)], page.name)
        else:
            failure = _run_forked(spec, page.name)
        if failure is not None:
            return failure
    return None


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory) -> dict[Path, Future]:
    """Every page's run, started at once: each is a fresh interpreter that mostly waits (for
    its imports, its workers, its MPI ranks), so they overlap."""
    workdir = tmp_path_factory.mktemp("blocks")
    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="doc-page")
    runs = {page: pool.submit(_run_page, page, workdir) for page in _python_pages()}
    yield runs
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("page", _python_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_python_blocks_run(page: Path, page_runs):
    """The page's python blocks run (see `_run_page`)."""
    python = [b for b in code_blocks(page) if b.language == "python"]
    if all(_unmet(b) is not None for b in python):
        pytest.skip("; ".join(sorted({f"{b.where}: {_unmet(b)}" for b in python})))
    failure = page_runs[page].result(timeout=3 * TIMEOUT)
    assert failure is None, failure


SKIPPED = [
    b
    for page in documentation_pages()
    for b in code_blocks(page)
    if b.language in ("python", "bash") and b.skip is not None
]


@pytest.mark.parametrize("block", SKIPPED, ids=lambda b: b.where)
def test_skipped_blocks_say_why(block: CodeBlock):
    """A block that never runs is reported with its reason (and the reason is a sentence)."""
    assert len(block.skip.split()) >= 3, f"{block.where}: give a reason, not a word"
    pytest.skip(f"{block.where}: {block.skip}")


RUNNABLE_BASH = [
    b for page in documentation_pages() for b in code_blocks(page) if b.language == "bash" and b.run
]


@pytest.mark.parametrize("block", RUNNABLE_BASH, ids=lambda b: b.where)
def test_bash_blocks_run(block: CodeBlock):
    reason = _unmet(block)
    if reason is not None:
        pytest.skip(reason)
    script = block.code.replace(".venv/bin/python", sys.executable)
    failure = _run(
        [shutil.which("bash") or "/bin/bash", "-euo", "pipefail", "-c", script], block.where
    )
    assert failure is None, failure


def test_markers_sit_on_code_blocks():
    """Every marker in the pages is attached to a python or bash block (a typo, or a marker on
    a text block, would otherwise silently do nothing)."""
    for page in documentation_pages():
        for block in code_blocks(page):
            if block.markers or block.setup:
                assert block.language in ("python", "bash"), block.where
            if block.setup:
                assert block.language == "python", f"{block.where}: setup is python"


def _readme_set_up_commands() -> list[str]:
    return [b.code for b in code_blocks(REPO / "README.md") if b.language == "bash"][:2]


def test_getting_started_shows_the_readme_commands():
    """The getting-started page repeats the README's two set-up commands word for word."""
    readme = _readme_set_up_commands()
    assert len(readme) == 2 and all("python3 -m venv .venv" in c for c in readme)
    page = [
        b.code for b in code_blocks(REPO / "docs" / "getting-started.md") if b.language == "bash"
    ]
    assert page[:2] == readme
