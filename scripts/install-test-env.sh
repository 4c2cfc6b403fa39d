#!/usr/bin/env bash
# Installs torchperf-lint with its test dependencies and the `lsp` extra (pygls, for the
# language server tests), PyTorch for the `verify` tests, and
# Chromium for the tests that render `verify --html` in a real browser.
# PyTorch is installed only when missing, and then as torch==2.13.0: on machines that keep a
# CPU wheel of it on disk (as the project's build machines do) pip takes that small wheel
# instead of a multi-GB CUDA build. An existing torch is never replaced.
# Chromium: see install-chromium.sh.
set -euo pipefail
python -m pip install -q --disable-pip-version-check -e '.[test,lsp]'
python -c 'import torch' 2>/dev/null || python -m pip install -q --disable-pip-version-check 'torch==2.13.0'
bash "$(dirname "$0")/install-chromium.sh"
