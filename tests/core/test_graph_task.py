"""The graph-task core without threads: dependencies, input buffers, exec_info, evaluate, checks.

Graphs are built with real ops; a dozen-line synchronous driver (`drive`) plays the engine's part,
so each step of the bookkeeping is observable: nothing here starts a worker.
"""

from __future__ import annotations

import itertools
from heapq import heappop, heappush

import numpy as np
import pytest
from autograd_async.graph import AccumulateGrad, grad_accumulator
from autograd_async.ops.base import RELEASED_MESSAGE

import autograd_async as aa
from autograd_async.autograd.api import prepare
from autograd_async.graph_task import (
    GraphRoot,
    GraphTask,
    check_nan,
    compute_dependencies,
    compute_exec_info,
    materialize,
    validate_outputs,
)

from .helpers import node_name


def drive(task: GraphTask, starts: list) -> list[str]:
    """Run `task` to completion on this thread, in the engine's order; return the nodes run."""
    ready: list = []
    tick = itertools.count()
    ran: list[str] = []

    def arrive(node, nr, grad) -> None:
        inputs = task.deposit(node, nr, grad)
        if inputs is not None:
            heappush(ready, (-node._seq, next(tick), node, inputs))

    for node, nr, grad in starts:
        arrive(node, nr, grad)
    while ready:
        _, _, node, inputs = heappop(ready)
        outputs = task.evaluate(node, inputs)
        ran.append(node_name(node))
        for (nxt, nr), g in zip(node.next_functions, outputs):
            if nxt is not None:
                arrive(nxt, nr, g)
    return ran


def diamond():
    """x -> a = x * 2 -> (tanh(a), exp(a)) -> y = sum(tanh + exp); gradients in float64."""
    x = aa.tensor([0.5, -1.0, 2.0], dtype=aa.float64, requires_grad=True)
    a = x * 2
    y = (a.tanh() + a.exp()).sum()
    return x, a, y


def expected_diamond_grad(x: np.ndarray) -> np.ndarray:
    a = 2 * x
    return 2 * ((1 - np.tanh(a) ** 2) + np.exp(a))


# --------------------------------------------------------------- dependencies
def test_dependencies_count_the_edges_into_each_node():
    x, a, y = diamond()
    deps = compute_dependencies(y.grad_fn)
    by_name = {node_name(n): count for n, count in deps.items()}
    assert by_name == {
        "AddBackward0": 1,
        "TanhBackward0": 1,
        "ExpBackward0": 1,
        "MulBackward0": 2,  # reached through tanh and through exp
        "AccumulateGrad": 1,
    }
    assert y.grad_fn not in deps  # the root's one dependency is the caller's gradient
    assert deps[grad_accumulator(x)] == 1


def test_dependencies_count_an_input_used_twice_as_two_edges():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    deps = compute_dependencies(y.grad_fn)
    assert deps[grad_accumulator(x)] == 2
    assert y.grad_fn.next_functions[0][0].next_functions == (
        (grad_accumulator(x), 0),
        (grad_accumulator(x), 0),
    )


def test_dependencies_walk_deep_graphs_without_recursion():
    x = aa.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    deps = compute_dependencies(y.grad_fn)
    assert len(deps) == 5000  # 4,999 MulBackward0 below the root, and the accumulator
    assert set(deps.values()) == {1}


# --------------------------------------------------------------------- deposit
def _task_for(y: aa.Tensor, **kwargs) -> GraphTask:
    task = GraphTask(y.grad_fn, keep_graph=kwargs.pop("keep_graph", False), create_graph=False)
    task.dependencies[y.grad_fn] = 1
    return task


def test_deposit_passes_a_single_arrival_through_without_a_buffer():
    x, a, y = diamond()
    task = _task_for(y)
    g = np.ones(3)
    tanh_node = y.grad_fn.next_functions[0][0].next_functions[0][0]
    inputs = task.deposit(tanh_node, 0, g)
    assert inputs == [g] and inputs[0] is g  # stored without a copy
    assert task.buffers == {}
    assert tanh_node not in task.dependencies  # counted down and dropped


def test_deposit_buffers_until_the_last_arrival_then_sums():
    x, a, y = diamond()
    task = _task_for(y)
    mul = a.grad_fn
    assert task.dependencies[mul] == 2
    first, second = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])
    assert task.deposit(mul, 0, first) is None
    assert task.dependencies[mul] == 1
    assert task.buffers[mul][0] is first  # held, not copied
    inputs = task.deposit(mul, 0, second)
    np.testing.assert_array_equal(inputs[0], [11.0, 22.0, 33.0])
    np.testing.assert_array_equal(first, [1.0, 2.0, 3.0])  # summed out of place
    assert mul not in task.buffers and mul not in task.dependencies


def test_deposit_of_none_still_counts_the_edge():
    x, a, y = diamond()
    task = _task_for(y)
    mul = a.grad_fn
    assert task.deposit(mul, 0, None) is None
    g = np.ones(3)
    assert task.deposit(mul, 0, g)[0] is g


