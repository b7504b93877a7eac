#!/usr/bin/env bash
# scripts/start.sh - set up, build, and open the PageFault dashboard.
# Extra arguments go to `pagefault` (e.g. --watermark 0.05 --workers 256).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
exec build/pagefault "$@"
