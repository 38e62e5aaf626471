"""examples/cnn.py and examples/transformer.py: both learn at small settings, on sim:0, with their
loaders' batches awaited through `async for`; their traces show backward on the device track."""

from __future__ import annotations

import cnn
import transformer

from autograd_async.profiler import load_trace


async def test_cnn_learns_in_a_few_epochs(tmp_path):
    trace = tmp_path / "cnn.json"
    result = await cnn.train(
        cnn.parse_args(["--epochs", "3", "--device", "sim:0", "--quiet", "--trace", str(trace)])
    )
    # 10% is chance; three epochs reach about 97% (the full run's target is 98%).
    assert result.test_accuracy >= 0.9
    assert result.device == "sim:0" and len(result.history) == 3
    names = {e.get("name", "") for e in load_trace(trace).get("traceEvents", [])}
    assert any("Convolution" in n for n in names), sorted(names)[:20]


async def test_transformer_learns_to_sort(tmp_path):
    trace = tmp_path / "sort.json"
    result = await transformer.train(
        transformer.parse_args(
            ["--steps", "150", "--device", "sim:0", "--quiet", "--trace", str(trace)]
        )
    )
    # 10% is chance; 150 steps reach about 90% (the full run's target is 95%).
    assert result.accuracy >= 0.8
    events = load_trace(trace).get("traceEvents", [])
    threads = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert any("sim:0" in t for t in threads), threads


async def test_transformer_reverses_too():
    result = await transformer.train(
        transformer.parse_args(
            ["--task", "reverse", "--steps", "100", "--device", "cpu", "--quiet"]
        )
    )
    assert result.accuracy >= 0.8
