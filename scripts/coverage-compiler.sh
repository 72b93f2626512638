#!/usr/bin/env bash
# Which lines and branches of compiler/src the unit tests reach and a tensor hunt does not.
#
# Builds the workspace with LLVM source-based coverage (lines and branches: branch coverage
# needs a nightly rustc, `-Z coverage-options=branch`) into target/coverage, then
#   (a) runs `cargo test -p pimdiff-compiler` (the compiler's unit and integration tests),
#   (b) runs `pimdiff hunt --cases N --lowering both` (default generator, seed SEED),
# and writes each one's lcov report of compiler/src plus the difference (a) minus (b):
#   target/coverage/report/{unit,hunt}.lcov, target/coverage/report/gap.txt
# gap.txt lists every file:line the unit tests reach and the hunt does not ("line"), and
# every branch outcome ("branch L:i" = the i-th branch outcome on line L, in llvm-cov's order).
#
# Usage: scripts/coverage-compiler.sh [--cases N] [--seed S] [--jobs J] [--skip-unit]
#        [-- EXTRA HUNT FLAGS]
# COVERAGE_TARGET_DIR overrides target/coverage; one target dir serves one checkout only (cargo
# names path crates relative to the workspace root, so another checkout's build looks fresh).
# Needs: LLVM tools of rustc's LLVM version (scripts/setup-llvm-cov.sh installs them), a
# nightly toolchain whose LLVM major version is the same (`rustup toolchain install nightly`).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

cases=3000
seed=20261122
jobs=2
skip_unit=0
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --cases) cases="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --skip-unit) skip_unit=1; shift ;;
        --) shift; extra=("$@"); break ;;
        *) echo "coverage-compiler: unknown argument $1" >&2; exit 2 ;;
    esac
done

toolchain="${COVERAGE_TOOLCHAIN:-nightly}"
llvm_major="$(rustup run "$toolchain" rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')"
if [ -z "${LLVM_PROFDATA:-}" ] || [ -z "${LLVM_COV:-}" ]; then
    LLVM_PROFDATA="/usr/lib/llvm-$llvm_major/bin/llvm-profdata"
    LLVM_COV="/usr/lib/llvm-$llvm_major/bin/llvm-cov"
fi
for tool in "$LLVM_PROFDATA" "$LLVM_COV"; do
    [ -x "$tool" ] || {
        echo "coverage-compiler: $tool missing (run scripts/setup-llvm-cov.sh)" >&2
        exit 2
    }
done

export CARGO_TARGET_DIR="${COVERAGE_TARGET_DIR:-$repo/target/coverage}"
export RUSTFLAGS="-C instrument-coverage -Z coverage-options=branch --cfg coverage_nightly"
export CARGO_INCREMENTAL=0
# Build scripts and proc macros are instrumented too: their profiles go with the others.
export LLVM_PROFILE_FILE="${CARGO_TARGET_DIR}/profraw/build-%p-%m.profraw"
report="$CARGO_TARGET_DIR/report"
prof="$CARGO_TARGET_DIR/profraw"
mkdir -p "$report"
export_lcov() { # name objects...
    local name="$1"
    shift
    local objs=()
    local first="$1"
    shift
    for o in "$@"; do objs+=(--object "$o"); done
    "$LLVM_PROFDATA" merge -sparse "$prof/$name"-*.profraw -o "$report/$name.profdata"
    "$LLVM_COV" export --format=lcov --instr-profile="$report/$name.profdata" \
        "$first" "${objs[@]}" "$repo/compiler/src" >"$report/$name.lcov"
}

if [ "$skip_unit" = 0 ]; then
    rm -f "$prof"/unit-*.profraw
    mapfile -t unit_bins < <(cargo "+$toolchain" test -p pimdiff-compiler --no-run \
        --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])')
    LLVM_PROFILE_FILE="$prof/unit-%p-%m.profraw" cargo "+$toolchain" test -p pimdiff-compiler \
        --lib --tests -q >"$report/unit-test.log" 2>&1 ||
        { tail -20 "$report/unit-test.log"; exit 1; }
    export_lcov unit "${unit_bins[@]}"
fi

cargo "+$toolchain" build -q -p pimdiff --bin pimdiff
rm -f "$prof"/hunt-*.profraw
rm -rf "$report/hunt-out"
set +e
LLVM_PROFILE_FILE="$prof/hunt-%p-%m.profraw" "$CARGO_TARGET_DIR/debug/pimdiff" hunt -q \
    --seed "$seed" --cases "$cases" --lowering both --jobs "$jobs" --out "$report/hunt-out" \
    "${extra[@]}" >"$report/hunt.log" 2>&1
hunt_rc=$?
set -e
echo "hunt: seed $seed, $cases cases, exit $hunt_rc ($(tail -1 "$report/hunt.log"))"
export_lcov hunt "$CARGO_TARGET_DIR/debug/pimdiff"

python3 - "$report/unit.lcov" "$report/hunt.lcov" "$repo" >"$report/gap.txt" <<'PY'
import sys
def read(path):
    lines, branches = set(), set()
    allb = set()
    f = None
    seen = {}
    for row in open(path):
        row = row.strip()
        if row.startswith("SF:"):
            f = row[3:].split("/compiler/src/", 1)[-1]
            seen = {}
        elif row.startswith("DA:"):
            ln, n = row[3:].split(",")[:2]
            if int(n) > 0:
                lines.add((f, int(ln)))
        elif row.startswith("BRDA:"):
            ln, _blk, _br, n = row[5:].split(",")
            i = seen.get(ln, 0)
            seen[ln] = i + 1
            key = (f, int(ln), i)
            allb.add(key)
            if n not in ("-", "0"):
                branches.add(key)
    return lines, branches, allb
ul, ub, uall = read(sys.argv[1])
hl, hb, hall = read(sys.argv[2])
gl = sorted(ul - hl)
gb = sorted(ub - hb)
print(f"# unit tests reach {len(ul)} lines, {len(ub)} branch outcomes of compiler/src")
print(f"# the hunt reaches {len(hl)} lines, {len(hb)} branch outcomes")
print(f"# unit-only: {len(gl)} lines, {len(gb)} branch outcomes")
for f, ln in gl:
    print(f"compiler/src/{f}:{ln} line")
for f, ln, i in gb:
    print(f"compiler/src/{f}:{ln} branch {ln}:{i}")
PY
head -3 "$report/gap.txt"
echo "report: $report/gap.txt"
