"""Run a program written for PyTorch with `torch` answered by autograd_async, the way a user
ports one by changing its import: `python run_as_torch.py program.py [args...]`.

Every `torch` and `torch.*` import resolves to `autograd_async` and its module of the same name.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import runpy
import sys
from types import ModuleType


class _TorchIsAutogradAsync(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: object, target: object = None):  # noqa: ANN201
        if name == "torch" or name.startswith("torch."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module("autograd_async" + spec.name[len("torch") :])

    def exec_module(self, module: ModuleType) -> None:
        """The module is autograd_async's own, already executed."""


if __name__ == "__main__":
    sys.meta_path.insert(0, _TorchIsAutogradAsync())
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
