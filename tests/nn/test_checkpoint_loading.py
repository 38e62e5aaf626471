"""load()'s PyTorch arguments: map_location in every form, weights_only, mmap; module state dicts
of each kind of layer round-trip on each device (the `device` fixture: cpu, sim, cuda when
present); optimizer and scheduler state too."""

from __future__ import annotations

import io
import mmap
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn, optim
from autograd_async.optim import lr_scheduler


def _linear():
    return nn.Linear(4, 3), aa.randn(2, 4)


def _conv():
    return nn.Conv2d(2, 3, 3, padding=1), aa.randn(1, 2, 5, 5)


def _batchnorm():
    bn = nn.BatchNorm1d(4)
    bn(aa.randn(8, 4) * 3 + 1)  # running statistics and the batch counter move off their start
    bn.eval()
    return bn, aa.randn(3, 4)


def _lstm():
    return nn.LSTM(4, 5, num_layers=2, batch_first=True), aa.randn(2, 3, 4)


def _transformer():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    return layer, aa.randn(2, 3, 8)


def _embedding():
    return nn.Embedding(10, 4, padding_idx=0), aa.tensor([[1, 2, 0], [9, 3, 3]])


KINDS = [_linear, _conv, _batchnorm, _lstm, _transformer, _embedding]


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("make", KINDS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("use_mmap", [False, True], ids=["read", "mmap"])
def test_module_state_dict_round_trips(make, device, use_mmap, tmp_path):
    aa.manual_seed(0)
    source, x = make()
    source = source.to(device)
    x = x.to(device)
    path = tmp_path / "module.pt"
    aa.save(source.state_dict(), path)
    loaded = aa.load(path, mmap=use_mmap)
    aa.manual_seed(1)
    target = make()[0].to(device)
    target.eval() if not source.training else target.train()
    target.load_state_dict(loaded)
    expected = source.state_dict()
    assert list(loaded) == list(expected)
    for key, value in expected.items():
        assert loaded[key].dtype == value.dtype and str(loaded[key].device) == device, key
        np.testing.assert_array_equal(
            np.asarray(loaded[key].to("cpu")), np.asarray(value.to("cpu"))
        )
    np.testing.assert_array_equal(
        np.asarray(_first(target(x)).detach().to("cpu")),
        np.asarray(_first(source(x)).detach().to("cpu")),
    )


def test_loaded_module_trains(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    aa.save(model.state_dict(), tmp_path / "m.pt")
    fresh = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    fresh.load_state_dict(aa.load(tmp_path / "m.pt", mmap=True))
    opt = optim.SGD(fresh.parameters(), lr=0.1)
    fresh(aa.randn(5, 3)).sum().backward()
    opt.step()
    assert all(p.grad is not None for p in fresh.parameters())


# ------------------------------------------------------------------ map_location


def _saved_on_sim1(tmp_path):
    path = tmp_path / "w.pt"
    aa.save({"w": aa.arange(4.0, device="sim:1"), "b": aa.ones(2)}, path)
    return path


@pytest.mark.parametrize(
    ("map_location", "expected"),
    [
        (None, {"w": "sim:1", "b": "cpu"}),
        ("cpu", {"w": "cpu", "b": "cpu"}),
        ("sim:0", {"w": "sim:0", "b": "sim:0"}),
        (aa.device("sim:0"), {"w": "sim:0", "b": "sim:0"}),
        ({"sim:1": "cpu"}, {"w": "cpu", "b": "cpu"}),
        ({"cpu": "sim:0"}, {"w": "sim:1", "b": "sim:0"}),
        (lambda storage, location: storage, {"w": "cpu", "b": "cpu"}),
        (lambda storage, location: None, {"w": "sim:1", "b": "cpu"}),
        (
            lambda storage, location: storage.to("sim:0") if location == "sim:1" else None,
            {"w": "sim:0", "b": "cpu"},
        ),
    ],
    ids=["none", "str", "sim", "device", "dict", "dict-cpu", "identity", "keep", "callable"],
)
@pytest.mark.parametrize("use_mmap", [False, True], ids=["read", "mmap"])
def test_map_location_forms(tmp_path, map_location, expected, use_mmap):
    out = aa.load(_saved_on_sim1(tmp_path), map_location=map_location, mmap=use_mmap)
    assert {k: str(v.device) for k, v in out.items()} == expected
    np.testing.assert_array_equal(np.asarray(out["w"].to("cpu")), [0.0, 1.0, 2.0, 3.0])


def test_map_location_callable_gets_cpu_tensor_and_saved_location(tmp_path):
    seen = []
    aa.load(_saved_on_sim1(tmp_path), map_location=lambda s, loc: seen.append((str(s.device), loc)))
    assert sorted(seen) == [("cpu", "cpu"), ("cpu", "sim:1")]


# ------------------------------------------------------------------ weights_only


def test_weights_only_refuses_numpy_arrays_like_torch(tmp_path, torch):
    path = tmp_path / "a.pt"
    aa.save({"a": np.arange(3)}, path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as ours:
        aa.load(path)
    assert "weights_only" in str(ours.value) and "obj['a']" in str(ours.value)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        aa.load(path, weights_only=True)
    buffer = io.BytesIO()
    torch.save({"a": np.arange(3)}, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(buffer)  # PyTorch refuses the same object by default
    np.testing.assert_array_equal(aa.load(path, weights_only=False)["a"], [0, 1, 2])


def test_weights_only_accepts_what_torch_allows(tmp_path, torch):
    obj = {
        "sd": OrderedDict([("w", aa.ones(2)), ("step", 3)]),
        "dtype": aa.float16,
        "bool": aa.bool,
        "device": aa.device("sim:0"),
        "z": 1 + 2j,
        "raw": b"\x00\xff",
        "nested": [(1, 2.5), {"k": None}],
    }
    aa.save(obj, tmp_path / "w.pt")
    out = aa.load(tmp_path / "w.pt", weights_only=True)
    assert isinstance(out["sd"], OrderedDict) and list(out["sd"]) == ["w", "step"]
    assert out["dtype"] is aa.float16 and out["bool"] is aa.bool
    assert out["device"] == aa.device("sim:0")
    assert out["z"] == 1 + 2j and out["raw"] == b"\x00\xff"
    assert out["nested"] == [(1, 2.5), {"k": None}]
    # PyTorch's weights-only loader takes the same kinds of value.
    buffer = io.BytesIO()
    torch.save(
        {"sd": OrderedDict(w=torch.ones(2)), "dtype": torch.float16, "z": 1 + 2j, "raw": b"x"},
        buffer,
    )
    buffer.seek(0)
    assert isinstance(torch.load(buffer, weights_only=True)["sd"], OrderedDict)


def test_pickle_module_is_refused(tmp_path):
    aa.save({"w": aa.ones(1)}, tmp_path / "w.pt")
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle"):
        aa.load(tmp_path / "w.pt", pickle_module=pickle)
    with pytest.raises(ValueError, match="never pickles"):
        aa.load(tmp_path / "w.pt", pickle_module=pickle, weights_only=False)


# ------------------------------------------------------------------ mmap


def _base_is_mapped(array) -> bool:
    while array is not None and not isinstance(array, mmap.mmap):
        array = getattr(array, "base", None)
        if isinstance(array, memoryview):
            array = array.obj
    return isinstance(array, mmap.mmap)


def test_mmap_maps_tensor_data_copy_on_write(tmp_path):
    path = tmp_path / "big.pt"
    weight = aa.arange(12.0).reshape(3, 4)
    aa.save({"w": weight, "f": aa.tensor(np.asfortranarray(np.ones((2, 3))))}, path)
    out = aa.load(path, mmap=True)
    assert _base_is_mapped(out["w"]._data)
    np.testing.assert_array_equal(np.asarray(out["w"]), np.asarray(weight))
    np.testing.assert_array_equal(np.asarray(out["f"]), np.ones((2, 3)))
    with aa.no_grad():
        out["w"].add_(100.0)  # writable, and private to this process
    assert float(out["w"][0, 0]) == 100.0
    again = aa.load(path)
    np.testing.assert_array_equal(np.asarray(again["w"]), np.asarray(weight))
    before = path.read_bytes()
    del out
    assert path.read_bytes() == before


def test_mmap_needs_a_path_like_torch(tmp_path, torch):
    buffer = io.BytesIO()
    aa.save({"w": aa.ones(1)}, buffer)
    buffer.seek(0)
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        aa.load(buffer, mmap=True)
    tbuffer = io.BytesIO()
    torch.save({"w": torch.ones(1)}, tbuffer)
    tbuffer.seek(0)
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        torch.load(tbuffer, mmap=True)


def test_mmap_refuses_non_checkpoints(tmp_path):
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="not an autograd_async checkpoint"):
        aa.load(empty, mmap=True)
    plain = tmp_path / "plain.npz"
    np.savez(plain, x=np.ones(2))
    with pytest.raises(ValueError, match="no __structure__"):
        aa.load(plain, mmap=True)


# ------------------------------------------------------------------ optimizer and scheduler


@pytest.mark.parametrize("use_mmap", [False, True], ids=["read", "mmap"])
def test_optimizer_and_scheduler_state_round_trip(tmp_path, device, use_mmap):
    def build():
        aa.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(device)
        opt = optim.AdamW(model.parameters(), lr=0.01, amsgrad=True)
        sched = lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=12)
        return model, opt, sched

    def train(model, opt, sched, steps, seed):
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            x = aa.tensor(rng.standard_normal((5, 3)), dtype="float32", device=device)
            opt.zero_grad()
            (model(x) ** 2).mean().backward()
            opt.step()
            sched.step()

    model, opt, sched = build()
    train(model, opt, sched, 5, 0)
    train(model, opt, sched, 5, 1)
    reference = [np.asarray(p.detach().to("cpu")) for p in model.parameters()]

    model, opt, sched = build()
    train(model, opt, sched, 5, 0)
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
    }
    aa.save(checkpoint, tmp_path / "train.pt")
    saved = aa.load(tmp_path / "train.pt", mmap=use_mmap)
    model, opt, sched = build()
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["optimizer"])
    sched.load_state_dict(saved["scheduler"])
    assert {str(v.device) for v in opt.state[next(model.parameters())].values()} >= {device}
    train(model, opt, sched, 5, 1)
    for ours, expected in zip(model.parameters(), reference, strict=True):
        np.testing.assert_array_equal(np.asarray(ours.detach().to("cpu")), expected)
