"""examples/async_training.py: it learns, it meets its target, its loader overlaps backward."""

from __future__ import annotations

import threading
import time

import async_training
import pytest
from async_training import TARGET_ACCURACY, main, parse_args, train

from autograd_async.engine.trace_events import CallerAwait
from autograd_async.profiler import load_trace, profile

from .helpers import EXAMPLE_TEST_TIMEOUT, run_example


async def test_a_short_run_learns():
    result = await train(parse_args(["--epochs", "2", "--device", "sim:0", "--quiet"]))
    assert len(result.history) == 2
    assert result.history[-1].train_loss < result.history[0].train_loss
    assert result.test_accuracy >= 0.85  # 10% is chance; two epochs reach about 95%
    assert result.device == "sim:0"


async def test_the_default_run_reaches_the_target():
    # How long it takes is the example's own report (it prints the seconds), not a test line.
    result = await train(parse_args(["--device", "sim:0", "--quiet"]))
    assert result.test_accuracy >= TARGET_ACCURACY


async def test_the_loader_prepares_every_batch_on_its_own_thread(monkeypatch):
    prepared: list[tuple[int, int, int]] = []
    make_batch = async_training.make_batch

    def timed_make_batch(*args):
        began = time.perf_counter_ns()
        batch = make_batch(*args)
        prepared.append((began, time.perf_counter_ns(), threading.get_ident()))
        return batch

    monkeypatch.setattr(async_training, "make_batch", timed_make_batch)
    with profile() as prof:
        await train(parse_args(["--epochs", "1", "--device", "sim:0", "--quiet"]))
    awaits = [e for e in prof.events if type(e) is CallerAwait]
    assert len(awaits) == len(prepared) == 45  # 1,437 training images in batches of 32
    # Every batch is built off the event loop's thread, all by the one loader thread.
    builders = {thread for _, _, thread in prepared}
    assert threading.get_ident() not in builders and len(builders) == 1
    # Whether a given batch is built during an await or between two depends on how the two
    # threads are scheduled (on a busy machine the loader may run ahead entirely), so that is
    # not asserted; tests/utils checks the prefetch bound and the thread's lifecycle.


async def test_trace_option_writes_a_chrome_trace(tmp_path):
    path = tmp_path / "train.json"
    args = parse_args(["--epochs", "1", "--device", "sim:1", "--quiet", "--trace", str(path)])
    result = await train(args)
    assert result.trace == str(path)
    names = {event.get("name") for event in load_trace(path)["traceEvents"]}
    assert {"LinearBackward0", "CrossEntropyLossBackward0", "linear"} <= names


def test_check_fails_below_the_target(capsys):
    # lr 0: the weights never move, so accuracy stays near chance and --check must fail.
    assert main(["--epochs", "1", "--lr", "0", "--quiet", "--check", "--device", "sim:0"]) == 1
    assert "below the 95% target" in capsys.readouterr().err


def test_bad_arguments_are_refused():
    with pytest.raises(SystemExit):
        parse_args(["--epochs", "0"])


@pytest.mark.timeout(EXAMPLE_TEST_TIMEOUT)
def test_command_line_run():
    done = run_example("async_training.py", "--epochs", "1", "--device", "sim:0")
    assert done.returncode == 0, done.stderr
    assert "test accuracy" in done.stdout
    assert "epoch   1" in done.stdout  # the progress bar goes to stderr, results to stdout
