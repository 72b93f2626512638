#!/usr/bin/env bash
# Installs LLVM coverage tools whose profile format matches the Rust toolchain's LLVM,
# and prints LLVM_COV / LLVM_PROFDATA for `cargo llvm-cov` or scripts/coverage-compiler.sh.
#
# rustup's llvm-tools component is not installable on the project's machines, so the tools
# come from Debian: the LLVM major version of `rustc -vV` (llvm-22 for rustc 1.95) is in
# bookworm-security; an older llvm-cov cannot read the newer raw profile format.
# Usage: eval "$(scripts/setup-llvm-cov.sh)"
set -euo pipefail

major="$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')"
if [[ -z "$major" ]]; then
    echo "setup-llvm-cov: cannot read the LLVM version from rustc -vV" >&2
    exit 1
fi
bin="/usr/lib/llvm-${major}/bin"
if [[ ! -x "$bin/llvm-cov" || ! -x "$bin/llvm-profdata" ]]; then
    sudo=""
    if [[ "$(id -u)" != 0 ]]; then sudo="sudo"; fi
    if ! apt-cache policy "llvm-${major}" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        $sudo apt-get update >&2
    fi
    if ! apt-cache policy "llvm-${major}" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        echo "setup-llvm-cov: no llvm-${major} package in the configured Debian archives;" \
            "add the security suite of $(. /etc/os-release && echo "$VERSION_CODENAME")" \
            "or the LLVM project's apt repository for it" >&2
        exit 1
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends \
        "llvm-${major}" >&2
fi
echo "export LLVM_COV=$bin/llvm-cov"
echo "export LLVM_PROFDATA=$bin/llvm-profdata"
