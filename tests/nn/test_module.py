"""Module bookkeeping: registration order, traversal, modes, state dicts, devices, repr."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.nn import Parameter


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.alpha = Parameter(aa.ones(2))
        self.inner = nn.Linear(2, 3)
        self.register_buffer("running", aa.zeros(3))
        self.register_buffer("scratch", aa.zeros(1), persistent=False)
        self.beta = Parameter(aa.zeros(3))

    def forward(self, x):
        return x


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = Block()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1)])
        self.scale = Parameter(aa.tensor(2.0))

    def forward(self, x):
        return x


def test_parameter_basics():
    t = aa.tensor([1.0, 2.0])
    p = Parameter(t)
    assert isinstance(p, aa.Tensor) and p.requires_grad and p.is_leaf
    assert p._data is t._data  # shares storage, as PyTorch's does
    assert not Parameter(t, requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor([1., 2.]")
    assert type(p * 2) is aa.Tensor and type(p.detach()) is aa.Tensor
    assert Parameter().shape == (0,)
    with pytest.raises(TypeError, match="Parameter expects a Tensor"):
        Parameter([1.0])


def test_registration_order_and_names():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == [
        "scale",
        "first.alpha",
        "first.beta",
        "first.inner.weight",
        "first.inner.bias",
        "layers.0.weight",
        "layers.0.bias",
        "layers.2.weight",
        "layers.2.bias",
    ]
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in net.named_buffers()] == ["first.running", "first.scratch"]
    assert [n for n, _ in net.named_children()] == ["first", "layers"]
    assert [n for n, _ in net.named_modules()] == [
        "",
        "first",
        "first.inner",
        "layers",
        "layers.0",
        "layers.1",
        "layers.2",
    ]
    assert list(net.parameters())[0] is net.scale
    assert net.get_submodule("layers.2") is net.layers[2]
    assert net.get_parameter("first.inner.bias") is net.first.inner.bias
    with pytest.raises(AttributeError, match="has no submodule `nope`"):
        net.get_submodule("first.nope")


def test_shared_parameters_and_modules_are_listed_once():
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, nn.ReLU(), shared)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.modules())) == 3
    # state_dict keeps every name, as PyTorch's does
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_attribute_rules():
    block = Block()
    block.alpha = None
    assert "alpha" in block._parameters and block.alpha is None
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'beta'"):
        block.beta = aa.zeros(3)
    with pytest.raises(TypeError, match="as child module 'inner'"):
        block.inner = 3
    block.running = aa.ones(3)
    assert block._buffers["running"] is block.running
    with pytest.raises(TypeError, match="as buffer 'running'"):
        block.running = [1.0]
    block.plain = 5
    assert block.plain == 5 and "plain" not in block._parameters
    del block.inner
    assert "inner" not in block._modules
    with pytest.raises(AttributeError, match="'Block' object has no attribute 'inner'"):
        _ = block.inner
    with pytest.raises(KeyError, match="already exists"):
        block.register_buffer("plain", aa.zeros(1))
    with pytest.raises(TypeError, match="nn.Parameter or None required"):
        block.register_parameter("bad", aa.zeros(1))  # type: ignore[arg-type]


def test_assignment_before_init_is_refused():
    class Broken(nn.Module):
        def __init__(self) -> None:
            self.w = Parameter(aa.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Broken()


def test_forward_is_required_and_call_forwards():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)
    assert Block()(41) == 41


def test_train_eval_recursive():
    net = Net()
    assert net.training and net.layers[1].training
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")  # type: ignore[arg-type]


def test_state_dict_keys_and_detach():
    net = Net()
    sd = net.state_dict()
    assert list(sd) == [
        "scale",
        "first.alpha",
        "first.beta",
        "first.running",
        "first.inner.weight",
        "first.inner.bias",
        "layers.0.weight",
        "layers.0.bias",
        "layers.2.weight",
        "layers.2.bias",
    ]
    assert not sd["scale"].requires_grad and sd["scale"]._data is net.scale._data
    assert net.state_dict(keep_vars=True)["scale"] is net.scale
    assert list(net.first.state_dict(prefix="first."))[0] == "first.alpha"


def test_state_dict_round_trip_keeps_identity():
    src, dst = Net(), Net()
    params_before = list(dst.parameters())
    version = dst.first.inner.weight._version
    result = dst.load_state_dict(src.state_dict())
    assert result == nn.IncompatibleKeys([], [])
    assert list(dst.parameters()) == params_before
    assert dst.first.inner.weight._version == version + 1
    for (name, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items(), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
        assert a._data is not b._data


def test_load_state_dict_errors_name_the_keys():
    model = nn.Linear(2, 3)
    sd = model.state_dict()
    del sd["bias"]
    sd["extra"] = aa.zeros(1)
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(sd)
    assert str(info.value) == (
        "Error(s) in loading state_dict for Linear:\n"
        '\tMissing key(s) in state_dict: "bias". \n'
        '\tUnexpected key(s) in state_dict: "extra". '
    )
    result = model.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == ["extra"]


def test_load_state_dict_shape_mismatch():
    model = nn.Linear(2, 3)
    sd = nn.Linear(2, 4).state_dict()
    before = np.asarray(model.weight.detach()).copy()
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(sd, strict=False)
    assert str(info.value) == (
        "Error(s) in loading state_dict for Linear:\n"
        "\tsize mismatch for weight: copying a param with shape (4, 2) from checkpoint, the "
        "shape in current model is (3, 2).\n"
        "\tsize mismatch for bias: copying a param with shape (4,) from checkpoint, the shape "
        "in current model is (3,)."
    )
    np.testing.assert_array_equal(np.asarray(model.weight.detach()), before)  # nothing copied
    with pytest.raises(RuntimeError, match="expected Tensor from checkpoint but received"):
        model.load_state_dict({"weight": [[0.0]] * 3, "bias": aa.zeros(3)})


def test_load_state_dict_from_other_device_and_dtype():
    model = nn.Linear(2, 3)
    src = nn.Linear(2, 3, device="sim:1", dtype="float64")
    model.load_state_dict(src.state_dict())
    assert model.weight.dtype == np.float32 and str(model.weight.device) == "cpu"
    np.testing.assert_allclose(
        np.asarray(model.weight.detach()), np.asarray(src.weight.detach()), rtol=1e-6
    )


def test_to_device_keeps_parameter_identity():
    net = Net()
    params = list(net.parameters())
    net.first.inner.weight.grad = aa.ones(3, 2)
    assert net.to("sim:0") is net
    assert list(net.parameters()) == params
    assert {str(p.device) for p in net.parameters()} == {"sim:0"}
    assert {str(b.device) for b in net.buffers()} == {"sim:0"}
    assert str(net.first.inner.weight.grad.device) == "sim:0"
    assert all(p.requires_grad and p.is_leaf for p in params)
    # A new graph sends gradients to the parameter's new device.
    y = net.scale * aa.tensor(3.0, device="sim:0")
    y.backward()
    assert str(net.scale.grad.device) == "sim:0" and net.scale.grad.item() == 3.0
    net.to(device="cpu")
    assert str(net.scale.device) == "cpu"


def test_to_dtype_changes_floating_tensors_only():
    block = Block()
    block.register_buffer("counts", aa.zeros(2, dtype="int64"))
    block.double()
    assert block.alpha.dtype == np.float64 and block.running.dtype == np.float64
    assert block.counts.dtype == np.int64
    block.to("sim:1", "float32")
    assert block.alpha.dtype == np.float32 and str(block.alpha.device) == "sim:1"
    with pytest.raises(TypeError, match="floating point"):
        block.to(dtype="int32")


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    model = nn.Linear(2, 2)
    for p in model.parameters():
        p.grad = aa.ones_like(p)
    model.zero_grad(set_to_none=set_to_none)
    for p in model.parameters():
        if set_to_none:
            assert p.grad is None
        else:
            np.testing.assert_array_equal(np.asarray(p.grad), np.zeros(p.shape))


def test_requires_grad_and_apply():
    net = Net()
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen.count("Linear") == 3


def test_containers():
    a, b, c = nn.Linear(1, 2), nn.ReLU(), nn.Linear(2, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and list(seq) == [a, b, c]
    assert seq[0] is a and seq[-1] is c
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == [b, c]
    named = nn.Sequential({"fc": a, "act": b})
    assert named.fc is a and [n for n, _ in named.named_children()] == ["fc", "act"]
    with pytest.raises(IndexError, match="out of range"):
        seq[3]
    seq.append(nn.Tanh())
    assert len(seq) == 4
    del seq[0]
    assert seq[0] is b

    ml = nn.ModuleList([a])
    ml.append(b)
    ml += [c]
    ml.insert(0, nn.Tanh())
    assert [type(m).__name__ for m in ml] == ["Tanh", "Linear", "ReLU", "Linear"]
    assert [n for n, _ in ml.named_children()] == ["0", "1", "2", "3"]
    del ml[1]
    assert ml[0].__class__ is nn.Tanh and ml[1] is b and len(ml) == 3
    ml[0] = a
    assert ml[0] is a and len(list(ml.parameters())) == 4


def test_sequential_chains_calls():
    class AddOne(nn.Module):
        def forward(self, x):
            return x + 1

    assert nn.Sequential(AddOne(), AddOne(), nn.Identity())(1) == 3


def test_deepcopy_gives_independent_parameters():
    model = nn.Linear(2, 2)
    clone = copy.deepcopy(model)
    assert clone.weight is not model.weight and isinstance(clone.weight, Parameter)
    assert clone.weight._data is not model.weight._data
    np.testing.assert_array_equal(clone.weight._data, model.weight._data)


EXPECTED_REPR = """Sequential(
  (0): Linear(in_features=4, out_features=8, bias=True)
  (1): ReLU()
  (2): GELU(approximate='none')
  (3): Dropout(p=0.1, inplace=False)
  (4): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (5): Sequential(
    (0): Tanh()
    (1): Sigmoid()
    (2): Flatten(start_dim=1, end_dim=-1)
  )
  (6): Embedding(10, 3, padding_idx=0)
  (7): Linear(in_features=8, out_features=2, bias=False)
  (8): CrossEntropyLoss()
  (9): MSELoss()
)"""


def _build(nn_mod):
    return nn_mod.Sequential(
        nn_mod.Linear(4, 8),
        nn_mod.ReLU(),
        nn_mod.GELU(),
        nn_mod.Dropout(0.1),
        nn_mod.LayerNorm(8),
        nn_mod.Sequential(nn_mod.Tanh(), nn_mod.Sigmoid(), nn_mod.Flatten()),
        nn_mod.Embedding(10, 3, padding_idx=0),
        nn_mod.Linear(8, 2, bias=False),
        nn_mod.CrossEntropyLoss(),
        nn_mod.MSELoss(),
    )


def test_repr():
    assert repr(_build(nn)) == EXPECTED_REPR


def test_repr_matches_torch(torch):
    assert repr(_build(nn)) == repr(_build(torch.nn))
