"""A web service that answers with gradients: saliency maps and online learning for digits.

    POST /saliency  {"input": [64 numbers]}             -> {"class", "score", "gradient": [64]}
    POST /learn     {"input": [64 numbers], "label": k} -> {"loss", "class", "steps"}
    GET  /health                                        -> {"status": "ok", ...}

An input is a flattened 8x8 digit with pixel values 0..16, as in scikit-learn's digits. /saliency
returns the gradient of the top class's score (its logit) with respect to those 64 pixels: which
pixels, made brighter, would make the model surer. /learn takes one SGD step on a labelled example.

Gradients are computed with `await aa.autograd.grad_async(...)`: the backward pass runs on the
device's worker thread, so the server's event loop keeps answering other requests meanwhile.
Malformed requests get a 400 naming what is wrong, and the service carries on.

    python examples/gradient_service.py             # pre-trains for about a second, then serves
    python examples/gradient_service.py --port 9000 --checkpoint digits.npz
    curl -s localhost:8080/health
    curl -s localhost:8080/saliency -d '{"input": [0, 0, 5, 13, 9, 1, 0, 0, ...]}'

`make_app(model)` builds the application around any model mapping (N, 64) pixels to (N, 10)
logits row by row (rows must not interact: saliency requests are batched), for tests and for
embedding in a larger aiohttp app.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
from _data import CLASSES, PIXELS, Standardise, load_digits, mlp
from aiohttp import web
from async_training import default_device, one_blas_thread, train
from async_training import parse_args as training_args

import autograd_async as aa
from autograd_async import nn
from autograd_async.nn import functional as F  # noqa: N812 - PyTorch's alias

FLOAT32_MAX = float(np.finfo(np.float32).max)
MAX_BATCH = 64  # saliency requests answered by one forward and backward pass
RESUME_AT_ONCE = 8  # answers handed to their handlers per pass of the event loop


class BadRequest(ValueError):
    """A request the service cannot take; its message is sent back with status 400."""


class ListenError(OSError):
    """The service could not bind its address (port in use, unknown host)."""


# ---------------------------------------------------------------------------------- validation
def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def shown(value: Any) -> str:
    """A value for an error message, cut short (an integer can have thousands of digits)."""
    text = repr(value)
    return text if len(text) <= 24 else text[:20] + "..."


async def read_object(request: web.Request, fields: set[str]) -> dict[str, Any]:
    """The request's JSON object, which must hold exactly `fields`."""
    raw = await request.read()
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"request body must be a JSON object, got {json_type(body)}")
    missing = sorted(fields - body.keys())
    unknown = sorted(body.keys() - fields)
    if missing:
        raise BadRequest(f"missing field {missing[0]!r}; {request.path} takes {sorted(fields)}")
    if unknown:
        raise BadRequest(f"unknown field {unknown[0]!r}; {request.path} takes {sorted(fields)}")
    return body


def read_pixels(body: dict[str, Any]) -> np.ndarray:
    """`body["input"]` as a (1, 64) float32 array: exactly 64 finite numbers."""
    values = body["input"]
    if not isinstance(values, list):
        raise BadRequest(f"'input' must be an array of {PIXELS} numbers, got {json_type(values)}")
    for i, value in enumerate(values):
        # bool is an int in Python, but `true` is no pixel value.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadRequest(f"'input[{i}]' must be a number, got {json_type(value)}")
        # Python's json reads NaN and Infinity; NaN fails every comparison, and a number beyond
        # float32's range (about 3.4e38) would become infinite in the model.
        if not -FLOAT32_MAX <= value <= FLOAT32_MAX:
            raise BadRequest(f"'input[{i}]' must be a finite float32 number, got {shown(value)}")
    if len(values) != PIXELS:
        raise BadRequest(
            f"'input' must hold {PIXELS} numbers (a flattened 8x8 digit), got {len(values)}"
        )
    return np.array(values, dtype=np.float32).reshape(1, PIXELS)


def read_label(body: dict[str, Any], classes: int) -> int:
    """`body["label"]` as a class index."""
    label = body["label"]
    if isinstance(label, bool) or not isinstance(label, int):
        raise BadRequest(f"'label' must be an integer class index, got {json_type(label)}")
    if not 0 <= label < classes:
        raise BadRequest(f"unknown label {label}: the classes are 0..{classes - 1}")
    return label


# ------------------------------------------------------------------------------------- service
def frozen_copy(model: nn.Module) -> nn.Module:
    """An independent copy of `model` in eval mode whose parameters record no gradient.

    Saliency needs the gradient for the input only; with frozen weights the graph records just the
    input's path, and the engine runs nothing for the weights.
    """
    snapshot = copy.deepcopy(model)
    snapshot.eval()
    snapshot.requires_grad_(False)
    return snapshot


