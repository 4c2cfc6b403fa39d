#!/usr/bin/env bash
# Installs Chromium for the tests that render `verify --html` in a real browser: Debian's
# package, with apt-get (as root, or through sudo), only when no Chromium or Chrome is on the
# PATH.
set -euo pipefail
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null \
    && ! command -v google-chrome >/dev/null; then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -q
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
fi
