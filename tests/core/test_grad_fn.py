"""`grad_fn` as PyTorch shows it: names, `next_functions`, AccumulateGrad, metadata."""

from __future__ import annotations

import gc
import weakref

import pytest
from autograd_async.graph import ACCUMULATE_GRAD_SEQUENCE_NR, AccumulateGrad

import autograd_async as aa

from .helpers import structure

ACC = ("AccumulateGrad", ())
VIEW_OF_LEAF = ("ViewBackward0", ((ACC, 0),))

# Each expression on x = [1, 2, 3] and w = [4, 5, 6] (both require grad), with the graph PyTorch
# builds for it: node names and `next_functions` ((node, input_nr), ...), (None, 0) for an operand
# that is not differentiable.
EXPRESSIONS = {
    "add": (lambda x, w: x + w, ("AddBackward0", ((ACC, 0), (ACC, 0)))),
    "add_scalar": (lambda x, w: x + 1, ("AddBackward0", ((ACC, 0), (None, 0)))),
    "sub": (lambda x, w: x - w, ("SubBackward0", ((ACC, 0), (ACC, 0)))),
    "mul": (lambda x, w: x * w, ("MulBackward0", ((ACC, 0), (ACC, 0)))),
    "mul_scalar": (lambda x, w: x * 2, ("MulBackward0", ((ACC, 0), (None, 0)))),
    "mul_detached": (lambda x, w: x * w.detach(), ("MulBackward0", ((ACC, 0), (None, 0)))),
    "div": (lambda x, w: x / w, ("DivBackward0", ((ACC, 0), (ACC, 0)))),
    "div_scalar": (lambda x, w: x / 2, ("DivBackward0", ((ACC, 0), (None, 0)))),
    "pow_tensor": (lambda x, w: x**w, ("PowBackward1", ((ACC, 0), (ACC, 0)))),
    "neg": (lambda x, w: -x, ("NegBackward0", ((ACC, 0),))),
    "tanh": (lambda x, w: x.tanh(), ("TanhBackward0", ((ACC, 0),))),
    "exp": (lambda x, w: x.exp(), ("ExpBackward0", ((ACC, 0),))),
    "relu": (lambda x, w: x.relu(), ("ReluBackward0", ((ACC, 0),))),
    "sum": (lambda x, w: x.sum(), ("SumBackward0", ((ACC, 0),))),
    "sum_dim": (lambda x, w: x.sum(0), ("SumBackward1", ((ACC, 0),))),
    "mean": (lambda x, w: x.mean(), ("MeanBackward0", ((ACC, 0),))),
    "reshape": (lambda x, w: x.reshape(3, 1), ("ViewBackward0", ((ACC, 0),))),
    "select": (lambda x, w: x[0], ("SelectBackward0", ((ACC, 0),))),
    "slice": (lambda x, w: x[1:], ("SliceBackward0", ((ACC, 0),))),
    "dot": (lambda x, w: x @ w, ("DotBackward0", ((ACC, 0), (ACC, 0)))),
    "mm": (
        lambda x, w: x.reshape(3, 1) @ w.reshape(1, 3),
        ("MmBackward0", ((VIEW_OF_LEAF, 0), (VIEW_OF_LEAF, 0))),
    ),
    "chain": (
        lambda x, w: (x * w).tanh().sum(),
        ("SumBackward0", ((("TanhBackward0", ((("MulBackward0", ((ACC, 0), (ACC, 0))), 0),)), 0),)),
    ),
}

# Reflected operators with a Python number: PyTorch keeps the tensor as input 0 and drops the
# number from the edges (`2 - x` is RsubBackward1 with one edge, `2 / x` is reciprocal then mul).
REFLECTED = {
    "radd": (lambda x, w: 1 + x, ("AddBackward0", ((ACC, 0), (None, 0)))),
    "rmul": (lambda x, w: 2 * x, ("MulBackward0", ((ACC, 0), (None, 0)))),
    "rsub": (lambda x, w: 2 - x, ("RsubBackward1", ((ACC, 0),))),
    "pow_scalar": (lambda x, w: x**2, ("PowBackward0", ((ACC, 0),))),
    "rpow": (lambda x, w: 2**x, ("PowBackward2", ((ACC, 0),))),
    "rdiv": (
        lambda x, w: 2 / x,
        ("MulBackward0", ((("ReciprocalBackward0", ((ACC, 0),)), 0), (None, 0))),
    ),
}


