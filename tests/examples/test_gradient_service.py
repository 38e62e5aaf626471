"""examples/gradient_service.py under a real aiohttp server on a loopback port, driven over HTTP."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import numpy as np
import pytest
from _data import load_digits
from aiohttp import web
from gradient_service import (
    SERVICE,
    GradientService,
    frozen_copy,
    load_or_train,
    make_app,
    pretrained_model,
)

import autograd_async as aa
from autograd_async.nn import functional as F  # noqa: N812

from .helpers import EXAMPLES, example_command, example_env

SALIENCY_LOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "saliency_load.py"
DEVICE = "cpu"
LR = 0.05


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    """Raw test-split digits (pixel values 0..16), one per row."""
    return load_digits().x_test


@pytest.fixture
def model() -> aa.nn.Module:
    """A quickly trained classifier taking raw pixels."""
    return asyncio.run(pretrained_model(epochs=2, device=DEVICE))


@dataclass
class Server:
    """A running service: its base URL and the service object behind it."""

    url: str
    service: GradientService


@pytest.fixture
async def server(model) -> AsyncIterator[Server]:
    """The service around `model` on 127.0.0.1, port chosen by the OS, on the test's loop."""
    runner = web.AppRunner(make_app(model, lr=LR))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield Server(f"http://{host}:{port}", runner.app[SERVICE])
    finally:
        await runner.cleanup()


def local_saliency(model: aa.nn.Module, pixels: np.ndarray) -> tuple[int, np.ndarray]:
    """The top class and d(score)/d(input), computed here with the blocking `grad`."""
    x = aa.tensor(pixels.reshape(1, 64), device=DEVICE, requires_grad=True)
    logits = model(x)
    top = int(logits.argmax(dim=1).item())
    (gradient,) = aa.autograd.grad(logits[0, top], [x])
    return top, np.asarray(gradient)[0]


def same_gradient(got: list[float], want: np.ndarray) -> bool:
    """Equal to float32 precision.

    The service answers concurrent requests in batches, and a matmul over many rows rounds
    differently from one over a single row: the results agree to about 1e-6, not bit for bit.
    """
    return np.allclose(np.array(got, np.float32), want, rtol=1e-5, atol=1e-6)


async def post(session: aiohttp.ClientSession, url: str, body: object) -> tuple[int, dict]:
    """POST `body` as JSON; returns the status and the decoded answer."""
    async with session.post(url, json=body) as response:
        return response.status, await response.json()


async def test_concurrent_saliency_equals_sequential_computation(server, model, digits):
    inputs = digits[:100]
    async with aiohttp.ClientSession() as session:
        answers = await asyncio.gather(
            *(post(session, f"{server.url}/saliency", {"input": row.tolist()}) for row in inputs)
        )
    frozen = frozen_copy(model)
    for row, (status, answer) in zip(inputs, answers, strict=True):
        assert status == 200, answer
        top, gradient = local_saliency(frozen, row)
        assert answer["class"] == top
        assert same_gradient(answer["gradient"], gradient)
    # A trained model gets most of these test digits right.
    labels = load_digits().y_test[:100]
    assert np.mean(np.array([a["class"] for _, a in answers]) == labels) > 0.8


async def test_health_answers_while_saliency_load_runs(server):
    """/health keeps answering, between saliency batches, while 100 clients ask for saliency maps.

    The load comes from another process, as it would in production: on this process's loop it
    would queue its own client work (building requests, parsing answers) in front of the server.
    How fast /health answers under this load is a figure, not a pass/fail line: it is measured by
    benchmarks/service_health.py. Here: every check answers, and the checks are interleaved with
    the saliency batches rather than queued behind them.
    """
    service = server.service
    batches_done = 0
    answer_batch = service.saliency_batch

    async def counted_batch(pixels: np.ndarray) -> list:
        nonlocal batches_done
        answers = await answer_batch(pixels)
        batches_done += 1
        return answers

    service.saliency_batch = counted_batch
    load = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SALIENCY_LOAD),
        server.url,
        "2",
        "100",
        stdout=subprocess.PIPE,
    )
    seen_at: list[int] = []  # saliency batches done when each health check was answered
    try:
        started = await asyncio.wait_for(load.stdout.readline(), 30)
        assert started == b"started\n"
        async with aiohttp.ClientSession() as monitor:
            while load.returncode is None and not load.stdout.at_eof():
                async with monitor.get(f"{server.url}/health") as response:
                    assert response.status == 200
                    assert (await response.json())["status"] == "ok"
                seen_at.append(batches_done)
                await asyncio.sleep(0.005)
        totals = json.loads(await asyncio.wait_for(load.stdout.readline(), 30))
    finally:
        if load.returncode is None:
            load.kill()
        await load.wait()
    assert totals["failed"] == 0 and totals["answered"] > 0
    # Health checks answered at several different points of the saliency work: /health was not
    # starved until the load ended (that would show a single point, the last).
    assert len(set(seen_at)) >= 3, seen_at


