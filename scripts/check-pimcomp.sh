#!/usr/bin/env bash
# Runs every PIMCOMP-NN program in ../shared/external/pimcomp (<model>-<pipeline>.json.gz)
# through a release build of `pimdiff run` (PIMCOMP-NN's array-count groups, full-size groups
# of zero cells, the default architecture) and fails unless each one finishes: no fault, no
# deadlock, no bad input. One program also runs under a random schedule and with random cells,
# and its final state must equal the fixed schedule's (schedule independence on a real
# multi-core program). Skips with a message when the folder is absent (a user's clone).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${PIMCOMP_DIR:-$root/../shared/external/pimcomp}"
if [ ! -d "$dir" ]; then
    echo "check-pimcomp: skipped ($dir is absent)"
    exit 0
fi

cargo build --release --bin pimdiff --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release/pimdiff"

status=0
count=0
for f in "$dir"/*-batch.json.gz "$dir"/*-element.json.gz; do
    [ -e "$f" ] || continue
    count=$((count + 1))
    name="$(basename "$f")"
    if out="$("$bin" run "$f" 2>&1)"; then
        echo "ok   $name: $(grep -E '^instructions executed|^wall time' <<<"$out" | tr '\n' ' ')"
    else
        echo "FAIL $name (exit $?)"
        echo "$out" | tail -20
        status=1
    fi
done
if [ "$count" -ne 10 ]; then
    echo "check-pimcomp: expected 10 programs, found $count"
    status=1
fi

# Schedule independence on a real program: fixed vs random interleaving, random cells.
probe="$dir/alexnet-element.json.gz"
if [ -e "$probe" ]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    "$bin" run "$probe" --cells random:7 --dump "$tmp/fixed" >/dev/null
    "$bin" run "$probe" --cells random:7 --schedule random:12345 --dump "$tmp/random" >/dev/null
    # stats.json may differ only in nothing schedule-dependent; compare all state files.
    if diff -rq --exclude=stats.json "$tmp/fixed" "$tmp/random" >/dev/null; then
        echo "ok   alexnet-element.json.gz: final state identical under fixed and random:12345 schedules"
    else
        echo "FAIL alexnet-element.json.gz: final state depends on the schedule"
        diff -rq --exclude=stats.json "$tmp/fixed" "$tmp/random" | head
        status=1
    fi
fi
exit "$status"
