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
# It writes what it measured under $OUT (or ./gpu-check when OUT is unset), and exits non-zero
# when any check fails (each failure is listed at the end). GPU_CHECK_QUICK=1 runs fewer steps.
set -uo pipefail
out=${OUT:-gpu-check}
mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
failed=()
check() {  # check NAME COMMAND...: run it, its output in $out/NAME.txt, note a failure
    local name=$1
    shift
    echo "== $name"
    "$@" 2>&1 | tee "$out/$name.txt"
    local rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        failed+=("$name (exit $rc)")
    fi
}
steps=50
pool_steps=1000
if [ "${GPU_CHECK_QUICK:-0}" = 1 ]; then steps=10; pool_steps=300; fi

check env bash -c 'nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv &&
    python3 -c "import cupy, numpy; print(\"cupy\", cupy.__version__, \"numpy\", numpy.__version__)" &&
    python3 -c "import autograd_async as aa, sys; n = aa.cuda_device_count(); print(\"cuda devices:\", n); sys.exit(n < 1)"'
# The GPU tests (they skip without a GPU), then every test parametrized over devices: cuda:0 cases.
check tests_gpu python3 -m pytest -q -p no:cacheprovider tests/gpu
check tests_cuda python3 -m pytest -q -p no:cacheprovider -k "cuda" tests --ignore=tests/gpu
# The CUDA-faithful sim mode's stream tests, for the record next to the real thing.
check tests_sim_cuda env AUTOGRAD_ASYNC_SIM=cuda python3 -m pytest -q -p no:cacheprovider tests/streams
# The examples on the GPU, with a trace whose cuda:0 stream track comes from CUDA events.
check async_training python3 examples/async_training.py --device cuda:0 --quiet \
    --trace "$out/train.trace.json"
check trace_has_cuda_stream python3 - "$out/train.trace.json" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
names = {ev["args"]["name"] for ev in trace["traceEvents"]
         if ev.get("ph") == "M" and ev.get("name") == "thread_name"}
spans = [ev for ev in trace["traceEvents"] if ev.get("cat") == "gpu"]
print("tracks:", sorted(names))
print("gpu spans:", len(spans))
sys.exit(0 if "cuda:0 stream" in names and spans else 1)
PY
check summary python3 -m autograd_async.profiler summary "$out/train.trace.json"
check multi_device python3 examples/multi_device.py --steps 3
# The MLP step against PyTorch CUDA, the GPU's busy share of backward, the memory pool over time.
check gpu_mlp python3 benchmarks/gpu_mlp.py --steps "$steps" --pool-steps "$pool_steps"

if [ ${#failed[@]} -ne 0 ]; then
    echo "FAILED checks: ${failed[*]}" | tee "$out/failed.txt"
    exit 1
fi
echo "all checks passed; results in $out"
