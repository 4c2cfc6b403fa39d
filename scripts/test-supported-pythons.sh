#!/usr/bin/env bash
# The test suite as CI runs it (.ci/run): on the oldest and the newest supported Python, each in
# a fresh virtualenv with only what it needs, then the tests that need PyTorch.
#
# 1. Python 3.9 and Python 3.13: `pip install -e .[test,lsp]`, no torch (PyTorch 2.13 has no wheel
#    for 3.9, and for 3.13 only multi-GB CUDA builds), so the tests that need torch skip with
#    that reason and everything else runs. The two runs go side by side (each mostly waits on
#    one process at a time, and the machine has two cores); their logs are printed in order
#    when both are done.
# 2. The tests that need torch (`-m torch`) on Python 3.11 with torch==2.13.0: machines that
#    keep its CPU wheel on disk (as the project's do) install that small wheel.
# Chromium, for the tests that render `verify --html`, is installed first when missing
# (install-chromium.sh).
#
# Interpreters are found on PATH (python3.9, ...) or under pyenv; TORCHPERF_LINT_PYTHONS (e.g.
# "python3.9 python3.13") and TORCHPERF_LINT_TORCH_PYTHON override them. Virtualenvs go under
# TORCHPERF_LINT_VENVS (default: a temporary folder, removed at the end). Extra arguments go to
# every pytest run. Exits non-zero if any run fails or runs no test.
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
    local version=$1 candidate
    if command -v "python$version" >/dev/null 2>&1 && "python$version" -c '' 2>/dev/null; then
        command -v "python$version"
        return
    fi
    for candidate in "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/"$version".*/bin/python"$version"; do
        if [ -x "$candidate" ]; then
            echo "$candidate"
            return
        fi
    done
    echo "error: no Python $version found (set TORCHPERF_LINT_PYTHONS)" >&2
    return 1
}

# pip's output goes to a log, shown only when it fails (machines with local package indexes
# make it chatty).
pip_install() {
    local venv=$1
    shift
    if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@" >"$venv.pip.log" 2>&1; then
        cat "$venv.pip.log" >&2
        return 1
    fi
}

# Runs a command with the virtualenv active, as a user would: its console scripts first on PATH.
in_venv() {
    local venv=$1
    shift
    (
        # shellcheck disable=SC1091
        source "$venv/bin/activate"
        "$@"
    )
}

new_venv() {
    local python=$1 venv=$2
    "$python" -m venv --clear "$venv"
    pip_install "$venv" -e '.[test,lsp]'
}

bash scripts/install-chromium.sh

venvs=${TORCHPERF_LINT_VENVS:-$(mktemp -d "${TMPDIR:-/tmp}/torchperf-lint-venvs.XXXXXX")}
if [ -z "${TORCHPERF_LINT_VENVS:-}" ]; then
    trap 'rm -rf "$venvs"' EXIT
fi
pythons=${TORCHPERF_LINT_PYTHONS:-"$(find_python 3.9) $(find_python 3.13)"}

# One supported Python: its own virtualenv and pytest temporary folder, its output in its log.
suite_without_torch() {
    local python=$1 venv=$2
    shift 2
    echo "== Python $("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])'): the suite, without torch"
    new_venv "$python" "$venv"
    in_venv "$venv" python -m pytest -q -p no:cacheprovider --basetemp="$venv.tmp" "$@"
}

echo "== The suite on $pythons, side by side; each log follows when both are done"
pids=()
logs=()
for python in $pythons; do
    venv="$venvs/$(basename "$python")"
    suite_without_torch "$python" "$venv" "$@" >"$venv.log" 2>&1 &
    pids+=("$!")
    logs+=("$venv.log")
done
failed=0
for index in "${!pids[@]}"; do
    wait "${pids[$index]}" || failed=1
    cat "${logs[$index]}"
done
if [ "$failed" -ne 0 ]; then
    echo "error: the suite failed on a supported Python (see above)" >&2
    exit 1
fi

torch_python=${TORCHPERF_LINT_TORCH_PYTHON:-$(find_python 3.11)}
echo "== Python $("$torch_python" -c 'import sys; print("%d.%d" % sys.version_info[:2])'): the tests that need torch"
new_venv "$torch_python" "$venvs/torch"
pip_install "$venvs/torch" 'torch==2.13.0'
in_venv "$venvs/torch" python -m pytest -q -p no:cacheprovider -m torch "$@"
