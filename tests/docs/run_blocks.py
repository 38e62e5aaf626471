"""Run a page's python blocks in order, in one namespace and one event loop, as `python -m
asyncio` would (top-level `await` allowed): `python run_blocks.py BLOCKS.json`, a list of
`{"where": "docs/page.md:12", "code": "..."}`. A failing block is named on stderr.

`run_in_child` does the same in a process forked from a server that has imported the library
already: a fresh process for each page without paying for the import each time."""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import os
import sys
import traceback


def main(path: str) -> int:
    with open(path) as f:
        blocks = json.loads(f.read())
    namespace: dict = {"__name__": "__main__"}
    with asyncio.Runner() as runner:
        for block in blocks:
            try:
                code = compile(
                    block["code"], block["where"], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                )
                result = eval(code, namespace)
                if inspect.iscoroutine(result):
                    runner.run(result)
            except BaseException:
                print(f"the block at {block['where']} failed:", file=sys.stderr)
                traceback.print_exc()
                return 1
    return 0


def run_in_child(path: str, output: str, cwd: str) -> None:
    """The process target: stdout and stderr into `output`, the exit status `main`'s."""
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.chdir(cwd)
    status = main(path)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # no interpreter teardown: the page's workers and loops end with it


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