async def test_learn_equals_a_local_sgd_step(server, model, digits):
    local = copy.deepcopy(model)
    pixels, label = digits[7], 3
    optimizer = aa.optim.SGD(local.parameters(), lr=LR)
    loss = F.cross_entropy(local(aa.tensor(pixels.reshape(1, 64))), aa.tensor([label]))
    loss.backward()
    optimizer.step()

    async with aiohttp.ClientSession() as session:
        status, answer = await post(
            session, f"{server.url}/learn", {"input": pixels.tolist(), "label": label}
        )
        assert status == 200, answer
        assert answer["steps"] == 1
        assert answer["loss"] == loss.item()
        for (name, want), got in zip(
            local.named_parameters(), server.service.model.parameters(), strict=True
        ):
            np.testing.assert_array_equal(
                np.asarray(got.detach()), np.asarray(want.detach()), err_msg=name
            )
        # Saliency now answers with the stepped weights.
        status, answer = await post(session, f"{server.url}/saliency", {"input": pixels.tolist()})
        top, gradient = local_saliency(frozen_copy(local), pixels)
        assert (status, answer["class"]) == (200, top)
        assert same_gradient(answer["gradient"], gradient)
        async with session.get(f"{server.url}/health") as response:
            assert (await response.json())["learning_steps"] == 1


async def test_saliency_during_learning_sees_whole_steps(server, model, digits):
    """Every answer comes from the weights after some whole number of learning steps."""
    example, label, steps = digits[0].tolist(), 5, 4
    probes = digits[1:31]
    # All learning requests carry the same example, so the weights after k steps do not depend
    # on the order in which the requests reach the lock.
    replay = copy.deepcopy(model)
    optimizer = aa.optim.SGD(replay.parameters(), lr=LR)
    expected = []
    for k in range(steps + 1):
        expected.append([local_saliency(frozen_copy(replay), row)[1] for row in probes])
        if k < steps:
            optimizer.zero_grad()
            F.cross_entropy(replay(aa.tensor([example])), aa.tensor([label])).backward()
            optimizer.step()

    async with aiohttp.ClientSession() as session:
        learning = [
            post(session, f"{server.url}/learn", {"input": example, "label": label})
            for _ in range(steps)
        ]
        probing = [
            post(session, f"{server.url}/saliency", {"input": row.tolist()}) for row in probes
        ]
        answers = await asyncio.gather(*learning, *probing)
    assert sorted(a["steps"] for _, a in answers[:steps]) == list(range(1, steps + 1))
    for i, (status, answer) in enumerate(answers[steps:]):
        assert status == 200
        matches = [
            k for k, after_k in enumerate(expected) if same_gradient(answer["gradient"], after_k[i])
        ]
        assert len(matches) == 1, f"probe {i} matches the weights after steps {matches}"


def _with(**fields: object) -> dict:
    return {"input": [1.0] * 64, **fields}


def _replace_pixel(index: int, value: object) -> dict:
    pixels: list = [1.0] * 64
    pixels[index] = value
    return {"input": pixels}


