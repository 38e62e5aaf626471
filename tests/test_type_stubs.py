"""The checked-in type stubs match the ops installed on Tensor, and the package ships them."""

from __future__ import annotations

import ast
import inspect
import tomllib
from pathlib import Path

import pytest

import autograd_async as aa
from autograd_async import _stubgen

ROOT = Path(__file__).resolve().parents[1]


def test_stubs_are_up_to_date() -> None:
    stale = _stubgen.stale()
    assert not stale, (
        f"{', '.join(str(p.relative_to(ROOT)) for p in stale)} out of date with the ops installed "
        f"on Tensor: run `{_stubgen.REGENERATE}` and commit the result"
    )


def test_every_public_tensor_member_is_in_the_stub() -> None:
    tree = ast.parse(_stubgen.TENSOR_STUB.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    declared = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    declared |= {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)}
    public = {n for n in dir(aa.Tensor) if _stubgen._public(n) and n not in dir(object)}
    assert public <= declared, sorted(public - declared)
    for name in ("gather", "scatter_", "topk", "new_zeros", "cuda", "is_cuda", "__dlpack__"):
        assert name in declared


def test_stub_signatures_follow_the_functions() -> None:
    text = _stubgen.TENSOR_STUB.read_text(encoding="utf-8")
    assert (
        "    def gather(\n        self,\n        dim: builtins.int,\n        index: Tensor,\n"
        in text
    )
    assert (
        "    def scatter_add_(self, dim: builtins.int, index: Tensor, src: Tensor) -> Tensor:"
        in text
    )
    ops_text = _stubgen.OPS_STUB.read_text(encoding="utf-8")
    assert inspect.signature(aa.index_select).return_annotation == "Tensor"
    assert "def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor: ..." in ops_text
    tree = ast.parse(ops_text)
    exported = next(n for n in tree.body if isinstance(n, ast.Assign)).value
    assert [e.value for e in exported.elts] == aa.ops.__all__


def test_an_unknown_annotation_becomes_any() -> None:
    def op(input, n=None):
        """A function whose annotations name a type the stubs do not import."""

    op.__annotations__ = {"input": "LocalType", "n": "int | None", "return": "list[LocalType]"}
    expected = "def op(input: Any, n: int | None = ...) -> Any: ...\n"
    assert _stubgen._def("op", op, "", False) == expected


def test_check_mode_and_package_data() -> None:
    assert _stubgen.main(["--check"]) == 0
    assert (ROOT / "autograd_async" / "py.typed").exists()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data = config["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data["autograd_async"] and "*.pyi" in data["autograd_async"]
    assert "*.pyi" in data["autograd_async.ops"]


USAGE = """\
import pytest

import autograd_async as aa

x = aa.randn(3, 4, requires_grad=True)
y: aa.Tensor = x.gather(1, aa.tensor([[0], [1], [2]])).sum()
values = aa.topk(x, 2).values
n: int = x.dim() + x.nelement()
kind: str = x.type()
x.not_a_method()
"""


def test_a_type_checker_sees_the_installed_ops(tmp_path: Path) -> None:
    mypy_api = pytest.importorskip("mypy.api")
    script = tmp_path / "usage.py"
    script.write_text(USAGE, encoding="utf-8")
    out, _, status = mypy_api.run(
        [
            str(script),
            "--ignore-missing-imports",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1 and '"Tensor" has no attribute "not_a_method"' in errors[0], out
