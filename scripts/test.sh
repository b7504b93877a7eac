#!/usr/bin/env bash
# scripts/test.sh - set up, build with warnings as errors, run every test.
# GPU tests (ctest label gpu) report "skipped" on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build -DPF_WERROR=ON
cd build
ctest --output-on-failure -j2
