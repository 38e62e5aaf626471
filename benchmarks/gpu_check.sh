#!/usr/bin/env bash
# The GPU checks as one short run (under 8 minutes on a fresh H200, kernel compilation included),
# in stages, each under its own time budget, each ending with one summary line:
#
#   env        the GPU, CuPy (cupy-cuda12x or cupy-cuda13x), NumPy, and a first kernel
#   tests_gpu  tests/gpu: graphs over cuda, the stream defects, float16 products under autocast
#              and GradScaler (rehearsed on sim in tests/amp/test_gpu_checks_on_sim.py)
#   repros     benchmarks/gpu_repros.py: the repros of issue 28's defects 3-7, 20 runs each on
#              2**24-element arrays against the CPU result
#   ops        a seeded sample of the `-k cuda` op tests, in parallel shards: first failures
#   mlp        benchmarks/gpu_mlp.py with short step counts: ratio to PyTorch CUDA, GPU busy
#              share of backward (CUDA events), memory pool flat
#   nccl       benchmarks/gpu_nccl_check.py: the NCCL collectives' tests on 1 GPU, and with two
#              or more a 2-process NCCL all_reduce and DDP step
#   multi      with two or more GPUs: examples/multi_device.py on cuda:0 and cuda:1
#
# A GPU image without pytest-asyncio installs it from a wheel in `.whl/` (ignored by git): download
# it once where there is network access (pure Python, so one wheel fits any image),
#
#   pip download --no-deps --only-binary=:all: -d .whl pytest-asyncio==1.5.0
#
# copy `.whl/` along with the checkout, then run there:
#
#   bash benchmarks/gpu_check.sh
#
# Results go under $OUT (or ./gpu-check when OUT is unset): each stage's output in NAME.txt, one
# JSON record per stage in summary.json. Exits non-zero when a stage fails or overruns.
# Knobs: GPU_CHECK_OPS (sampled op tests, default 160), GPU_CHECK_SEED (default 28),
# GPU_CHECK_SHARDS (parallel pytest processes, default 4).
set -uo pipefail
out=${OUT:-gpu-check}
mkdir -p "$out"
started=$(date +%s)
export PYTHONUNBUFFERED=1
python=${PYTHON:-python3}

if ! "$python" -c "import pytest_asyncio" 2>/dev/null; then
    if ls .whl/pytest_asyncio-*.whl >/dev/null 2>&1; then
        "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
            --target /tmp/gpu-check-site .whl/pytest_asyncio-*.whl \
            && export PYTHONPATH="/tmp/gpu-check-site:${PYTHONPATH:-}"
    else
        echo "warning: pytest-asyncio is missing and .whl/ has no wheel of it (see the header)"
    fi
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
export out python  # the stage functions run in a child bash, under `timeout`

records=()
failed=()
stage() {  # stage NAME BUDGET_S COMMAND...: run under the budget, output in $out/NAME.txt
    local name=$1 budget=$2
    shift 2
    echo "== $name (budget ${budget}s)"
    local begun=$SECONDS
    timeout --kill-after=10 "$budget" "$@" > >(tee "$out/$name.txt") 2>&1
    local rc=$? took=$((SECONDS - begun)) status=ok
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        status=timeout
    elif [ "$rc" -ne 0 ]; then
        status=failed
    fi
    [ "$status" = ok ] || failed+=("$name ($status, exit $rc)")
    local detail
    detail=$(grep -E '^(SUMMARY|repro |step:|busy:|pool:|FAILED|host syncs|=* ?[0-9]+ (passed|failed|skipped|error))' \
        "$out/$name.txt" | tail -n 8)
    [ -n "$detail" ] || detail=$(grep -v '^\s*$' "$out/$name.txt" | tail -n 2)
    detail=$(printf '%s' "$detail" | tr '\n\t' '; ' | tr -d '"\\' | cut -c1-500)
    echo "STAGE $name: $status (exit $rc) in ${took}s of ${budget}s; $detail"
    records+=("{\"stage\": \"$name\", \"status\": \"$status\", \"exit\": $rc, \"seconds\": $took, \"budget\": $budget, \"detail\": \"$detail\"}")
}

