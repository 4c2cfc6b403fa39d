#!/usr/bin/env bash
# Installs torchperf-lint with its test dependencies, PyTorch for the `verify` tests, and
# Chromium for the tests that render `verify --html` in a real browser.
# PyTorch is installed only when missing, and then as torch==2.13.0: on machines that keep a
# CPU wheel of it on disk (as the project's build machines do) pip takes that small wheel
# instead of a multi-GB CUDA build. An existing torch is never replaced.
# Chromium is Debian's package, installed with apt-get (as root, or through sudo) only when no
# Chromium or Chrome is on the PATH.
set -euo pipefail
python -m pip install -q --disable-pip-version-check -e '.[test]'
python -c 'import torch' 2>/dev/null || python -m pip install -q --disable-pip-version-check 'torch==2.13.0'
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null \
    && ! command -v google-chrome >/dev/null; then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -q
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
fi