async def deliver(futures: list[asyncio.Future], answers: list) -> None:
    """Resolve each future with its answer (or exception), a few per pass of the event loop.

    Each answer resumes a request handler, which encodes and sends it. Released all at once, a
    batch's handlers would run in one pass of the loop, and a /health request arriving meanwhile
    would wait behind them all; a few at a time, the loop polls its sockets in between.
    """
    for start in range(0, len(futures), RESUME_AT_ONCE):
        if start:
            await asyncio.sleep(0)
        for future, answer in zip(futures[start : start + RESUME_AT_ONCE], answers[start:]):
            if future.done():
                continue  # its request was cancelled
            if isinstance(answer, Exception):
                future.set_exception(answer)
            else:
                future.set_result(answer)


class GradientService:
    """A model that answers saliency requests in batches and learns online.

    Why a snapshot: a saliency forward pass runs on the event loop, its backward later on the
    device worker, reading weights the forward saved. A learning step updates the weights in place.
    Were it to land between the two, the backward would meet weights it did not see forward (the
    engine would refuse them as modified in place).

    Two ways out: a reader-writer lock (learning waits until no saliency is in flight, saliency
    waits behind learning), or copy-on-write, used here. Learning steps update a private training
    model under `_learning`, an asyncio.Lock, so steps run one at a time in arrival order and the
    weights after n steps are exactly those of n sequential SGD steps. After each step a frozen
    copy is published by rebinding `snapshot`, one assignment on the loop thread. A saliency batch
    reads `snapshot` once and keeps that object until it answers; published copies are never
    changed, so every answer comes from the weights after a whole number of steps. Neither kind of
    request waits for the other; the price is one copy of the weights (26k floats) per step.

    Why batches: saliency requests that arrive while a batch is being computed wait for the next
    one, and a batch costs one forward pass and one graph task whatever its size. Per request that
    saves the engine's bookkeeping and, above all, the time the worker thread would hold the GIL
    running nodes, time the event loop cannot answer anything else (`/health` included). A lone
    request is a batch of one and waits for nobody.
    """

    def __init__(self, model: nn.Module, lr: float = 0.01, classes: int = CLASSES) -> None:
        self.model = model
        self.device = next(iter(model.parameters())).device
        self.classes = classes
        self.optimizer = aa.optim.SGD(model.parameters(), lr=lr)
        self.steps = 0
        self.snapshot = frozen_copy(model)
        self._learning = asyncio.Lock()
        self._queued: list[tuple[np.ndarray, asyncio.Future]] = []
        self._batcher: asyncio.Task | None = None

    async def saliency(self, pixels: np.ndarray) -> dict[str, Any]:
        """Top class, its score and d(score)/d(input) for one (1, 64) input."""
        answer = asyncio.get_running_loop().create_future()
        self._queued.append((pixels, answer))
        if self._batcher is None or self._batcher.done():
            self._batcher = asyncio.create_task(self._answer_queued())
        return await answer

    async def _answer_queued(self) -> None:
        """Answer queued saliency requests, a batch at a time, until none are left."""
        while self._queued:
            batch, self._queued = self._queued[:MAX_BATCH], self._queued[MAX_BATCH:]
            try:
                answers = await self.saliency_batch(np.concatenate([p for p, _ in batch]))
            except Exception as exc:  # noqa: BLE001 - every request of the batch hears why
                answers = [exc] * len(batch)
            await deliver([future for _, future in batch], answers)

    async def saliency_batch(self, pixels: np.ndarray) -> list[dict[str, Any]]:
        """Saliency answers for each row of an (N, 64) array, from one forward and one backward."""
        model = self.snapshot  # these weights, start to finish, whatever learning does meanwhile
        x = aa.tensor(pixels, device=self.device, requires_grad=True)
        logits = model(x)
        top = logits.argmax(dim=1)
        scores = logits[aa.arange(len(pixels), device=self.device), top]
        # The model treats rows independently (no batch statistics), so the gradient of the sum
        # of scores with respect to row i is the gradient of score i alone.
        (gradient,) = await aa.autograd.grad_async(scores.sum(), [x])
        return [
            {"class": k, "score": score, "gradient": row}
            for k, score, row in zip(
                top.tolist(), scores.detach().tolist(), gradient.tolist(), strict=True
            )
        ]

    async def learn(self, pixels: np.ndarray, label: int) -> dict[str, Any]:
        """One SGD step on a labelled input; returns its loss and the class predicted before."""
        async with self._learning:
            x = aa.tensor(pixels, device=self.device)
            logits = self.model(x)
            loss = F.cross_entropy(logits, aa.tensor([label], device=self.device))
            params = list(self.model.parameters())
            grads = await aa.autograd.grad_async(loss, params)
            for param, grad in zip(params, grads, strict=True):
                param.grad = grad
            self.optimizer.step()
            self.optimizer.zero_grad()  # so the copy below carries no stale gradients
            self.steps += 1
            self.snapshot = frozen_copy(self.model)
            return {
                "loss": loss.item(),
                "class": int(logits.argmax(dim=1).item()),
                "steps": self.steps,
            }


