#!/usr/bin/env bash
# Installs cargo-mutants (pinned by its lock file) unless it is already on PATH; used by
# scripts/mutants-compiler.sh to check that the tensor hunt alone catches compiler mutants.
set -euo pipefail
version="${CARGO_MUTANTS_VERSION:-27.1.0}"
if cargo mutants --version >/dev/null 2>&1; then
    cargo mutants --version
    exit 0
fi
cargo install --locked cargo-mutants --version "$version"
cargo mutants --version