def test_deposit_fills_the_slot_of_each_output_of_a_multi_output_node():
    x = aa.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    lo, hi = x.split(2)
    assert lo.grad_fn is hi.grad_fn and (lo._output_nr, hi._output_nr) == (0, 1)
    y = (lo * 3).sum() + (hi * 5).sum()
    task = _task_for(y)
    split = lo.grad_fn
    assert task.dependencies[split] == 2
    g_hi = np.full(2, 5.0, dtype=np.float32)
    assert task.deposit(split, 1, g_hi) is None
    assert task.buffers[split] == [None, g_hi]
    g_lo = np.full(2, 3.0, dtype=np.float32)
    inputs = task.deposit(split, 0, g_lo)
    assert inputs[0] is g_lo and inputs[1] is g_hi


def test_a_multi_output_node_reached_once_gets_none_in_its_other_slots():
    x = aa.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    lo, _hi = x.split(2)
    y = lo.sum()
    task = _task_for(y)
    g = np.ones(2, dtype=np.float32)
    assert task.deposit(lo.grad_fn, 0, g) == [g, None]


# ------------------------------------------------------------------- exec_info
def test_exec_info_marks_only_nodes_on_a_path_to_a_capture():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    w = aa.tensor([3.0, 4.0], requires_grad=True)
    a = x * 2
    y = a.tanh().sum() + (w * 3).sum()
    captures = {a.grad_fn: [(0, 0)]}
    needed = compute_exec_info(y.grad_fn, captures, run_targets=False)
    named = {}
    for node, flag in needed.items():
        named.setdefault(node_name(node), []).append(flag)
    assert named["AddBackward0"] == [True]
    assert named["TanhBackward0"] == [True]
    assert sorted(named["SumBackward0"]) == [False, True]  # the w branch leads nowhere
    assert sorted(named["MulBackward0"]) == [False, False]  # the target itself does not run
    assert named["AccumulateGrad"] == [False, False]


def test_exec_info_runs_leaf_targets_for_backward_with_inputs():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    w = aa.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    acc_x, acc_w = grad_accumulator(x), grad_accumulator(w)
    needed = compute_exec_info(y.grad_fn, {acc_x: [(0, 0)]}, run_targets=True)
    assert needed[acc_x] is True and needed[acc_w] is False
    assert needed[y.grad_fn] is True
    needed = compute_exec_info(y.grad_fn, {acc_x: [(0, 0)]}, run_targets=False)
    assert needed[acc_x] is False


def test_exec_info_walks_deep_graphs_without_recursion():
    x = aa.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    needed = compute_exec_info(y.grad_fn, {grad_accumulator(x): [(0, 0)]}, run_targets=False)
    assert sum(needed.values()) == 5000  # every MulBackward0, the root included
    assert needed[grad_accumulator(x)] is False


# -------------------------------------------------------------------- evaluate
def test_a_driven_backward_accumulates_the_analytic_gradient_and_frees_the_graph():
    x, a, y = diamond()
    prepared = prepare(y, None, None, False, None, "backward")
    ran = drive(prepared.task, prepared.starts)
    assert ran[0] == "SumBackward0" and ran[-1] == "AccumulateGrad"
    assert sorted(ran) == sorted(
        [
            "SumBackward0",
            "AddBackward0",
            "TanhBackward0",
            "ExpBackward0",
            "MulBackward0",
            "AccumulateGrad",
        ]
    )
    np.testing.assert_allclose(x.grad.detach().__array__(), expected_diamond_grad(x._data))
    assert prepared.task.dependencies == {} and prepared.task.buffers == {}
    assert a.grad_fn._released and y.grad_fn._released
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        drive(
            prepare(y, None, None, False, None, "backward").task,
            prepare(y, None, True, False, None, "backward").starts,
        )


def test_a_driven_backward_with_retain_graph_keeps_saved_tensors():
    x, a, y = diamond()
    for _ in range(2):
        prepared = prepare(y, None, True, False, None, "backward")
        drive(prepared.task, prepared.starts)
    assert not a.grad_fn._released
    np.testing.assert_allclose(x.grad.detach().__array__(), 2 * expected_diamond_grad(x._data))


def test_evaluate_on_a_freed_node_raises_pytorch_message():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    task = GraphTask(y.grad_fn, keep_graph=False, create_graph=False)
    mul = y.grad_fn.next_functions[0][0]
    task.evaluate(mul, [np.ones(2, np.float32)])
    assert mul._released
    with pytest.raises(RuntimeError) as info:
        task.evaluate(mul, [np.ones(2, np.float32)])
    assert str(info.value) == RELEASED_MESSAGE