# ---------------------------------------------------------------------------------------- HTTP
SERVICE = web.AppKey("service", GradientService)


@web.middleware
async def bad_request_as_400(request: web.Request, handler: Any) -> web.StreamResponse:
    """Turn a BadRequest raised by a handler into a JSON 400 answer."""
    try:
        return await handler(request)
    except BadRequest as exc:
        return web.json_response({"error": str(exc)}, status=400)


async def handle_saliency(request: web.Request) -> web.Response:
    """POST /saliency."""
    body = await read_object(request, {"input"})
    answer = await request.app[SERVICE].saliency(read_pixels(body))
    return web.json_response(answer)


async def handle_learn(request: web.Request) -> web.Response:
    """POST /learn."""
    service = request.app[SERVICE]
    body = await read_object(request, {"input", "label"})
    pixels, label = read_pixels(body), read_label(body, service.classes)
    return web.json_response(await service.learn(pixels, label))


async def handle_health(request: web.Request) -> web.Response:
    """GET /health: answered on the loop at once, even while gradients are being computed."""
    service = request.app[SERVICE]
    return web.json_response(
        {"status": "ok", "device": str(service.device), "learning_steps": service.steps}
    )


def digits_model(mean: np.ndarray, std: np.ndarray, hidden: int = 128) -> nn.Sequential:
    """Raw pixels in, logits out: the training statistics are the model's first layer."""
    return nn.Sequential(Standardise(mean, std), mlp(hidden))


async def pretrained_model(epochs: int, device: str, seed: int = 0) -> nn.Module:
    """The main example's classifier, trained for `epochs`, behind a standardising layer."""
    argv = ["--epochs", str(epochs), "--device", device, "--seed", str(seed), "--quiet"]
    result = await train(training_args(argv))
    data = load_digits()
    model = digits_model(data.mean, data.std).to(device)
    model[1].load_state_dict(result.model.state_dict())
    return model


async def load_or_train(checkpoint: str | None, epochs: int, device: str) -> nn.Module:
    """Weights from `checkpoint` if it exists, else pre-trained (and saved there if named)."""
    if checkpoint and os.path.exists(checkpoint):
        model = digits_model(np.zeros(PIXELS), np.ones(PIXELS)).to(device)
        model.load_state_dict(aa.load(checkpoint, map_location=device))
        return model
    model = await pretrained_model(epochs, device)
    if checkpoint:
        aa.save(model.state_dict(), checkpoint)
    return model


def make_app(
    model: nn.Module | None = None,
    *,
    lr: float = 0.01,
    classes: int = CLASSES,
    train_epochs: int = 10,
    checkpoint: str | None = None,
    device: str | None = None,
) -> web.Application:
    """The aiohttp application; without a model, one is loaded or pre-trained at start-up."""
    app = web.Application(middlewares=[bad_request_as_400])
    app.router.add_post("/saliency", handle_saliency)
    app.router.add_post("/learn", handle_learn)
    app.router.add_get("/health", handle_health)

    async def serving(app: web.Application) -> AsyncIterator[None]:
        # Runs before the server accepts its first connection, and again after it closes. Small
        # matmuls on a multithreaded BLAS would spin threads against the event loop and the
        # device worker for the same two cores: one thread is faster here.
        with one_blas_thread():
            found = model
            if found is None:
                found = await load_or_train(checkpoint, train_epochs, device or default_device())
            app[SERVICE] = GradientService(found, lr=lr, classes=classes)
            yield

    app.cleanup_ctx.append(serving)
    return app


# ------------------------------------------------------------------------------------- running
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; `parse_args([])` gives the defaults."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument(
        "--train-epochs",
        type=int,
        default=10,
        help="epochs of pre-training at start-up (without a checkpoint)",
    )
    parser.add_argument(
        "--checkpoint",
        metavar="PATH.npz",
        help="load the weights from PATH, or pre-train and save them there",
    )
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate of /learn steps")
    parser.add_argument("--device", default=None, help="cpu, sim:N or cuda:N")
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM)."""
    app = make_app(
        lr=args.lr, train_epochs=args.train_epochs, checkpoint=args.checkpoint, device=args.device
    )
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, args.host, args.port)
        try:
            await site.start()
        except OSError as exc:  # port in use, unknown host: one clear line, not a traceback
            raise ListenError(
                f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
            ) from None
        host, port = runner.addresses[0][:2]
        print(f"serving on http://{host}:{port} (device {app[SERVICE].device})", flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    """Run the service from the command line."""
    try:
        asyncio.run(serve(parse_args(argv)))
    except KeyboardInterrupt:
        pass
    except ListenError as exc:
        print(f"gradient_service: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
