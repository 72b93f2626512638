#!/usr/bin/env bash
# Creates (once) the Python virtual environment the interop tests need: NumPy, ONNX (checker and
# reference evaluator) and IREE (MLIR compiler + runtime, llvm-cpu backend), pinned in
# scripts/python-requirements.txt, all from PyPI.
#
#   eval "$(scripts/setup-python.sh)"     # sets PIMDIFF_PYTHON for this shell
#   source scripts/setup-python.sh        # the same
#
# The environment lives in $PIMDIFF_VENV (default: target/python, git-ignored). It is reused
# while the requirements file is unchanged (a stamp records its checksum), so a second run
# takes a second. Progress goes to stderr; stdout carries only the `export PIMDIFF_PYTHON=...`
# line. Exit 2 when no usable python3 (3.11 or newer, with venv) is found: the pinned NumPy
# (2.4.6) publishes packages for Python 3.11 and newer only.

_pimdiff_setup_python() {
    local root venv req stamp sum py found
    # The oldest Python the pins in python-requirements.txt install on (numpy 2.4.6).
    local required="3.11" required_tuple="3, 11"
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    venv="${PIMDIFF_VENV:-$root/target/python}"
    req="$root/scripts/python-requirements.txt"
    stamp="$venv/.pimdiff-requirements.sha256"
    py="${PYTHON:-python3}"

    if ! command -v "$py" >/dev/null 2>&1; then
        echo "setup-python: $py not found; install Python $required or newer (with venv) or set PYTHON" >&2
        return 2
    fi
    found="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" || found="?"
    if ! "$py" -c "import sys; sys.exit(sys.version_info[:2] < ($required_tuple))" 2>/dev/null; then
        echo "setup-python: $py is Python $found; the pinned packages (numpy 2.4.6 in" \
            "scripts/python-requirements.txt) need Python $required or newer: install it, or set" \
            "PYTHON to one" >&2
        return 2
    fi
    if ! "$py" -c 'import venv' 2>/dev/null; then
        echo "setup-python: $py (Python $found) lacks the venv module (Debian: apt-get install" \
            "python3-venv)" >&2
        return 2
    fi
    sum="$(sha256sum "$req" | cut -d' ' -f1)"
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
        echo "setup-python: $venv is up to date" >&2
    else
        echo "setup-python: creating $venv (numpy, onnx, iree-base-compiler, iree-base-runtime)" >&2
        rm -f "$stamp"
        "$py" -m venv "$venv" >&2 || return 2
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            -r "$req" >&2 || return 2
        echo "$sum" >"$stamp"
    fi
    PIMDIFF_PYTHON="$venv/bin/python"
    export PIMDIFF_PYTHON
    echo "export PIMDIFF_PYTHON='$PIMDIFF_PYTHON'"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    _pimdiff_setup_python
else
    _pimdiff_setup_python >/dev/null
fi
