#!/usr/bin/env bash
# cargo-mutants over a sample of compiler/ with one test only: a default tensor hunt
# (`pimdiff hunt --cases 3000 --lowering both`, tests/hunt_as_test.rs). A mutant the hunt
# misses is either equivalent (no observable difference on any valid case) or a blind spot
# of the hunt; docs/tensor-coverage.md classifies them.
#
# Usage: scripts/mutants-compiler.sh [--sample N] [--sample-seed S] [--list-only]
#   --sample N       mutants to test, drawn reproducibly from the full list (default 30)
#   --sample-seed S  which sample (default 1)
#   --list-only      print the sample, test nothing
# Output: mutants.out/ (cargo-mutants' own: caught.txt, missed.txt, unviable.txt,
# timeout.txt, outcomes.json) and target/mutants-sample.txt.
#
# Mutants are applied in place (--in-place: the warm target/ is reused, no tree copy), so do
# not edit the tree while it runs; an interrupted run may leave a mutant in a source file:
# `git diff compiler/` shows it, `git checkout compiler/` removes it.
set -euo pipefail
cd "$(dirname "$0")/.."

sample=30
sample_seed=1
list_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --sample) sample="$2"; shift 2 ;;
        --sample-seed) sample_seed="$2"; shift 2 ;;
        --list-only) list_only=1; shift ;;
        *) echo "mutants-compiler: unknown argument $1" >&2; exit 2 ;;
    esac
done

bash scripts/setup-cargo-mutants.sh >&2
mkdir -p target
cargo mutants --list --package pimdiff-compiler >target/mutants-all.txt
python3 - "$sample" "$sample_seed" target/mutants-all.txt >target/mutants-sample.txt <<'PY'
import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
# The list comes as a path: standard input is this script.
names = [l.rstrip("\n") for l in open(sys.argv[3]) if l.strip()]
# The compiler's printing (--emit text) and benchmark workloads are not lowering: left out.
names = [m for m in names if not m.startswith(("compiler/src/emit.rs", "compiler/src/workloads.rs"))
         and " describe" not in m and "fmt::Display" not in m]
random.Random(seed).shuffle(names)
print("\n".join(sorted(names[:n])))  # newline-terminated by print
PY
echo "mutants-compiler: $(wc -l <target/mutants-all.txt) mutants in compiler/, sample of" \
    "$(wc -l <target/mutants-sample.txt) in target/mutants-sample.txt" >&2
if [ "$list_only" = 1 ]; then
    cat target/mutants-sample.txt
    exit 0
fi

# One exact-name filter per sampled mutant.
filters=()
while IFS= read -r name; do
    filters+=(--re "^$(printf '%s' "$name" | sed 's/[][\.*^$()+?{}|]/\\&/g')\$")
done <target/mutants-sample.txt

# The hunt runs for a few seconds; a mutant that makes it loop is stopped after 10 minutes.
# `--cargo-arg --test=hunt_as_test` goes to the build as well as the test run: without it every
# mutant's build links all of the package's test binaries, not only the one that runs.
cargo mutants --in-place --baseline=skip --timeout 600 --build-timeout 1200 \
    --package pimdiff-compiler --test-package pimdiff "${filters[@]}" \
    --cargo-arg=--test=hunt_as_test -- -- --ignored