def test_a_driven_grad_runs_only_what_leads_to_the_inputs_and_captures():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    w = aa.tensor([3.0, 4.0], requires_grad=True)
    a = x * 2
    b_sum = (w * 3).sum()
    y = a.tanh().sum() + b_sum
    prepared = prepare(y, None, None, False, [a], "grad")
    task = prepared.task
    ran = drive(task, prepared.starts)
    # The root hands a gradient to both branches; w's SumBackward0 is not needed, so evaluating
    # it returns nothing and nothing below it is reached. The target's node is evaluated only to
    # capture its gradient.
    assert ran == ["AddBackward0", "SumBackward0", "TanhBackward0", "SumBackward0", "MulBackward0"]
    assert task.evaluate(b_sum.grad_fn, [np.ones((), np.float32)]) == ()
    (captured,) = prepared.result()
    np.testing.assert_allclose(
        captured.__array__(), 1 - np.tanh(2 * np.array([1.0, 2.0])) ** 2, rtol=1e-3
    )
    assert x.grad is None and w.grad is None
    assert not a.grad_fn._released  # never ran, so nothing was freed
    assert b_sum.grad_fn._released is False


def test_graph_root_hands_each_root_its_gradient():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y1, y2 = (x * 2).sum(), (x * 3).sum()
    prepared = prepare([y1, y2], None, None, False, None, "backward")
    root = prepared.task.root
    assert isinstance(root, GraphRoot) and root.runs_without_grad
    assert root.next_functions == ((y1.grad_fn, 0), (y2.grad_fn, 0))
    ran = drive(prepared.task, prepared.starts)
    assert ran[0] == "GraphRoot"
    np.testing.assert_array_equal(x.grad.__array__(), [5.0, 5.0])


def test_evaluate_reports_an_incorrect_number_of_gradients():
    class Two(aa.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return g

    x = aa.tensor([1.0], requires_grad=True)
    node = Two.apply(x).grad_fn
    node.next_functions = node.next_functions * 2  # a node that promised two gradients
    task = GraphTask(node, keep_graph=False, create_graph=False)
    with pytest.raises(
        RuntimeError,
        match=r"function TwoBackward returned an incorrect number of gradients "
        r"\(expected 2, got 1\)",
    ):
        task.evaluate(node, [np.ones(1, np.float32)])


# ---------------------------------------------------------------------- checks
def test_validate_outputs_reduces_broadcast_gradients_and_casts_to_the_input_dtype():
    x = aa.tensor([[1.0], [2.0]], dtype=aa.float32, requires_grad=True)  # (2, 1)
    y = x + aa.tensor([1.0, 2.0, 3.0])  # (2, 3)
    g = np.ones((2, 3), dtype=np.float64)
    (gx, _) = validate_outputs(y.grad_fn, (g, None), create_graph=False)
    assert gx.shape == (2, 1) and gx.dtype == np.float32
    np.testing.assert_array_equal(gx, [[3.0], [3.0]])


def test_validate_outputs_rejects_an_incompatible_shape():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(
        RuntimeError,
        match=r"^Function MulBackward0 returned an invalid gradient at index 0 - got \[3\] but "
        r"expected shape compatible with \[2\]$",
    ):
        validate_outputs(y.grad_fn, (np.ones(3, np.float32), None), create_graph=False)


def test_validate_outputs_wraps_arrays_as_tensors_for_create_graph():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    (gx, _) = validate_outputs(y.grad_fn, (np.ones(2, np.float32), None), create_graph=True)
    assert isinstance(gx, aa.Tensor)


def test_materialize_fills_missing_gradients_with_zeros_of_each_output():
    x = aa.tensor([1.0, 2.0, 3.0], requires_grad=True)
    lo, hi = x.split([1, 2])
    filled = materialize(lo.grad_fn, [None, np.ones(2, np.float32)], create_graph=False)
    np.testing.assert_array_equal(filled[0], np.zeros(1, np.float32))
    assert filled[0].dtype == np.float32


def test_check_nan_names_the_node_and_output():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    check_nan(y.grad_fn, (np.ones(2), None))
    with pytest.raises(
        RuntimeError, match=r"^Function 'MulBackward0' returned nan values in its 1th output\.$"
    ):
        check_nan(y.grad_fn, (np.ones(2), np.array([0.0, np.nan])))


# ------------------------------------------------------------------ accounting
def test_task_accounting_and_first_error_wins():
    x = aa.tensor([1.0], requires_grad=True)
    task = GraphTask(grad_accumulator(x), keep_graph=False, create_graph=False)
    assert isinstance(task.root, AccumulateGrad)
    assert task.add_outstanding(2) is False
    assert task.add_outstanding(-1) is False
    assert task.add_outstanding(-1) is True
    first, second = ValueError("first"), ValueError("second")
    assert task.fail(first) is True
    assert task.fail(second) is False and task.complete() is False
    assert task.error is first and task.finished


def test_task_ids_increase():
    x = aa.tensor([1.0], requires_grad=True)
    a = GraphTask(grad_accumulator(x), keep_graph=False, create_graph=False)
    b = GraphTask(grad_accumulator(x), keep_graph=False, create_graph=False)
    assert b.id > a.id