def _inputs(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = lib.tensor([4.0, 5.0, 6.0], requires_grad=True)
    return x, w


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_graph_structure(name):
    fn, expected = EXPRESSIONS[name]
    assert structure(fn(*_inputs(aa)).grad_fn) == expected


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_graph_structure_is_pytorchs(torch, name):
    fn, expected = EXPRESSIONS[name]
    assert structure(fn(*_inputs(torch)).grad_fn) == expected


@pytest.mark.parametrize("name", REFLECTED)
def test_reflected_operator_structure(name):
    fn, expected = REFLECTED[name]
    assert structure(fn(*_inputs(aa)).grad_fn) == expected


@pytest.mark.parametrize("name", REFLECTED)
def test_reflected_operator_structure_is_pytorchs(torch, name):
    fn, expected = REFLECTED[name]
    assert structure(fn(*_inputs(torch)).grad_fn) == expected


def test_name_and_repr():
    x = aa.tensor([1.0], requires_grad=True)
    y = x * 2
    assert y.grad_fn.name() == "MulBackward0"
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    assert repr(y) == "tensor([2.], grad_fn=<MulBackward0>)"


def test_leaves_and_non_differentiable_tensors_have_no_grad_fn():
    x = aa.tensor([1.0], requires_grad=True)
    c = aa.tensor([1.0])
    assert x.grad_fn is None and x.is_leaf and x.requires_grad
    assert (c * 2).grad_fn is None and (c * 2).is_leaf
    assert (x * 2).is_leaf is False
    assert (x * c).requires_grad and not (c * c).requires_grad


def test_accumulate_grad_is_shared_by_every_use_of_a_leaf():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    a, b = x * 2, x.tanh()
    acc = a.grad_fn.next_functions[0][0]
    assert isinstance(acc, AccumulateGrad)
    assert b.grad_fn.next_functions[0][0] is acc
    assert acc.variable is x
    assert acc.next_functions == ()
    assert acc.name() == "AccumulateGrad"
    assert acc._sequence_nr() == ACCUMULATE_GRAD_SEQUENCE_NR == 2**64 - 1


def test_accumulate_grad_sequence_nr_is_pytorchs(torch):
    x = torch.tensor([1.0], requires_grad=True)
    acc = (x * 2).grad_fn.next_functions[0][0]
    assert acc._sequence_nr() == ACCUMULATE_GRAD_SEQUENCE_NR
    assert acc.variable is x


def test_a_new_accumulator_is_made_once_the_old_graph_is_gone():
    x = aa.tensor([1.0], requires_grad=True)
    y = x * 2
    first = weakref.ref(y.grad_fn.next_functions[0][0])
    del y
    gc.collect()
    assert first() is None  # the leaf holds its accumulator weakly, as PyTorch's does
    z = x * 3
    again = z.grad_fn.next_functions[0][0]
    assert again.variable is x
    assert (x + z).grad_fn.next_functions[0][0] is again


def test_multi_output_node_has_one_grad_fn_with_output_numbers():
    x = aa.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    lo, hi = x.split(2)
    assert lo.grad_fn is hi.grad_fn
    assert lo.grad_fn.name() == "SplitBackward0"
    assert (lo * hi).grad_fn.next_functions == ((lo.grad_fn, 0), (lo.grad_fn, 1))


def test_multi_output_structure_is_pytorchs(torch):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    lo, hi = x.split(2)
    assert lo.grad_fn.name() == "SplitBackward0"
    assert (lo * hi).grad_fn.next_functions == ((lo.grad_fn, 0), (lo.grad_fn, 1))


def test_metadata_is_a_dict_for_the_user():
    x = aa.tensor([1.0], requires_grad=True)
    node = (x * 2).grad_fn
    assert node.metadata == {}
    node.metadata["tag"] = "mine"
    assert node.metadata is node.metadata and node.metadata["tag"] == "mine"
    acc = node.next_functions[0][0]
    acc.metadata["leaf"] = True
    assert acc.metadata == {"leaf": True}


def test_nodes_carry_their_device():
    x = aa.tensor([1.0], device="sim:0", requires_grad=True)
    y = x * 2
    assert str(y.grad_fn.device) == "sim:0"
    assert str(y.grad_fn.next_functions[0][0].device) == "sim:0"


def test_no_graph_under_no_grad_and_detach():
    x = aa.tensor([1.0], requires_grad=True)
    with aa.no_grad():
        y = x * 2
    assert y.grad_fn is None and not y.requires_grad
    d = (x * 2).detach()
    assert d.grad_fn is None and not d.requires_grad and d.is_leaf


def test_next_functions_can_be_replaced_and_read_back_as_pairs():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    w = aa.tensor([3.0, 4.0], requires_grad=True)
    node = (x * w).grad_fn
    acc_x, acc_w = (edge[0] for edge in node.next_functions)
    assert node.next_functions == ((acc_x, 0), (acc_w, 0))
    node.next_functions = ((acc_w, 0), (None, 0))
    assert node.next_functions == ((acc_w, 0), (None, 0))
    assert all(type(edge) is tuple for edge in node.next_functions)


def test_a_recorded_op_keeps_few_objects_for_the_collector():
    # Every object a recorded node keeps alive is visited by each full collection for as long as
    # the graph lives: per step of a mul-add-tanh chain, the three nodes, their three edge
    # tuples and tanh's weak reference to its saved output. A tuple per edge (four more per step)
    # or per saved tensor would show here.
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    steps = 300
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(steps):
        h = (h * 1.0001 + x).tanh()
    gc.collect()
    per_step = (len(gc.get_objects()) - before) / steps
    assert per_step < 7.5, per_step
    h.sum().backward()
    assert x.grad is not None
