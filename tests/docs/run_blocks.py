"""Run a page's python blocks in order, in one namespace and one event loop, as `python -m
asyncio` would (top-level `await` allowed): `python run_blocks.py BLOCKS.json`, a list of
`{"where": "docs/page.md:12", "code": "..."}`. A failing block is named on stderr."""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import sys
import traceback


def main(path: str) -> int:
    blocks = json.loads(open(path).read())
    namespace: dict = {"__name__": "__main__"}
    with asyncio.Runner() as runner:
        for block in blocks:
            try:
                code = compile(block["code"], block["where"], "exec",
                               flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                result = eval(code, namespace)
                if inspect.iscoroutine(result):
                    runner.run(result)
            except BaseException:
                print(f"the block at {block['where']} failed:", file=sys.stderr)
                traceback.print_exc()
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