# ---------------------------------------------------------------- environment and a first kernel
env_check() {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || return 1
    "$python" -m pip list 2>/dev/null | grep -iE '^(cupy|numpy|torch|pytest)' || true
    "$python" - <<'PY'
import sys, time
import cupy, numpy
import autograd_async as aa

wheel = "cupy-cuda13x" if cupy.cuda.runtime.runtimeGetVersion() >= 13000 else "cupy-cuda12x"
print(f"cupy {cupy.__version__} ({wheel}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}),"
      f" numpy {numpy.__version__}, python {sys.version.split()[0]}")
count = aa.cuda_device_count()
print("cuda devices:", count)
if count < 1:
    sys.exit(1)
begun = time.perf_counter()
x = aa.randn(1 << 20, device="cuda:0", requires_grad=True)
loss = (x.tanh() * 2).sum()
loss.backward()
value = float(x.grad.sum().item())
print(f"SUMMARY first kernel and backward in {time.perf_counter() - begun:.2f} s (compiling)")
expected = float((2 * (1 - numpy.tanh(x.detach().cpu().numpy()) ** 2)).sum())
sys.exit(0 if abs(value - expected) <= 1e-3 * abs(expected) else 1)
PY
}
export -f env_check
stage env 60 bash -c env_check
gpus=$("$python" -c "import autograd_async as aa; print(aa.cuda_device_count())" 2>/dev/null || echo 0)

# ---------------------------------------------------------------------------------- tests/gpu
stage tests_gpu 75 "$python" -m pytest -q -p no:cacheprovider -o timeout=60 tests/gpu

# ------------------------------------------------------------------------------------- repros
stage repros 75 "$python" benchmarks/gpu_repros.py --device cuda --runs 20 --log2-size 24 \
    --json "$out/repros.json"

# ------------------------------------------------------------ a sample of the op tests on cuda
ops_sample() {
    local ids="$out/ops_ids.txt" count=${GPU_CHECK_OPS:-160} shards=${GPU_CHECK_SHARDS:-4}
    local begun=$SECONDS
    "$python" -m pytest --collect-only -q -p no:cacheprovider -k cuda tests/ops 2>/dev/null \
        | grep '::' > "$out/ops_all.txt"
    echo "collected $(wc -l < "$out/ops_all.txt") cuda op tests in $((SECONDS - begun))s"
    "$python" - "$out/ops_all.txt" "$ids" "$count" "${GPU_CHECK_SEED:-28}" "$shards" <<'PY'
import random, sys
every, target, count, seed, shards = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
ids = [line.strip() for line in open(every) if line.strip()]
chosen = sorted(random.Random(seed).sample(ids, min(count, len(ids))))
for shard in range(shards):
    with open(f"{target}.{shard}", "w") as f:
        f.write("".join(i + "\n" for i in chosen[shard::shards]))
print(f"SUMMARY sampled {len(chosen)} of {len(ids)} cuda op tests (seed {seed}), {shards} shards")
PY
    local pids=()
    for ((i = 0; i < shards; i++)); do
        [ -s "$ids.$i" ] || continue
        xargs -a "$ids.$i" -d '\n' "$python" -m pytest -q -p no:cacheprovider -o timeout=60 \
            -rf --maxfail=25 > "$out/ops_shard$i.txt" 2>&1 &
        pids+=($!)
    done
    local rc=0
    for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
    cat "$out"/ops_shard*.txt | grep -E '^FAILED' | tee "$out/ops_failures.txt" | head -n 25
    local passed failures
    passed=$(cat "$out"/ops_shard*.txt | grep -oE '[0-9]+ passed' | awk '{s += $1} END {print s + 0}')
    failures=$(wc -l < "$out/ops_failures.txt")
    echo "SUMMARY ops: $passed passed, $failures failed (first failures in ops_failures.txt)"
    return $rc
}
export -f ops_sample
stage ops 105 bash -c ops_sample

# ------------------------------------------------------------------------------ the MLP step
stage mlp 75 "$python" benchmarks/gpu_mlp.py --steps 20 --busy-steps 10 --pool-steps 200 \
    --pool-every 50

# ------------------------------------------------------------- NCCL collectives and DDP
stage nccl 45 "$python" benchmarks/gpu_nccl_check.py

# ------------------------------------------------------------------------ two or more GPUs
if [ "${gpus:-0}" -ge 2 ]; then
    stage multi 45 "$python" examples/multi_device.py --steps 3 --width 1024
else
    echo "STAGE multi: skipped (${gpus:-0} GPU)"
    records+=("{\"stage\": \"multi\", \"status\": \"skipped\", \"gpus\": ${gpus:-0}}")
fi

total=$(($(date +%s) - started))
{
    echo "{\"seconds\": $total, \"failed\": ${#failed[@]}, \"stages\": ["
    for ((i = 0; i < ${#records[@]}; i++)); do
        [ "$i" -gt 0 ] && echo ","
        echo "${records[$i]}"
    done
    echo "]}"
} > "$out/summary.json"
if [ ${#failed[@]} -ne 0 ]; then
    echo "FAILED stages: ${failed[*]} (${total}s in all; summary in $out/summary.json)"
    exit 1
fi
echo "all stages passed in ${total}s; summary in $out/summary.json"