MALFORMED = [
    ("/saliency", b"{not json", "not valid JSON"),
    ("/saliency", b"", "not valid JSON"),
    ("/saliency", b"\xff\xfe", "not valid JSON"),
    ("/saliency", b"[1, 2, 3]", "must be a JSON object, got an array"),
    ("/saliency", b"{}", "missing field 'input'"),
    ("/saliency", _with(extra=1), "unknown field 'extra'"),
    ("/saliency", {"input": "0,0,5,13"}, "'input' must be an array of 64 numbers, got a string"),
    ("/saliency", {"input": None}, "'input' must be an array of 64 numbers, got null"),
    ("/saliency", {"input": [1.0] * 63}, "must hold 64 numbers (a flattened 8x8 digit), got 63"),
    ("/saliency", {"input": [1.0] * 65}, "got 65"),
    ("/saliency", {"input": [[0.0] * 8] * 8}, "'input[0]' must be a number, got an array"),
    ("/saliency", {"input": [[0.0]] * 64}, "'input[0]' must be a number, got an array"),
    ("/saliency", _replace_pixel(3, "7"), "'input[3]' must be a number, got a string"),
    ("/saliency", _replace_pixel(4, True), "'input[4]' must be a number, got a boolean"),
    ("/saliency", _replace_pixel(5, None), "'input[5]' must be a number, got null"),
    ("/saliency", _replace_pixel(6, {"v": 1}), "'input[6]' must be a number, got an object"),
    (
        "/saliency",
        json.dumps(_replace_pixel(7, float("nan"))).encode(),
        "'input[7]' must be a finite float32 number, got nan",
    ),
    ("/saliency", json.dumps(_replace_pixel(8, float("-inf"))).encode(), "got -inf"),
    ("/saliency", _replace_pixel(9, 1e39), "'input[9]' must be a finite float32 number"),
    ("/saliency", _replace_pixel(10, 10**400), "'input[10]' must be a finite float32 number"),
    ("/learn", {"input": [1.0] * 64}, "missing field 'label'"),
    ("/learn", _with(label=10), "unknown label 10: the classes are 0..9"),
    ("/learn", _with(label=-1), "unknown label -1"),
    ("/learn", _with(label="3"), "'label' must be an integer class index, got a string"),
    ("/learn", _with(label=3.0), "'label' must be an integer class index, got a number"),
    ("/learn", _with(label=True), "got a boolean"),
    ("/learn", {"input": [1.0] * 3, "label": 1}, "got 3"),
]


async def test_malformed_requests_get_400_and_the_service_carries_on(server, digits):
    good = {"input": digits[0].tolist()}
    async with aiohttp.ClientSession() as session:
        for path, body, message in MALFORMED:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            async with session.post(f"{server.url}{path}", data=data) as response:
                answer = await response.json()
                assert response.status == 400, (path, body, answer)
                assert message in answer["error"], (path, body, answer)
            status, answer = await post(session, f"{server.url}/saliency", good)
            assert status == 200 and len(answer["gradient"]) == 64, (path, body, answer)
    assert server.service.steps == 0  # no malformed /learn changed the weights


async def test_checkpoint_is_written_then_loaded(tmp_path, digits):
    path = str(tmp_path / "digits.npz")
    trained = await load_or_train(path, epochs=1, device=DEVICE)
    loaded = await load_or_train(path, epochs=1, device=DEVICE)
    for (name, a), b in zip(
        trained.state_dict().items(), loaded.state_dict().values(), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


async def test_command_line_serves_until_terminated(tmp_path):
    checkpoint = tmp_path / "digits.npz"
    command = example_command(
        "gradient_service.py",
        "--port",
        "0",
        "--train-epochs",
        "1",
        "--device",
        "cpu",
        "--checkpoint",
        str(checkpoint),
    )
    process = await asyncio.create_subprocess_exec(
        *command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=example_env(),
        cwd=EXAMPLES.parent,
    )
    try:
        line = (await asyncio.wait_for(process.stdout.readline(), 40)).decode()
        assert line.startswith("serving on http://127.0.0.1:"), line
        url = line.split()[2]
        assert checkpoint.exists()
        async with aiohttp.ClientSession() as session, session.get(f"{url}/health") as response:
            assert response.status == 200
            assert (await response.json())["status"] == "ok"
    finally:
        if process.returncode is None:
            process.terminate()
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 0, stderr.decode()


async def test_port_in_use_is_one_line_and_a_non_zero_exit(tmp_path):
    blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = blocker.sockets[0].getsockname()[1]
    try:
        command = example_command(
            "gradient_service.py",
            "--port",
            str(port),
            "--train-epochs",
            "1",
            "--device",
            "cpu",
            "--checkpoint",
            str(tmp_path / "digits.npz"),
        )
        process = await asyncio.create_subprocess_exec(
            *command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=example_env(),
            cwd=EXAMPLES.parent,
        )
        _, stderr = await asyncio.wait_for(process.communicate(), 60)
    finally:
        blocker.close()
    text = stderr.decode()
    assert process.returncode == 1, text
    assert "Traceback" not in text and f"127.0.0.1:{port}" in text
    assert len(text.strip().splitlines()) == 1, text
