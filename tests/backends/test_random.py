"""Defect 5: random creation and dropout follow `aa.manual_seed` and `Generator` on every device.

Host-memory devices draw from the Generator's NumPy generator; every device of another type (a
GPU) draws from its own generator, seeded from the Generator's seed and the device index. The
second path is checked on cuda where there is a GPU, and everywhere through a device type
registered for the test whose memory is not the host's.
"""

from __future__ import annotations

import numpy as np
import pytest
from seeding import assert_follows_the_seed, host

import autograd_async as aa

from .helpers import run_json

DRAWS = {
    "rand": lambda d, g: aa.rand(5, device=d, generator=g),
    "randn": lambda d, g: aa.randn(2, 3, device=d, generator=g),
    "randint": lambda d, g: aa.randint(0, 100, (6,), device=d, generator=g),
    "randperm": lambda d, g: aa.randperm(7, device=d, generator=g),
    "normal_": lambda d, g: aa.nn.init.normal_(aa.empty(4, device=d), generator=g),
    "uniform_": lambda d, g: aa.nn.init.uniform_(aa.empty(4, device=d), generator=g),
}


@pytest.mark.parametrize("draw", sorted(DRAWS))
def test_the_same_seed_gives_the_same_values(device, draw):
    assert_follows_the_seed(DRAWS[draw], device)


def test_dropout_follows_the_seed(device):
    x = aa.ones(64, device=device)
    aa.manual_seed(3)
    first = host(aa.nn.functional.dropout(x, 0.5))
    aa.manual_seed(3)
    again = host(aa.nn.functional.dropout(x, 0.5))
    np.testing.assert_array_equal(first, again)
    assert set(np.unique(first)) <= {0.0, 2.0} and 0 < (first == 0).sum() < 64


def test_randperm_under_vmap_draws_one_permutation_per_example(device):
    # randomness="different" asks the draw for the batch shape first: randperm took that shape
    # for its length and failed (`'int' object is not iterable`) before drawing per example.
    rows = aa.zeros(6, 5, device=device)
    drawn = host(
        aa.func.vmap(lambda r: aa.randperm(5, device=device) + r, randomness="different")(rows)
    )
    assert drawn.shape == (6, 5)
    for row in drawn:
        assert sorted(row.tolist()) == [0, 1, 2, 3, 4]
    assert len({tuple(row) for row in drawn}) > 1  # 6 draws of 120 permutations: not all equal
    same = host(aa.func.vmap(lambda r: aa.randperm(5, device=device) + r, randomness="same")(rows))
    assert (same == same[0]).all() and sorted(same[0].tolist()) == [0, 1, 2, 3, 4]
    inner = aa.func.vmap(lambda r: aa.randperm(3) + r, randomness="different")
    nested = aa.func.vmap(inner, randomness="different")
    assert host(nested(aa.zeros(2, 4, 3))).shape == (2, 4, 3)


def test_the_same_seed_gives_the_same_values_on_cpu_and_sim():
    aa.manual_seed(11)
    on_cpu = host(aa.randn(8))
    aa.manual_seed(11)
    np.testing.assert_array_equal(on_cpu, host(aa.randn(8, device="sim:1")))


DEVICE_GENERATORS = r'''
import json

import numpy as np

import autograd_async as aa
from autograd_async.backends import SimBackend, backends


class OffHostSim(SimBackend):
    """Sim arrays, but drawn like a GPU's: one generator per device."""

    type = "offhost"
    host_memory = False
    seeds = []

    def random_state(self, device, seed):
        self.seeds.append((str(device), seed))
        return np.random.default_rng(seed)


backends.register(OffHostSim())


def draws(seed, device):
    aa.manual_seed(seed)
    mask = aa.nn.functional.dropout(aa.ones(32, device=device), 0.5)
    return [np.asarray(aa.rand(4, device=device)._data).tolist(), np.asarray(mask._data).tolist(),
            np.asarray(aa.randperm(6, device=device)._data).tolist()]


first = draws(5, "offhost:0")
again = draws(5, "offhost:0")
other_seed = draws(6, "offhost:0")
other_device = draws(5, "offhost:1")
host = draws(5, "sim:0")
print(json.dumps({"first": first, "again": again, "other_seed": other_seed,
                  "other_device": other_device, "host": host, "seeds": OffHostSim.seeds}))
'''


def test_devices_off_the_host_draw_from_their_own_seeded_generator():
    got = run_json(DEVICE_GENERATORS)
    assert got["first"] == got["again"]
    assert got["first"] != got["other_seed"]
    assert got["first"] != got["other_device"]  # each device its own stream
    assert got["first"] != got["host"]  # not the host generator's numbers
    seeds = got["seeds"]
    # One generator per device and manual_seed, each seeded from the seed and device index.
    assert [d for d, _ in seeds] == ["offhost:0"] * 3 + ["offhost:1"]
    assert seeds[0] == seeds[1] and seeds[0] != seeds[2]
    assert seeds[0][1] != seeds[3][1]


DEVICE_FILLS = r'''
import json

import numpy as np

import autograd_async as aa
from autograd_async.backends import SimBackend, backends


class OffHostSim(SimBackend):
    """Sim arrays, but drawn like a GPU's: one generator per device."""

    type = "offhost"
    host_memory = False


backends.register(OffHostSim())


def values(t):
    return np.asarray(t._data).tolist()


def fills(seed, device):
    aa.manual_seed(seed)
    w = aa.nn.init.normal_(aa.empty(3, device=device))
    aa.manual_seed(seed)
    fresh = aa.randn(3, device=device)
    aa.manual_seed(seed)
    drawn = [
        aa.empty(3, device=device).uniform_(), aa.empty(3, device=device).exponential_(),
        aa.empty(3, device=device).random_(100), aa.empty(3, device=device).bernoulli_(0.5),
        aa.multinomial(aa.ones(6, device=device), 3), aa.poisson(aa.ones(3, device=device) * 4),
        aa.bernoulli(aa.full((3,), 0.5, device=device)), aa.normal(aa.zeros(3, device=device)),
    ]
    return {"init": values(w), "randn": values(fresh), "drawn": [values(t) for t in drawn]}


print(json.dumps({"first": fills(5, "offhost:0"), "again": fills(5, "offhost:0"),
                  "host": fills(5, "sim:0")}))
'''


def test_fills_and_draws_off_the_host_use_the_devices_generator():
    got = run_json(DEVICE_FILLS)
    first, again, host = got["first"], got["again"], got["host"]
    assert first == again
    assert first["init"] == first["randn"]  # nn.init draws on the device, as randn does
    assert first["init"] != host["init"]  # from the device's generator, not the host's
    assert first["drawn"] != host["drawn"]
