"""The code blocks of the documentation pages and how each is run.

A fenced block is preceded (blank lines aside) by the HTML comments that say how it runs, invisible
on the rendered page:

- ```python blocks run, a page's blocks in order, in one fresh interpreter; they share one
  namespace and one event loop, and top-level `await` works as in `python -m asyncio`.
- ```bash blocks run only when marked `<!-- run -->` (`.venv/bin/python` stands for the
  interpreter running the tests).
- `<!-- requires: gpu -->`: runs only where CuPy sees a GPU; `<!-- requires: mpi -->`: a python
  block runs on two MPI ranks under `autograd_async.distributed.run`, a bash block where mpi4py
  and an MPI launcher are installed.
- `<!-- skip: REASON -->`: never runs; the reason is reported as the test's skip reason.
- `<!-- setup:` ... `-->`: hidden Python run before the next python block (names it assumes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*(run|requires:\s*\w+|skip:.*?)\s*-->\s*$")
SETUP_START = re.compile(r"^\s*<!--\s*setup:\s*$")


@dataclass(slots=True)
class CodeBlock:
    """One fenced block: where it is, its language, its code and how it is to run."""

    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    run: bool = False
    requires: str | None = None
    skip: str | None = None
    setup: str = ""
    markers: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def documentation_pages() -> list[Path]:
    """README.md and the hand-written pages under docs/ (not the generated API pages)."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def code_blocks(path: Path) -> list[CodeBlock]:
    """The fenced blocks of one page, with the markers of the comments just above each."""
    lines = path.read_text().splitlines()
    blocks: list[CodeBlock] = []
    pending: list[str] = []
    setup: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if SETUP_START.match(line):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "-->")
            setup += lines[i + 1 : end]
            i = end + 1
            continue
        marker = MARKER.match(line)
        if marker:
            pending.append(marker.group(1))
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            indent, language = fence.groups()
            end = next(
                j
                for j in range(i + 1, len(lines))
                if lines[j].strip() == "```" and lines[j].startswith(indent)
            )
            body = [text.removeprefix(indent) for text in lines[i + 1 : end]]
            block = CodeBlock(
                path,
                i + 1,
                language,
                "\n".join(body) + "\n",
                setup="\n".join(setup) + "\n" if setup else "",
                markers=pending,
            )
            for mark in pending:
                if mark == "run":
                    block.run = True
                elif mark.startswith("requires:"):
                    block.requires = mark.split(":", 1)[1].strip()
                elif mark.startswith("skip:"):
                    block.skip = mark.split(":", 1)[1].strip()
            blocks.append(block)
            pending, setup = [], []
            i = end + 1
            continue
        if line.strip():
            pending = []  # a marker applies only to the block right below it
        i += 1
    return blocks
