"""dtype objects answer PyTorch's questions, the aliases exist, and the default dtype works like
PyTorch's; NumPy still accepts the dtypes everywhere it takes one."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import autograd_async as aa

NAMES = [
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
    "complex64",
    "complex128",
    "float",
    "double",
    "half",
    "long",
    "int",
    "short",
    "cfloat",
    "cdouble",
]


def _answers(lib, name):
    d = getattr(lib, name)
    return d.is_floating_point, d.is_complex, d.is_signed, d.itemsize


@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes_match_pytorch(torch, name):
    assert _answers(aa, name) == _answers(torch, name)


def test_aliases_are_the_same_objects(torch):
    pairs = [
        ("float", "float32"),
        ("double", "float64"),
        ("half", "float16"),
        ("long", "int64"),
        ("int", "int32"),
        ("short", "int16"),
        ("cfloat", "complex64"),
        ("cdouble", "complex128"),
    ]
    for alias, name in pairs:
        assert getattr(aa, alias) is getattr(aa, name)
        assert getattr(torch, alias) is getattr(torch, name)
    assert aa.bool is aa.bool_


def test_repr_and_str():
    assert repr(aa.float32) == "aa.float32"
    assert repr(aa.ones(2).dtype) == "aa.float32"
    assert repr(aa.bool) == "aa.bool"
    assert str(aa.float64) == "float64"  # the NumPy name, as messages have always shown it


def _tensor_questions(lib):
    cases = [
        lib.ones(2),
        lib.tensor([1, 2]),
        lib.tensor([True]),
        lib.tensor([1 + 2j]),
        lib.ones(2, dtype=lib.float64),
        lib.ones(2).to(lib.half),
    ]
    return [
        (t.is_floating_point(), t.is_complex(), t.dtype.is_signed, t.dtype.itemsize) for t in cases
    ]


def test_tensor_questions_match_pytorch(torch):
    assert _tensor_questions(aa) == _tensor_questions(torch)


def test_dtypes_interoperate_with_numpy():
    assert aa.float32 == np.float32 and aa.float32 == np.dtype("float32")
    assert np.dtype("float32") == aa.float32 and aa.float32 != aa.float64
    assert aa.float32 != "float32" and aa.float64 != None  # noqa: E711 - no NumPy coercion
    assert hash(aa.float32) == hash(np.dtype("float32"))
    assert {np.dtype("int64"): "x"}[aa.int64] == "x"
    assert np.zeros(2, dtype=aa.float16).dtype == np.float16
    assert np.ones(2).astype(aa.int32).dtype == np.int32
    assert aa.ones(2).dtype.kind == "f" and aa.int64.name == "int64"
    assert aa.tensor([1.0], dtype=aa.double).dtype is aa.float64
    assert aa.tensor([1.0], dtype=np.float16).dtype is aa.half
    assert pickle.loads(pickle.dumps(aa.float32)) is aa.float32
    assert copy.deepcopy(aa.cfloat) is aa.complex64


def _default_dtype_program(lib):
    before = lib.get_default_dtype()
    try:
        lib.set_default_dtype(lib.float64)
        seen = [
            lib.get_default_dtype(),
            lib.tensor([1.5]).dtype,
            lib.tensor([1j]).dtype,
            lib.ones(1).dtype,
            lib.zeros(2).dtype,
            lib.arange(0.0, 2.0).dtype,
            lib.tensor(1).dtype,
            (lib.tensor([1, 2]) * 1.5).dtype,
            (lib.tensor([1, 2]) / 2).dtype,
            lib.tensor([1.0], dtype=lib.float32).dtype,
            lib.rand(2).dtype,
        ]
        errors = []
        for bad in (lib.int64, lib.bool):
            try:
                lib.set_default_dtype(bad)
            except TypeError as exc:
                errors.append(str(exc))
        seen.append(lib.get_default_dtype())
    finally:
        lib.set_default_dtype(before)
    return [repr(d).split(".")[-1] for d in seen] + errors, repr(lib.get_default_dtype())


def test_default_dtype_like_pytorch(torch):
    ours = _default_dtype_program(aa)
    theirs = _default_dtype_program(torch)
    assert ours[0] == theirs[0]
    assert ours[1] == "aa.float32" and theirs[1] == "torch.float32"
