#!/usr/bin/env bash
# Builds a pimdiff whose guided tensor hunts are fed by the in-repo compiler's own coverage:
# the crate pimdiff-compiler (and the binary, which links LLVM's profile runtime) compiled with
# `-C instrument-coverage`, everything else as usual, and the feature `coverage-counters`
# (targets/pimsim/src/counters.rs reads the counters in-process). Only the compiler crate is
# instrumented so that a case's counters are the compiler's work on that case, not the engine's
# threads. Separate target directory: target/coverage-counters.
#
#   scripts/build-coverage-counters.sh     # prints the binary's path on the last line
#
# Then: BIN hunt --guided --jobs 1 --cases 3000 --seed 1   (summary.json: details.guided.feedback
# names the counters). The binary writes default.profraw into its working directory at exit
# (set LLVM_PROFILE_FILE=/dev/null to drop it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wrapper="$root/target/coverage-counters/rustc-wrapper.sh"
mkdir -p "$(dirname "$wrapper")"
cat >"$wrapper" <<'WRAP'
#!/usr/bin/env bash
# cargo calls: WRAPPER RUSTC ARGS...; instrument the compiler crate and the pimdiff binary only.
rustc=$1; shift
name=""; prev=""; bin=0
for a in "$@"; do
  [ "$prev" = --crate-name ] && name=$a
  [ "$prev" = --crate-type ] && [ "$a" = bin ] && bin=1
  prev=$a
done
if [ "$name" = pimdiff_compiler ] || { [ "$name" = pimdiff ] && [ "$bin" = 1 ]; }; then
  exec "$rustc" "$@" -C instrument-coverage
fi
exec "$rustc" "$@"
WRAP
chmod +x "$wrapper"
cd "$root"
RUSTC_WRAPPER="$wrapper" CARGO_TARGET_DIR="$root/target/coverage-counters" CARGO_INCREMENTAL=0 \
  cargo build --release --bin pimdiff --features coverage-counters >&2
echo "$root/target/coverage-counters/release/pimdiff"
