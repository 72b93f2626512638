#!/usr/bin/env bash
# The README's test command: creates (once) the Python environment the interop tests use
# (NumPy, ONNX, IREE; scripts/setup-python.sh), then runs the whole workspace's tests.
# Extra arguments go to `cargo test` (e.g. `scripts/test.sh -p pimdiff --test tidy`).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/setup-python.sh)"
exec cargo test --workspace "$@"
