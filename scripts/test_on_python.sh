#!/usr/bin/env bash
# Run tests on another Python: make .venv-X.Y with that interpreter, install the package with the
# dev extra (not `bench`: PyTorch 2.13 is the reference only where it is installed, and its
# comparisons skip without it), then run pytest, two processes at a time, on the paths given.
# It installs and runs the pure-Python core (AUTOGRAD_ASYNC_PURE_PYTHON=1): CI's main pass runs the
# compiled core, so this is where the .py files of the core run the tests (and no compile is paid).
#
# Usage: bash scripts/test_on_python.sh 3.12 tests/core tests/engine ...
#        bash scripts/test_on_python.sh --prepare 3.12 3.13
# --prepare only makes the venvs and installs the package's dependencies there (the dev extra's,
# read from pyproject.toml), all at once, and marks each as prepared; a test run on a prepared venv
# installs just the package (`--no-deps`, seconds). It builds nothing in the checkout, so CI runs
# it while its main install builds the package there.
# The interpreter is `pythonX.Y` on PATH, else the newest X.Y that pyenv has installed.
set -euo pipefail
cd "$(dirname "$0")/.."
export AUTOGRAD_ASYNC_PURE_PYTHON=1

find_python() {
    local version=$1 python=python$1 root
    if ! "$python" -c '' 2>/dev/null; then  # a pyenv shim exists even where the version is not global
        root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
        python=$(ls -d "$root"/versions/"$version".*/bin/python"$version" 2>/dev/null \
            | sort -V | tail -n 1 || true)
        if [ -z "$python" ]; then
            echo "Python $version not found: no python$version on PATH nor in $root/versions" >&2
            return 1
        fi
    fi
    echo "$python"
}

# The venv of one version with the dependencies of the package and of its dev extra; marked
# prepared (the mark is newer than pyproject.toml until that changes).
prepare() {
    local version=$1 python venv=.venv-$1
    python=$(find_python "$version")
    rm -f "$venv/.prepared"
    "$python" -m venv "$venv"
    "$venv"/bin/python -c '
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["dev"]))' \
        > "$venv/requirements.txt"
    "$venv"/bin/pip install -q -r "$venv/requirements.txt"
    touch "$venv/.prepared"
}

if [ "$1" = "--prepare" ]; then
    shift
    pids=()
    for version in "$@"; do
        prepare "$version" &
        pids+=($!)
    done
    status=0
    for pid in "${pids[@]}"; do
        wait "$pid" || status=1
    done
    exit $status
fi

version=$1
shift
venv=.venv-$version
if [ ! "$venv/.prepared" -nt pyproject.toml ]; then
    prepare "$version"
fi
"$venv"/bin/pip install -q --no-deps -e .
"$venv"/bin/python -c 'import autograd_async as aa, sys; sys.exit(aa.compiled)' || {
    echo "Python $version: the pure-Python core was asked for, but the compiled one runs" >&2
    exit 1
}
"$venv"/bin/python -m pytest -q -n 2 --dist loadfile "$@"
