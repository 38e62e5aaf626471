#!/usr/bin/env bash
# The GPU checks, prepared as one run for a session lent an NVIDIA machine (the `device` tool).
#
# That machine has CuPy, NumPy, msgpack, uvloop, pytest, pytest-timeout, hypothesis, aiohttp,
# scikit-learn and tqdm, but not pytest-asyncio: carry its wheel in `.whl` (see the device tool's
# README), e.g. here: `python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12
# -d .whl pytest-asyncio==1.5.0`, then run there, with `.whl` carried:
#
#   bash benchmarks/gpu_check.sh
#
# It writes what it measured under $OUT (or ./gpu-check when OUT is unset).
set -uo pipefail
out=${OUT:-gpu-check}
mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
    python3 -c "import autograd_async as aa; print('cuda devices:', aa.cuda_device_count())"
} 2>&1 | tee "$out/env.txt"
# Every test parametrized over devices runs its cuda:0 case here (they skip without a GPU).
python3 -m pytest -q -p no:cacheprovider -k "cuda" tests 2>&1 | tee "$out/tests_cuda.txt"
# The examples on the GPU, with a trace whose cuda:0 stream track comes from CUDA events.
python3 examples/async_training.py --device cuda:0 --quiet --trace "$out/train.trace.json" \
    2>&1 | tee "$out/async_training.txt"
python3 -m autograd_async.profiler summary "$out/train.trace.json" 2>&1 | tee "$out/summary.txt"
python3 examples/multi_device.py --steps 3 2>&1 | tee "$out/multi_device.txt"
echo "done; results in $out"
