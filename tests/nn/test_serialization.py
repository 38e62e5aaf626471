"""save/load: .npz checkpoints without pickle, round trips, devices, and clear refusals."""

from __future__ import annotations

import io
import json
import math
import zipfile

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn, optim
from autograd_async.nn import Parameter


def _round_trip(obj, tmp_path, **load_kwargs):
    path = tmp_path / "ckpt.pt"
    aa.save(obj, path)
    assert path.exists() and not (tmp_path / "ckpt.pt.npz").exists()  # no suffix added
    return aa.load(path, **load_kwargs)


def _assert_same_tensor(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(np.asarray(a.detach()), np.asarray(b.detach()))


def test_nested_structure_round_trip(tmp_path):
    obj = {
        "f32": aa.tensor([[1.5, -2.0]], dtype="float32"),
        "f64": aa.tensor([math.pi, 1e-300], dtype="float64"),
        "i64": aa.arange(5),
        "flags": aa.tensor([True, False]),
        "scalar": aa.tensor(3.0),
        "empty": aa.zeros(0, 3),
        "nested": {"list": [1, 2.5, "x", None, True, [aa.ones(2)]], "tuple": (0.9, 0.999)},
        7: "int key",
        "7": "str key",
        "specials": [float("nan"), float("inf"), -0.0, 2**70],
        "array": np.arange(6, dtype=np.int32).reshape(2, 3),
        "np_scalar": np.float32(0.5),
    }
    out = _round_trip(obj, tmp_path, weights_only=False)  # it holds a NumPy array
    assert set(out) == set(obj)
    for key in ("f32", "f64", "i64", "flags", "scalar", "empty"):
        _assert_same_tensor(obj[key], out[key])
    assert out["f32"].dtype == np.float32 and out["i64"].dtype == np.int64
    assert out["nested"]["list"][:5] == [1, 2.5, "x", None, True]
    assert isinstance(out["nested"]["tuple"], tuple) and out["nested"]["tuple"] == (0.9, 0.999)
    _assert_same_tensor(obj["nested"]["list"][5][0], out["nested"]["list"][5][0])
    assert out[7] == "int key" and out["7"] == "str key"
    nan, inf, negzero, big = out["specials"]
    assert math.isnan(nan) and inf == math.inf and math.copysign(1, negzero) == -1
    assert big == 2**70 and isinstance(big, int)
    assert out["array"].dtype == np.int32 and out["array"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert out["np_scalar"] == 0.5


def test_parameters_and_requires_grad_survive(tmp_path):
    p = Parameter(aa.tensor([1.0, 2.0]))
    leaf = aa.tensor([3.0], requires_grad=True)
    out = _round_trip({"p": p, "leaf": leaf, "frozen": Parameter(aa.zeros(1), False)}, tmp_path)
    assert isinstance(out["p"], Parameter) and out["p"].requires_grad
    assert out["leaf"].requires_grad and type(out["leaf"]) is aa.Tensor
    assert isinstance(out["frozen"], Parameter) and not out["frozen"].requires_grad


def test_shared_storage_is_stored_once_and_stays_shared(tmp_path):
    t = aa.tensor([1.0, 2.0])
    path = tmp_path / "shared.npz"
    aa.save({"a": t, "b": t.detach(), "c": t}, path)
    with np.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files) == ["__structure__", "a0"]
    out = aa.load(path)
    assert out["a"]._data is out["b"]._data is out["c"]._data


def test_module_state_dict_round_trip(tmp_path):
    src = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2, dtype="float64"))
    dst = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2, dtype="float64"))
    dst.load_state_dict(_round_trip(src.state_dict(), tmp_path))
    for (k, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items(), strict=True):
        assert a.dtype == b.dtype, k
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_sim_tensors_go_back_to_their_device(tmp_path):
    model = nn.Linear(2, 3).to("sim:1")
    out = _round_trip(model.state_dict(), tmp_path)
    assert {str(t.device) for t in out.values()} == {"sim:1"}


@pytest.mark.parametrize(
    ("map_location", "expected"),
    [
        ("cpu", {"cpu"}),
        ("sim:0", {"sim:0"}),
        (aa.device("sim:0"), {"sim:0"}),
        ({"sim:1": "cpu"}, {"cpu"}),
        (lambda tensor, saved: tensor.to("sim:0") if saved == "sim:1" else tensor, {"sim:0"}),
    ],
)
def test_map_location(tmp_path, map_location, expected):
    model = nn.Linear(2, 3).to("sim:1")
    out = _round_trip(model.state_dict(), tmp_path, map_location=map_location)
    assert {str(t.device) for t in out.values()} == expected
    fresh = nn.Linear(2, 3)
    fresh.load_state_dict(out)
    np.testing.assert_array_equal(np.asarray(fresh.weight.detach()), np.asarray(out["weight"]))


