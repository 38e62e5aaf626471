"""validate_args: PyTorch's ValueErrors for parameters outside their constraints and values
outside the support or of the wrong shape, `set_default_validate_args`, and the constructors'
own argument errors."""

from __future__ import annotations

import re

import pytest

import autograd_async as aa

D = aa.distributions


def _normalised(message: str) -> str:
    """A message with PyTorch's spellings of sizes and dtypes made neutral."""
    message = re.sub(r"torch\.Size\(\[([^\]]*)\]\)", lambda m: f"({m.group(1)})", message)
    message = re.sub(r"\((\d+)\)", r"(\1,)", message)
    return message.replace("torch.", "")


def _error(make):
    with pytest.raises(Exception) as info:
        make()
    return type(info.value), _normalised(str(info.value))


CASES = {
    "scale <= 0": lambda lib: lib.distributions.Normal(lib.tensor([0.0]), lib.tensor([-1.0])),
    "nan value": lambda lib: lib.distributions.Normal(0.0, 1.0).log_prob(lib.tensor(float("nan"))),
    "neither probs nor logits": lambda lib: lib.distributions.Bernoulli(),
    "both probs and logits": lambda lib: lib.distributions.Categorical(
        probs=lib.tensor([0.5, 0.5]), logits=lib.tensor([0.0, 0.0])
    ),
    "probs above one": lambda lib: lib.distributions.Bernoulli(probs=lib.tensor([1.5])),
    "negative rate value": lambda lib: lib.distributions.Exponential(lib.tensor([1.0])).log_prob(
        lib.tensor([-1.0])
    ),
    "value of wrong batch shape": lambda lib: lib.distributions.Normal(lib.zeros(3), 1.0).log_prob(
        lib.zeros(2)
    ),
    "value of wrong event shape": lambda lib: lib.distributions.Dirichlet(lib.ones(3)).log_prob(
        lib.tensor([0.5, 0.5])
    ),
    "no covariance": lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2)),
    "uniform low above high": lambda lib: lib.distributions.Uniform(
        lib.tensor([1.0]), lib.tensor([0.0])
    ),
    "value not a tensor": lambda lib: lib.distributions.Normal(0.0, 1.0).log_prob(1.0),
    "non-integer count": lambda lib: lib.distributions.Poisson(lib.tensor([1.0])).log_prob(
        lib.tensor([0.5])
    ),
    "0-d concentration": lambda lib: lib.distributions.Dirichlet(lib.tensor(1.0)),
    "simplex": lambda lib: lib.distributions.Dirichlet(lib.ones(3)).log_prob(
        lib.tensor([0.5, 0.6, 0.1])
    ),
    "geometric p = 0": lambda lib: lib.distributions.Geometric(probs=lib.tensor([0.0, 0.5])),
    "loc 0-d": lambda lib: lib.distributions.MultivariateNormal(lib.tensor(0.0), lib.eye(1)),
    "cov_factor shape": lambda lib: lib.distributions.LowRankMultivariateNormal(
        lib.zeros(3), lib.zeros(2, 1), lib.ones(3)
    ),
    "independent ndims": lambda lib: lib.distributions.Independent(
        lib.distributions.Normal(lib.zeros(2), 1.0), 2
    ),
    "transforms not a list": lambda lib: lib.distributions.TransformedDistribution(
        lib.distributions.Normal(0.0, 1.0), 3
    ),
    "binomial value above count": lambda lib: lib.distributions.Binomial(
        5, probs=lib.tensor([0.5])
    ).log_prob(lib.tensor([6.0])),
    "lower cholesky": lambda lib: lib.distributions.MultivariateNormal(
        lib.zeros(2), scale_tril=lib.tensor([[1.0, 0.5], [0.0, 1.0]])
    ),
    "positive definite": lambda lib: lib.distributions.MultivariateNormal(
        lib.zeros(2), covariance_matrix=lib.tensor([[1.0, 2.0], [2.0, 1.0]])
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_errors_match_torch(torch, name):
    ours_type, ours_message = _error(lambda: CASES[name](aa))
    theirs_type, theirs_message = _error(lambda: CASES[name](torch))
    assert ours_type is theirs_type
    assert ours_message == theirs_message


def test_validation_can_be_turned_off_per_instance_and_by_default(torch):
    assert D.Normal(aa.tensor([0.0]), aa.tensor([-1.0]), validate_args=False).scale.item() == -1
    D.Normal(0.0, 1.0, validate_args=False).log_prob(aa.tensor(float("nan")))
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(aa.tensor([0.0]), aa.tensor([-1.0]))
        D.Exponential(aa.tensor([1.0])).log_prob(aa.tensor([-1.0]))
        assert D.Normal(0.0, 1.0, validate_args=True)._validate_args
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(aa.tensor([0.0]), aa.tensor([-1.0]))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args(3)


def test_expanded_distribution_keeps_its_validation():
    dist = D.Normal(aa.zeros(2), 1.0, validate_args=False).expand((3, 2))
    assert not dist._validate_args
    dist.log_prob(aa.full((3, 2), float("nan")))
    checked = D.Normal(aa.zeros(2), 1.0).expand((3, 2))
    with pytest.raises(ValueError, match="within the support"):
        checked.log_prob(aa.full((3, 2), float("nan")))


def test_custom_subclass_without_expand_refuses_like_torch():
    class Shifted(D.Normal):
        def __init__(self, loc):
            super().__init__(loc, 1.0)

    with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
        Shifted(aa.zeros(2)).expand((3, 2))


def test_distribution_without_constraints_warns():
    class Bare(D.Distribution):
        pass

    with pytest.warns(UserWarning, match="does not define `arg_constraints`"):
        Bare()
