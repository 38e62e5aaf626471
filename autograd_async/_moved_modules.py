"""The import paths of modules that moved into `autograd_async.core`, kept for code that uses them.

`import autograd_async.tensor` (or `from autograd_async.ops.base import Op`) finds the moved
module itself under its old name: one module object, so monkeypatching, `isinstance` checks and
pickles that name the old path behave as before. No file stands at the old paths, so the moved
files keep their history. The library itself imports the new paths.
"""

from __future__ import annotations

import importlib
import sys

#: old name -> the module's name now.
MOVED = {
    "autograd_async.tensor": "autograd_async.core.tensor",
    "autograd_async.graph": "autograd_async.core.graph",
    "autograd_async.history": "autograd_async.core.history",
    "autograd_async.saved_hooks": "autograd_async.core.saved_hooks",
    "autograd_async.recording": "autograd_async.core.recording",
    "autograd_async.ops.base": "autograd_async.core.op",
    "autograd_async.ops.saved": "autograd_async.core.saved",
    "autograd_async.ops.stream_checks": "autograd_async.core.stream_checks",
}


def alias_moved_modules() -> None:
    """Register each moved module under its old name too (the import system looks there first)."""
    for old, new in MOVED.items():
        sys.modules.setdefault(old, importlib.import_module(new))


alias_moved_modules()  # on import: the package imports this module before anything else
