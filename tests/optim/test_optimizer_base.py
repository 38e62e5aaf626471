"""The Optimizer base as PyTorch's: step, state-dict and load hooks (own and global), named
parameters, add_param_group and zero_grad for every optimizer."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import optim
from autograd_async.nn import Parameter
from autograd_async.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

ALL = [n for n in optim.__all__ if n[0].isupper() and n != "Optimizer"]


def _closure(params):
    def closure():
        for p in params:
            p.grad = None
        loss = sum(((p - 1.0) ** 2).sum() for p in params)
        loss.backward()
        return loss

    return closure


def _events(lib, opt_cls, params, log):
    opt = opt_cls(params)
    handles = [
        opt.register_step_pre_hook(lambda o, a, k: log.append("pre")),
        opt.register_step_post_hook(lambda o, a, k: log.append("post")),
        opt.register_state_dict_pre_hook(lambda o: log.append("sd-pre")),
        opt.register_state_dict_post_hook(lambda o, sd: log.append("sd-post")),
        opt.register_state_dict_pre_hook(lambda o: log.append("sd-pre-first"), prepend=True),
        opt.register_load_state_dict_pre_hook(lambda o, sd: log.append("load-pre")),
        opt.register_load_state_dict_post_hook(lambda o: log.append("load-post")),
    ]
    return opt, handles


def test_hooks_fire_in_torchs_order(torch):
    logs = {}
    for lib, make in (
        (torch, lambda: torch.nn.Parameter(torch.ones(2))),
        (aa, lambda: Parameter(aa.ones(2))),
    ):
        log = logs[lib.__name__] = []
        opt_module = torch.optim if lib is torch else optim
        params = [make()]
        opt, handles = _events(lib, opt_module.Adam, params, log)
        glob = [
            importlib.import_module(
                opt_module.__name__ + ".optimizer"
            ).register_optimizer_step_pre_hook(lambda o, a, k, log=log: log.append("global-pre")),
            importlib.import_module(
                opt_module.__name__ + ".optimizer"
            ).register_optimizer_step_post_hook(lambda o, a, k, log=log: log.append("global-post")),
        ]
        params[0].grad = lib.ones(2)
        opt.step()
        opt.load_state_dict(opt.state_dict())
        for h in handles + glob:
            h.remove()
        opt.step()
        opt.state_dict()
    assert logs["autograd_async"] == logs["torch"]
    assert logs["torch"][:4] == ["global-pre", "pre", "post", "global-post"]


def test_step_pre_hook_can_replace_arguments():
    p = Parameter(aa.tensor([3.0]))
    opt = optim.SGD([p], lr=0.5)
    seen = []
    opt.register_step_pre_hook(lambda o, args, kwargs: ((), {"closure": _closure([p])}))
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append(sorted(kwargs)))
    loss = opt.step()
    assert float(loss) == 4.0 and seen == [["closure"]]
    np.testing.assert_allclose(np.asarray(p.detach()), [1.0])  # 3 - 0.5 * 2 * (3 - 1)
    opt.register_step_pre_hook(lambda o, args, kwargs: "nonsense")
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()


def test_a_subclass_step_calling_its_parents_runs_hooks_once():
    class Clipped(optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    p = Parameter(aa.ones(1))
    opt = Clipped([p], lr=0.1)
    log = []
    opt.register_step_pre_hook(lambda *a: log.append("pre"))
    p.grad = aa.ones(1)
    opt.step()
    assert log == ["pre"]


def test_state_dict_post_hook_may_replace_and_load_pre_hook_may_rewrite():
    p = Parameter(aa.ones(1))
    opt = optim.SGD([p], lr=0.1)
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1

    def halve(o, sd):
        groups = [{**g, "lr": g["lr"] / 2} for g in sd["param_groups"]]
        return {"state": sd["state"], "param_groups": groups}

    opt.register_load_state_dict_pre_hook(halve)
    opt.load_state_dict(opt.state_dict())
    assert opt.param_groups[0]["lr"] == 0.05


def test_named_parameters_like_torch(torch):
    ours = optim.Adam([("w", Parameter(aa.ones(2))), ("b", Parameter(aa.zeros(1)))])
    theirs = torch.optim.Adam(
        [("w", torch.nn.Parameter(torch.ones(2))), ("b", torch.nn.Parameter(torch.zeros(1)))]
    )
    assert ours.param_groups[0]["param_names"] == ["w", "b"]
    assert (
        ours.state_dict()["param_groups"][0]["param_names"]
        == (theirs.state_dict()["param_groups"][0]["param_names"])
    )
    for make in (
        lambda lib, P: lib([("w", P()), P()]),
        lambda lib, P: lib([("w", P())]).add_param_group({"params": [P()]}),
    ):
        with pytest.raises(ValueError) as expected:
            make(torch.optim.SGD, lambda: torch.nn.Parameter(torch.ones(1)))
        with pytest.raises(ValueError) as got:
            make(optim.SGD, lambda: Parameter(aa.ones(1)))
        assert str(got.value) == str(expected.value)


def test_duplicate_parameters_warn_like_torch():
    p = Parameter(aa.ones(1))
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p], lr=0.1)


@pytest.mark.parametrize("name", ALL)
def test_every_optimizer_has_the_base_surface(name):
    a, b = Parameter(aa.ones(2, 2)), Parameter(aa.ones(2, 2))
    if name == "LBFGS":
        opt = optim.LBFGS([a, b])
        opt.step(_closure([a, b]))
    else:
        opt = getattr(optim, name)([a])
        opt.add_param_group({"params": [b], "lr": 0.5})
        assert opt.param_groups[1]["lr"] == 0.5
        assert set(opt.param_groups[1]) == set(opt.param_groups[0])
        calls = []
        opt.register_step_post_hook(lambda *args: calls.append(1))
        a.grad, b.grad = aa.ones(2, 2), aa.ones(2, 2)
        opt.step()
        assert calls == [1]
        assert not np.array_equal(np.asarray(b.detach()), np.ones((2, 2)))
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(np.asarray(a.grad), np.zeros((2, 2)))
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    assert name in repr(opt)


def test_global_hooks_are_removable():
    seen = []
    handle = register_optimizer_step_pre_hook(lambda o, a, k: seen.append(type(o).__name__))
    other = register_optimizer_step_post_hook(lambda o, a, k: seen.append("post"))
    p = Parameter(aa.ones(1))
    p.grad = aa.ones(1)
    optim.Rprop([p]).step()
    handle.remove()
    other.remove()
    optim.Rprop([p]).step()
    assert seen == ["Rprop", "post"]


def test_differentiable_accepts_non_leaf_like_torch(torch):
    x = aa.ones(2, requires_grad=True) * 2
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([x], lr=0.1)
    optim.SGD([x], lr=0.1, differentiable=True)
    torch.optim.SGD([torch.ones(2, requires_grad=True) * 2], lr=0.1, differentiable=True)


def _cloned_state_dict(lib, opt):
    saved = opt.state_dict()
    clone = (lambda t: t.clone()) if lib is not aa else (lambda t: t.detach().clone())
    state = {
        k: {n: clone(v) if hasattr(v, "shape") else v for n, v in entry.items()}
        for k, entry in saved["state"].items()
    }
    return {"state": state, "param_groups": [dict(g) for g in saved["param_groups"]]}


def test_swap_in_params_and_state_like_torch(torch):
    results = {}
    for lib in (torch, aa):
        opt_module = torch.optim if lib is torch else optim
        make = (
            (lambda v: torch.nn.Parameter(torch.tensor(v)))
            if lib is torch
            else (lambda v: Parameter(aa.tensor(v)))
        )
        live = [make([1.0, 2.0]), make([3.0])]
        opt = opt_module.Adam(live, lr=0.1)
        for p in live:
            p.grad = lib.ones_like(p)
        opt.step()
        osd = _cloned_state_dict(lib, opt)
        osd["param_groups"][0]["lr"] = 0.5
        swapped = {"a": make([10.0, 20.0]), "b": make([30.0])}
        for p in swapped.values():
            p.grad = lib.ones_like(p)
        before = [np.asarray(p.detach()).copy() for p in live]
        with opt_module.swap_in_optimizer_params_and_state(opt, swapped, osd):
            opt.step()
        assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"] == live
        for p, b in zip(live, before, strict=True):
            np.testing.assert_array_equal(np.asarray(p.detach()), b)
        results[lib.__name__] = (
            [np.asarray(p.detach()) for p in swapped.values()],
            float(osd["state"][0]["step"]),
        )
    for ours, theirs in zip(results["autograd_async"][0], results["torch"][0], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert results["autograd_async"][1] == results["torch"][1] == 2.0


def test_swap_in_refuses_what_torch_refuses(torch):
    for lib in (torch, aa):
        opt_module = torch.optim if lib is torch else optim
        p = torch.nn.Parameter(torch.ones(1)) if lib is torch else Parameter(aa.ones(1))
        opt = opt_module.SGD([p], lr=0.1, momentum=0.9)
        with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
            with opt_module.swap_in_optimizer_params_and_state(opt, {"p": p}, opt.state_dict()):
                pass
        p.grad = lib.ones_like(p)
        opt.step()
        bad = opt.state_dict()
        bad = {"state": bad["state"], "param_groups": [{**bad["param_groups"][0], "x": 1}]}
        with pytest.raises(RuntimeError, match="Keys only in swap-in: \\['x'\\]"):
            with opt_module.swap_in_optimizer_params_and_state(opt, {"p": p}, bad):
                pass
