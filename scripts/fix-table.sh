#!/usr/bin/env bash
# The table of candidate fixes × findings: each saved finding of a hunt replayed on the
# compiler with each fix alone, and what it does there — "checks exactly" (the fix makes the
# saved network right), "the same finding", or the new outcome (a fix that only moves a crash
# shows as another crash or abort). Each fix is built on its own with `--fix NAME` of the build
# script (a fix whose header says `Needs: N` is built with N), so a row says what that fix
# alone does.
#
#   scripts/fix-table.sh puma HUNT_OUT [FIX...]        # PUMA: `pimdiff repro DIR --puma-dir TREE`
#   scripts/fix-table.sh pimcomp-nn HUNT_OUT [FIX...]  # PIMCOMP-NN: the finding's repro.sh with
#                                                      # PIMCOMP_NN_BIN=the fix's build
#
# HUNT_OUT is a hunt's --out directory (its findings/ are replayed); FIX defaults to every fix
# in scripts/puma-fixes/ (scripts/pimcomp-fixes/). The unfixed build's column comes first (it
# must reproduce every finding, or the row's other cells mean nothing). Prints a Markdown
# table on stdout, one line per replay on stderr. Uses target/release/pimdiff (built if
# missing). Exit 0 when every replay ran; 2 on bad arguments.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${1:-}"
out="${2:-}"
if [ "$#" -lt 2 ] || [ ! -d "$out/findings" ]; then
    echo "usage: scripts/fix-table.sh puma|pimcomp-nn HUNT_OUT [FIX...] (HUNT_OUT/findings must exist)" >&2
    exit 2
fi
shift 2
case "$target" in
    puma) fixes_dir="$root/scripts/puma-fixes"; build="$root/scripts/build-puma.sh" ;;
    pimcomp-nn) fixes_dir="$root/scripts/pimcomp-fixes"; build="$root/scripts/build-pimcomp.sh" ;;
    *) echo "fix-table: unknown target '$target' (puma or pimcomp-nn)" >&2; exit 2 ;;
esac
fixes=("$@")
if [ "${#fixes[@]}" -eq 0 ]; then
    for p in "$fixes_dir"/*.patch; do fixes+=("$(basename "$p" | cut -d- -f1)"); done
fi
pimdiff="$root/target/release/pimdiff"
[ -x "$pimdiff" ] || (cd "$root" && cargo build --release -p pimdiff >&2)
export PATH="$(dirname "$pimdiff"):$PATH"

# The fixes a fix needs (its `Needs:` lines), with it: the --fix argument that builds it.
with_needs() {
    local p
    p="$(ls "$fixes_dir/$1"-*.patch)"
    local list="$1"
    for n in $(sed -n 's/^Needs: *//p' "$p"); do list="$list,${n%%-*}"; done
    echo "$list"
}

# The build of one column: the unfixed compiler ("-") or a fix.
build_of() {
    if [ "$1" = - ]; then "$build" | tail -1; else "$build" --fix "$(with_needs "$1")" | tail -1; fi
}

# One replay of finding DIR (saved signature SIG) on TREE: prints the cell. A crash or abort
# that becomes another crash or abort is labelled as moved, not fixed.
replay() {
    local dir="$1" tree="$2" sig="$3" text code
    if [ "$target" = puma ]; then
        set +e
        text="$("$pimdiff" repro "$dir" --puma-dir "$tree" --puma-sanitize-dir "$(dirname "$tree")/sanitize" 2>&1)"
        code=$?
        set -e
        local now
        now="$(printf '%s\n' "$text" | sed -n 's/^now: *//p' | head -1)"
        echo "  $(basename "$dir") on $tree: exit $code: $now" >&2
        case "$code" in
            1) echo "the same finding" ;;
            0) case "$sig:$now" in
                   *:pass*) echo "checks exactly (${now#*: })" ;;
                   crash:*:crash:* | crash:*:abort:* | abort:*:crash:* | abort:*:abort:*)
                       echo "moves the crash: ${now% (*}" ;;
                   *) echo "${now% (*}" ;;
               esac ;;
            *) echo "not replayed (exit $code: $(printf '%s\n' "$text" | tail -1))" ;;
        esac
    else
        set +e
        text="$(cd "$dir" && PIMCOMP_NN_BIN="$tree" sh ./repro.sh 2>&1)"
        code=$?
        set -e
        echo "  $(basename "$dir") on $tree: exit $code" >&2
        local last
        last="$(printf '%s\n' "$text" | grep -v '^ *$' | tail -1)"
        case "$code" in
            0) echo "checks exactly" ;;
            1) echo "fails: $last" ;;
            4) echo "cannot be judged: $last" ;;
            *) echo "exit $code: $last" ;;
        esac
    fi
}

columns=(- "${fixes[@]}")
declare -A tree
for c in "${columns[@]}"; do tree[$c]="$(build_of "$c")"; done
header="| finding |"
rule="|---|"
for c in "${columns[@]}"; do
    if [ "$c" = - ]; then header="$header unfixed |"; else header="$header fix $(with_needs "$c" | tr , +) |"; fi
    rule="$rule---|"
done
echo "$header"
echo "$rule"
for dir in "$out"/findings/*/; do
    dir="${dir%/}"
    sig="$(sed -n 's/^ *"signature": *"\(.*\)",$/\1/p' "$dir/finding.json" | head -1)"
    row="| \`$(basename "$dir")\` (\`$sig\`) |"
    for c in "${columns[@]}"; do
        row="$row $(replay "$dir" "${tree[$c]}" "$sig" | sed 's/|/\\|/g') |"
    done
    echo "$row"
done