def test_unavailable_device_suggests_map_location(tmp_path):
    aa.save({"w": aa.zeros(2, device="sim:1")}, tmp_path / "x.npz")
    aa.engine.shutdown()  # a default-engine worker left on sim:1 by earlier tests holds it
    configured = aa.sim_device_count()
    aa.set_sim_device_count(1)
    try:
        with pytest.raises(aa.DeviceError, match="map_location='cpu'"):
            aa.load(tmp_path / "x.npz")
        out = aa.load(tmp_path / "x.npz", map_location="cpu")
        assert str(out["w"].device) == "cpu"
    finally:
        aa.set_sim_device_count(configured)


def test_optimizer_state_round_trip(tmp_path):
    params = [Parameter(aa.tensor([1.0, -1.0], device="sim:0")), Parameter(aa.ones(2, 2))]
    opt = optim.Adam(params, lr=0.01, amsgrad=True)
    for p in params:
        p.grad = aa.ones_like(p)
    opt.step()
    saved = opt.state_dict()
    out = _round_trip(saved, tmp_path)
    assert out["param_groups"] == saved["param_groups"]
    assert isinstance(out["param_groups"][0]["betas"], tuple)
    assert sorted(out["state"]) == [0, 1]
    for index in (0, 1):
        for key, value in saved["state"][index].items():
            _assert_same_tensor(value, out["state"][index][key])
            assert out["state"][index][key].device == value.device
    again = optim.Adam(params, lr=0.5)
    again.load_state_dict(out)
    assert again.param_groups[0]["lr"] == 0.01
    assert again.state[params[0]]["step"].item() == 1.0


def test_file_objects(tmp_path):
    buffer = io.BytesIO()
    aa.save({"x": aa.ones(2)}, buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(np.asarray(aa.load(buffer)["x"]), [1.0, 1.0])
    assert aa.load(buffer.getvalue())["x"].shape == (2,)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"a": {"b": [1, object()]}}, r"object at obj\['a'\]\['b'\]\[1\]"),
        ({"a": {1.5: 2}}, r"dict key of type float \(1.5\) at obj\['a'\]"),
        ({"a": {(1, 2): 2}}, "dict key of type tuple"),
        ({"s": {1, 2}}, r"type set at obj\['s'\]"),
        ([np.array(["x"])], r"array of dtype <U1 at obj\[0\]"),
        ({"f": lambda: 0}, r"type function at obj\['f'\]"),
        (
            {"m": nn.Linear(1, 1)},
            r"type autograd_async\.nn\.modules\.linear\.Linear at obj\['m'\]: checkpoints hold",
        ),
    ],
)
def test_unsupported_objects_are_refused(tmp_path, obj, message):
    with pytest.raises(TypeError, match=message):
        aa.save(obj, tmp_path / "bad.npz")


def test_saving_another_librarys_tensor_names_its_module(tmp_path, torch):
    # A bare "Tensor" would read as ours; the message must say whose tensor it is.
    with pytest.raises(TypeError, match=r"object of type torch\.Tensor at obj\['w'\]"):
        aa.save({"w": torch.ones(2)}, tmp_path / "bad.npz")
    with pytest.raises(TypeError, match=r"object of type torch\.Tensor at obj: "):
        aa.save(torch.ones(2), tmp_path / "bad.npz")


def test_a_missing_file_raises_what_open_and_torch_load_raise(tmp_path, torch):
    missing = tmp_path / "missing.npz"
    with pytest.raises(FileNotFoundError) as ours:
        aa.load(missing)
    with pytest.raises(FileNotFoundError) as theirs:
        torch.load(missing)
    assert ours.value.filename == theirs.value.filename == str(missing)
    with pytest.raises(FileNotFoundError):
        aa.load(str(missing))
    with pytest.raises(IsADirectoryError):
        aa.load(tmp_path)


def test_an_empty_file_is_not_a_checkpoint(tmp_path):
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="not an autograd_async checkpoint"):
        aa.load(empty)


def test_loading_refuses_pickles_and_foreign_files(tmp_path):
    pickled = tmp_path / "pickled.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="not an autograd_async checkpoint"):
        aa.load(pickled)
    plain = tmp_path / "plain.npz"
    np.savez(plain, x=np.ones(2))
    with pytest.raises(ValueError, match="no __structure__"):
        aa.load(plain)
    text = tmp_path / "text.txt"
    text.write_text("hello")
    with pytest.raises(ValueError, match="not an autograd_async checkpoint"):
        aa.load(text)


def test_archive_is_plain_npz_with_json(tmp_path):
    path = tmp_path / "c.npz"
    aa.save({"w": aa.ones(2), "lr": 0.1}, path)
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == ["__structure__.npy", "a0.npy"]
    with np.load(path, allow_pickle=False) as archive:
        structure = json.loads(archive["__structure__"].tobytes())
    assert structure["format"] == "autograd_async" and structure["version"] == 1
    assert structure["root"][0] == "dict"


def test_corrupt_structure_is_reported(tmp_path):
    path = tmp_path / "c.npz"
    text = json.dumps(
        {"format": "autograd_async", "version": 1, "root": ["tensor", "a9", "cpu", False, False]}
    )
    np.savez(path, __structure__=np.frombuffer(text.encode(), dtype=np.uint8))
    with pytest.raises(ValueError, match="missing array 'a9'"):
        aa.load(path)
