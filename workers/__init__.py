"""`workers`, the repository's name for `autograd_async.workers`, from a checkout.

The distribution ships the worker package as `autograd_async.workers` (and the console script
`autograd-async-worker`): it claims no top-level name of its own. A checkout keeps this folder
so that `python -m workers` and `import workers` work as they did; each module here is the
package's own module object (`workers.registry is autograd_async.workers.registry`), so
registrations and context variables are shared, never duplicated.
"""

import importlib
import pkgutil
import sys

import autograd_async.workers as _package
from autograd_async.workers import *  # noqa: F403
from autograd_async.workers import __all__  # noqa: F401

for _module in pkgutil.walk_packages(_package.__path__, _package.__name__ + "."):
    if _module.name.rpartition(".")[2] != "__main__":
        _alias = __name__ + _module.name.removeprefix(_package.__name__)
        sys.modules.setdefault(_alias, importlib.import_module(_module.name))
        if _alias.count(".") == 1:  # `workers.ray` as an attribute, as an import would set it
            globals()[_alias.partition(".")[2]] = sys.modules[_alias]
