"""nn.functional.multi_head_attention_forward against PyTorch's: outputs, weights and gradients
for inputs and every weight, with packed and separate projections, bias_k/bias_v, zero
attention, masks of each kind, static keys, unbatched input and need_weights off."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

RNG = np.random.default_rng(0)
L, S, N, E, H = 4, 5, 3, 6, 2


def _arrays(separate: bool, bias_kv: bool):
    arrays = {
        "query": RNG.standard_normal((L, N, E)),
        "key": RNG.standard_normal((S, N, E)),
        "value": RNG.standard_normal((S, N, E)),
        "in_proj_bias": RNG.standard_normal(3 * E),
        "out_proj_weight": RNG.standard_normal((E, E)),
        "out_proj_bias": RNG.standard_normal(E),
    }
    if separate:
        for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
            arrays[name] = RNG.standard_normal((E, E))
    else:
        arrays["in_proj_weight"] = RNG.standard_normal((3 * E, E))
    if bias_kv:
        arrays["bias_k"] = RNG.standard_normal((1, 1, E))
        arrays["bias_v"] = RNG.standard_normal((1, 1, E))
    return arrays


def _call(lib, tensors, masks, **options):
    made = {k: (lib.tensor(v) if v is not None else None) for k, v in masks.items()}
    args = dict(tensors)
    query, key, value = args.pop("query"), args.pop("key"), args.pop("value")
    defaults = {"in_proj_weight": None, "bias_k": None, "bias_v": None}
    for name, default in defaults.items():
        args.setdefault(name, default)
    return lib.nn.functional.multi_head_attention_forward(
        query,
        key,
        value,
        E,
        H,
        args.pop("in_proj_weight"),
        args.pop("in_proj_bias"),
        args.pop("bias_k"),
        args.pop("bias_v"),
        options.pop("add_zero_attn", False),
        0.0,
        args.pop("out_proj_weight"),
        args.pop("out_proj_bias"),
        use_separate_proj_weight="q_proj_weight" in args,
        **args,
        **made,
        **options,
    )


CASES = [
    (False, False, {}, {}),
    (True, False, {}, {"average_attn_weights": False}),
    (False, True, {"attn_mask": np.triu(np.ones((L, S), bool), 1)}, {}),
    (
        False,
        False,
        {
            "attn_mask": RNG.standard_normal((N * H, L, S)),
            "key_padding_mask": np.array([[0, 0, 0, 1, 1], [0] * 5, [0, 1, 0, 0, 0]], bool),
        },
        {"add_zero_attn": True},
    ),
    (
        True,
        True,
        {"key_padding_mask": np.array([[0, 0, 1, 1, 1], [0] * 5, [1, 0, 0, 0, 0]], bool)},
        {"need_weights": False},
    ),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_torch(torch, case) -> None:
    separate, bias_kv, masks, options = CASES[case]
    arrays = _arrays(separate, bias_kv)
    ours = {k: aa.tensor(v, requires_grad=True) for k, v in arrays.items()}
    theirs = {k: torch.tensor(v, requires_grad=True) for k, v in arrays.items()}
    out, weights = _call(aa, ours, masks, **dict(options))
    ref, ref_weights = _call(torch, theirs, masks, **dict(options))
    np.testing.assert_allclose(
        np.asarray(out.detach()), ref.detach().numpy(), rtol=1e-10, atol=1e-12
    )
    if ref_weights is None:
        assert weights is None
    else:
        np.testing.assert_allclose(
            np.asarray(weights.detach()), ref_weights.detach().numpy(), rtol=1e-10, atol=1e-12
        )
    g = RNG.standard_normal(tuple(ref.shape))
    out.backward(aa.tensor(g))
    ref.backward(torch.tensor(g))
    for name in arrays:
        np.testing.assert_allclose(
            np.asarray(ours[name].grad),
            theirs[name].grad.numpy(),
            rtol=1e-9,
            atol=1e-11,
            err_msg=name,
        )


def test_unbatched_and_static_keys_match_torch(torch) -> None:
    arrays = _arrays(False, False)
    static = RNG.standard_normal((N * H, S, E // H))
    for lib in (aa, torch):
        tensors = {k: lib.tensor(v) for k, v in arrays.items()}
        tensors["key"] = tensors["value"] = lib.tensor(arrays["key"])
        out, _ = _call(lib, tensors, {}, static_k=lib.tensor(static), static_v=lib.tensor(static))
        if lib is aa:
            ours = np.asarray(out)
        else:
            np.testing.assert_allclose(ours, out.numpy(), rtol=1e-10)
    for lib in (aa, torch):
        tensors = {k: lib.tensor(v) for k, v in arrays.items()}
        for name in ("query", "key", "value"):
            tensors[name] = tensors[name][:, 0]
        out, weights = _call(lib, tensors, {})
        if lib is aa:
            mine = (np.asarray(out), np.asarray(weights))
        else:
            np.testing.assert_allclose(mine[0], out.numpy(), rtol=1e-10)
            np.testing.assert_allclose(mine[1], weights.numpy(), rtol=1e-10)


@pytest.mark.parametrize("missing", ["in_proj_weight", "q_proj_weight", "v_proj_weight"])
def test_missing_projection_weight_is_refused_as_torch_does(torch, missing) -> None:
    # A projection weight the mode needs, given as None: PyTorch's AssertionError and message,
    # not an AttributeError from inside the projection.
    separate = missing != "in_proj_weight"  # _call picks the mode from q_proj_weight's key
    arrays = _arrays(separate, False)
    for lib in (aa, torch):
        tensors = {k: lib.tensor(v) for k, v in arrays.items()}
        tensors[missing] = None
        with pytest.raises(AssertionError, match=f"is {separate} but {missing} is None"):
            _call(lib, tensors, {})
