#!/usr/bin/env bash
# Run tests on another Python: make .venv-X.Y with that interpreter, install the package with the
# dev extra (not `bench`: PyTorch 2.13 is the reference only where it is installed, and its
# comparisons skip without it), then run pytest, two processes at a time, on the paths given.
# It installs and runs the pure-Python core (AUTOGRAD_ASYNC_PURE_PYTHON=1): CI's main pass runs the
# compiled core, so this is where the .py files of the core run the tests (and no compile is paid).
# Usage: bash scripts/test_on_python.sh 3.12 tests/core tests/engine ...
# The interpreter is `pythonX.Y` on PATH, else the newest X.Y that pyenv has installed.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1
shift
python=python$version
if ! "$python" -c '' 2>/dev/null; then  # a pyenv shim exists even where the version is not global
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    python=$(ls -d "$root"/versions/"$version".*/bin/python"$version" 2>/dev/null \
        | sort -V | tail -n 1 || true)
    if [ -z "$python" ]; then
        echo "Python $version not found: no python$version on PATH nor in $root/versions" >&2
        exit 1
    fi
fi
venv=.venv-$version
export AUTOGRAD_ASYNC_PURE_PYTHON=1
"$python" -m venv "$venv"
"$venv"/bin/pip install -q -e '.[dev]'
"$venv"/bin/python -c 'import autograd_async as aa, sys; sys.exit(aa.compiled)' || {
    echo "the pure-Python core was asked for, but the compiled one runs" >&2
    exit 1
}
"$venv"/bin/python -m pytest -q -n 2 --dist loadfile "$@"
