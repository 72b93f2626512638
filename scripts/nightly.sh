#!/usr/bin/env bash
# The nightly miscompilation hunt: `pimdiff hunt` for a while, then every cargo-fuzz target for a
# while, then every fuzz crash artifact of a lowering target turned into a minimized case
# directory (`pimdiff from-fuzz`). Everything found lands in one directory with one summary.md.
# Each machine runs its share (--shard i/n); `merge` then joins the shards' directories into one
# report, each hunt finding once (`pimdiff merge`).
#
# Usage: scripts/nightly.sh [--duration 10m] [--fuzz-duration 5m] [--out DIR] [--seed S]
#                           [--shard i/n] [--corpus DIR] [--targets "t1 t2 ..."]
#                           [--target cases|pimcomp-nn] [--compiler-cmd CMD] [-- HUNT FLAGS...]
#        scripts/nightly.sh merge --out MERGED SHARD_DIR...
#
#   --duration       how long `pimdiff hunt` runs (s/m/h suffix; 0 skips the hunt)
#   --fuzz-duration  how long EACH fuzz target runs (0 skips fuzzing)
#   --out            where findings and summary.md go (default: nightly-out/<UTC date>-<seed>)
#   --seed           hunt seed and libFuzzer seed base (default: the UTC date, YYYYMMDD)
#   --shard i/n      this is shard i of n (0-based): the hunt runs its i-th share of the
#                    seeds (pimdiff hunt --shard i/n) and this shard fuzzes the targets whose
#                    index k (in --targets order) has k mod n == i
#   --corpus         where each target's growing corpus lives (default: fuzz/corpus-nightly;
#                    CI caches it); the committed seeds fuzz/corpus/<target> are read too
#   --targets        the fuzz targets to consider (default: all five)
#   --target T       what the hunt hunts (pimdiff hunt --target; default cases). For
#                    pimcomp-nn without --pimcomp-bin among the hunt flags, the compiler is
#                    built by scripts/build-pimcomp.sh
#   --compiler-cmd C your own compiler (`mycc {case} {out}`, the bundle protocol of
#                    `pimdiff compile`): the hunt, the lowering fuzz targets
#                    (PIMDIFF_FUZZ_COMPILER_CMD) and the conversion of their artifacts all
#                    check it instead of the in-repo compiler; the PIMCOMP-NN step is skipped
#   --pimcomp-duration  how long EACH PIMCOMP-NN pipeline is hunted (`pimdiff hunt --target
#                    pimcomp-nn --mode batch|element`; default 10m; 0 skips; only with
#                    --target cases and the in-repo compiler). The compiler is built by
#                    scripts/build-pimcomp.sh (needs the source tarball: PIMDIFF_SHARED or
#                    PIMCOMP_NN_SRC); without it the step says so and is skipped
#   --inject-bug C   check the in-repo compiler with the injected miscompilation C (e.g.
#                    missing-bias) everywhere: an end-to-end check that findings are found,
#                    converted and summarized
#   -- FLAGS...      every flag after `--` goes to `pimdiff hunt` as it is (--max-channels 4,
#                    --compiler-timeout 30s, --mode element, ...)
#
#   merge --out MERGED SHARD_DIR...   joins the directories of several shards (or nights): each
#                    hunt output (hunt/, pimcomp-batch/, pimcomp-element/) with `pimdiff merge`,
#                    the fuzz findings copied under MERGED/fuzz-findings/<shard>/, and one
#                    MERGED/summary.md
#
# Fuzzing needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`); without them
# the script says so and runs the hunt alone. PIMDIFF_BIN names a pimdiff binary to use instead
# of building one (`cargo build --release`).
#
# Exit codes, as pimdiff's own (ARCHITECTURE.md, "Exit codes"): 0 nothing found; 1 something
# found (see summary.md); 2 the script itself could not run (bad flags, build failure, a tool
# that crashed without a finding); 4 nothing found, but a hunt could not give a verdict (its
# compiler declined more cases than the generator explains, or every case).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

duration=10m
fuzz_duration=5m
pimcomp_duration=10m
out=""
seed=$(date -u +%Y%m%d)
shard=0/1
corpus_root="$repo/fuzz/corpus-nightly"
targets="conv_lowering mvm_lowering interp parse_program parse_case"
inject_bug=""
target=cases
compiler_cmd=""
hunt_extra=()

die() { echo "nightly: $*" >&2; exit 2; }

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}

# The pimdiff binary: $PIMDIFF_BIN, or a release build.
build_pimdiff() {
  if [ -n "${PIMDIFF_BIN:-}" ]; then
    [ -x "$PIMDIFF_BIN" ] || die "PIMDIFF_BIN=$PIMDIFF_BIN is not an executable"
    pimdiff=$PIMDIFF_BIN
    return
  fi
  pimdiff="$CARGO_TARGET_DIR/release/pimdiff"
  echo "== release build"
  cargo build --release --bin pimdiff >"$1" 2>&1 || { tail -30 "$1" >&2; die "release build failed (log: $1)"; }
}

# `merge --out MERGED SHARD...`: every hunt output the shards share merged by `pimdiff merge`,
# their fuzz findings copied, one summary.md; exits by the same codes.
merge_shards() {
  local merged=$1; shift
  local found=0 errors=0 undecided=0 name rc d shard dirs
  local -a parts=()
  for name in hunt pimcomp-batch pimcomp-element; do
    dirs=()
    for d in "$@"; do [ -f "$d/$name/summary.json" ] && dirs+=("$d/$name"); done
    [ ${#dirs[@]} -gt 0 ] || continue
    echo "== pimdiff merge ${dirs[*]} --out $merged/$name"
    "$pimdiff" merge "${dirs[@]}" --out "$merged/$name" >"$merged/logs/merge-$name.log" 2>&1
    rc=$?
    case $rc in
      0) ;;
      1) found=1 ;;
      4) undecided=1 ;;
      *) errors=1; parts+=("## $name: merge failed (exit $rc)" "" '```' "$(tail -5 "$merged/logs/merge-$name.log")" '```' "") ;;
    esac
    if [ -f "$merged/$name/summary.md" ]; then
      parts+=("$(sed 's/^#/##/' "$merged/$name/summary.md")" "")
    fi
  done
  for d in "$@"; do
    shard=$(basename "$d")
    if [ -d "$d/findings" ] && [ -n "$(ls -A "$d/findings" 2>/dev/null)" ]; then
      mkdir -p "$merged/fuzz-findings/$shard"
      cp -r "$d/findings/." "$merged/fuzz-findings/$shard/"
      found=1
    fi
    if [ -n "$(find "$d/fuzz" -path '*/artifacts/*' -type f 2>/dev/null | head -1)" ]; then found=1; fi
    if [ -f "$d/summary.md" ]; then
      parts+=("## Fuzzing: shard \`$shard\`" "" "$(sed -n '/^## Fuzz targets/,$p' "$d/summary.md" | sed 's/^#/##/')" "")
    fi
  done
  {
    echo "# Nightly hunt, merged from $# shard(s), $(date -u +%Y-%m-%d)"
    echo
    echo "- commit: \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`"
    echo "- shards: $(for d in "$@"; do printf '`%s` ' "$(basename "$d")"; done)"
    echo "- fuzz findings converted by the shards: \`fuzz-findings/<shard>/\`"
    echo
    printf '%s\n' "${parts[@]}"
  } >"$merged/summary.md"
  echo "== summary: $merged/summary.md"
  cat "$merged/summary.md"
  [ "$found" = 0 ] || exit 1
  [ "$errors" = 0 ] || exit 2
  [ "$undecided" = 0 ] || exit 4
  exit 0
}

if [ "${1:-}" = merge ]; then
  shift
  merged=""
  shards=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --out) merged=${2:?}; shift 2 ;;
      -*) die "merge: unknown argument '$1' (see --help)" ;;
      *) shards+=("$1"); shift ;;
    esac
  done
  [ -n "$merged" ] || die "merge: --out MERGED is required"
  [ ${#shards[@]} -gt 0 ] || die "merge: give the shard directories to merge"
  for d in "${shards[@]}"; do [ -d "$d" ] || die "merge: '$d' is not a directory"; done
  mkdir -p "$merged/logs" || die "cannot create '$merged'"
  build_pimdiff "$merged/logs/build.log"
  merge_shards "$merged" "${shards[@]}"
fi

while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=${2:?}; shift 2 ;;
    --fuzz-duration) fuzz_duration=${2:?}; shift 2 ;;
    --pimcomp-duration) pimcomp_duration=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --seed) seed=${2:?}; shift 2 ;;
    --shard) shard=${2:?}; shift 2 ;;
    --corpus) corpus_root=${2:?}; shift 2 ;;
    --targets) targets=${2:?}; shift 2 ;;
    --inject-bug) inject_bug=${2:?}; shift 2 ;;
    --target) target=${2:?}; shift 2 ;;
    --compiler-cmd) compiler_cmd=${2:?}; shift 2 ;;
    --) shift; hunt_extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (hunt flags go after --; see --help)" ;;
  esac
done

# "90", "90s", "10m", "2h" -> seconds.
to_seconds() {
  case "$1" in
    *h) echo $(( ${1%h} * 3600 )) ;;
    *m) echo $(( ${1%m} * 60 )) ;;
    *s) echo $(( ${1%s} )) ;;
    *) echo $(( $1 )) ;;
  esac
}
[[ "$duration" =~ ^[0-9]+[smh]?$ ]] || die "--duration '$duration' is not like 90s, 10m or 2h"
[[ "$fuzz_duration" =~ ^[0-9]+[smh]?$ ]] || die "--fuzz-duration '$fuzz_duration' is not like 90s, 10m or 2h"
[[ "$seed" =~ ^[0-9]+$ ]] || die "--seed '$seed' is not a non-negative integer"
[[ "$shard" =~ ^[0-9]+/[0-9]+$ ]] || die "--shard '$shard' is not i/n"
shard_i=${shard%/*}
shard_n=${shard#*/}
[ "$shard_n" -ge 1 ] && [ "$shard_i" -lt "$shard_n" ] || die "--shard '$shard' needs 0 <= i < n"
[[ "$pimcomp_duration" =~ ^[0-9]+[smh]?$ ]] || die "--pimcomp-duration '$pimcomp_duration' is not like 90s, 10m or 2h"
[ -z "$inject_bug" ] || [ -z "$compiler_cmd" ] || die "--inject-bug and --compiler-cmd: check one compiler at a time"
[ "$target" = cases ] || [ -z "$compiler_cmd$inject_bug" ] || die "--compiler-cmd and --inject-bug are flags of --target cases"
hunt_secs=$(to_seconds "$duration")
pimcomp_secs=$(to_seconds "$pimcomp_duration")
fuzz_secs=$(to_seconds "$fuzz_duration")

[ -n "$out" ] || out="nightly-out/$(date -u +%Y%m%d-%H%M%S)-seed$seed-shard$shard_i"
mkdir -p "$out" || die "cannot create '$out'"
out=$(cd "$out" && pwd)
mkdir -p "$corpus_root" || die "cannot create '$corpus_root'"
corpus_root=$(cd "$corpus_root" && pwd)
logs="$out/logs"
mkdir -p "$logs" "$out/findings"

echo "nightly: --target $target, seed $seed, shard $shard_i/$shard_n, hunt ${hunt_secs}s, fuzz ${fuzz_secs}s per target, out $out"
build_pimdiff "$logs/build.log"

# The compiler under test, for the hunt, the fuzz targets and from-fuzz alike.
compiler_args=()
compiler_words="the in-repo compiler"
if [ -n "$inject_bug" ]; then
  compiler_args=(--inject-bug "$inject_bug")
  compiler_words="in-repo with the injected bug \`$inject_bug\` (--inject-bug)"
  export PIMDIFF_FUZZ_INJECT_BUG="$inject_bug"
elif [ -n "$compiler_cmd" ]; then
  compiler_args=(--compiler-cmd "$compiler_cmd")
  compiler_words="\`$compiler_cmd\` (--compiler-cmd)"
  # The fuzz targets run from fuzz/: the command runs from the repository, as the hunt's does.
  export PIMDIFF_FUZZ_COMPILER_CMD="cd '$repo' && $compiler_cmd"
fi
[ "$target" = cases ] || compiler_words="--target $target"

hunt_status="skipped (--duration 0)"
hunt_findings=0
infra_errors=0
no_verdict=0

# The finding directories of a hunt output (any target).
count_findings() {
  find "$1/findings" -mindepth 1 -maxdepth 1 -type d ! -name '.*' 2>/dev/null | wc -l
}

# PIMCOMP-NN's binary, built once (scripts/build-pimcomp.sh); empty when it cannot be built.
pimcomp_bin=""
pimcomp_built=0
build_pimcomp() {
  if [ "$pimcomp_built" = 0 ]; then
    pimcomp_built=1
    pimcomp_bin=$(scripts/build-pimcomp.sh 2>"$logs/build-pimcomp.log" | tail -1) && [ -x "$pimcomp_bin" ] || pimcomp_bin=""
  fi
  [ -n "$pimcomp_bin" ]
}

# ---------------------------------------------------------------------------------------------
# 1. The hunt.
if [ "$hunt_secs" -gt 0 ]; then
  echo "== pimdiff hunt --target $target (${hunt_secs}s)"
  hunt_args=(--target "$target" --seed "$seed" --shard "$shard_i/$shard_n" --duration "${hunt_secs}s"
             --out "$out/hunt" --quiet "${compiler_args[@]}")
  if [ "$target" = pimcomp-nn ] && ! printf '%s\n' "${hunt_extra[@]}" | grep -q -- '^--pimcomp-bin'; then
    build_pimcomp || die "--target pimcomp-nn: scripts/build-pimcomp.sh could not build PIMCOMP-NN (see $logs/build-pimcomp.log); or pass -- --pimcomp-bin PATH"
    hunt_args+=(--pimcomp-bin "$pimcomp_bin")
  fi
  "$pimdiff" hunt "${hunt_args[@]}" "${hunt_extra[@]}" >"$logs/hunt.log" 2>&1
  rc=$?
  case $rc in
    0) hunt_status="nothing found" ;;
    1) hunt_status="FINDINGS" ;;
    4) hunt_status="NO VERDICT (see hunt/summary.md)"; no_verdict=1 ;;
    *) hunt_status="error (exit $rc, see logs/hunt.log)"; infra_errors=$((infra_errors + 1)) ;;
  esac
  hunt_findings=$(count_findings "$out/hunt")
  if [ "$rc" = 1 ] && [ "$hunt_findings" = 0 ]; then hunt_findings=1; fi
  echo "   $hunt_status ($hunt_findings finding directories)"
fi

# ---------------------------------------------------------------------------------------------
# 1b. PIMCOMP-NN itself: random networks through the real compiler, per pipeline.
pimcomp_status="skipped (--pimcomp-duration 0)"
pimcomp_findings=0
if [ "$pimcomp_secs" -gt 0 ] && { [ "$target" != cases ] || [ -n "$inject_bug$compiler_cmd" ]; }; then
  pimcomp_status="skipped (it checks PIMCOMP-NN itself: only with --target cases and the in-repo compiler)"
elif [ "$pimcomp_secs" -gt 0 ]; then
  if build_pimcomp; then
    pimcomp_status="ran"
    for mode in batch element; do
      echo "== pimdiff hunt --target pimcomp-nn --mode $mode --guided (${pimcomp_secs}s)"
      # Coverage-guided, from the corpus the previous night left (kept under --corpus's root,
      # which CI caches), and leaving this night's corpus there for the next.
      net_corpus="$corpus_root/pimcomp-$mode"
      from_corpus=()
      [ -n "$(ls -A "$net_corpus" 2>/dev/null)" ] && from_corpus=(--corpus "$net_corpus")
      "$pimdiff" hunt --target pimcomp-nn --mode "$mode" --pimcomp-bin "$pimcomp_bin" \
        --seed "$seed" --shard "$shard_i/$shard_n" --duration "${pimcomp_secs}s" --minimize-time 60s \
        --guided "${from_corpus[@]}" --out "$out/pimcomp-$mode" --quiet >"$logs/pimcomp-$mode.log" 2>&1
      rc=$?
      if [ -d "$out/pimcomp-$mode/corpus" ] && [ "$rc" -le 1 ]; then
        rm -rf "$net_corpus.new" && cp -r "$out/pimcomp-$mode/corpus" "$net_corpus.new" \
          && rm -rf "$net_corpus" && mv "$net_corpus.new" "$net_corpus"
      fi
      case $rc in
        0|1) ;;
        4) no_verdict=1 ;;
        *) pimcomp_status="error (exit $rc, see logs/pimcomp-$mode.log)"; infra_errors=$((infra_errors + 1)) ;;
      esac
      n=$(count_findings "$out/pimcomp-$mode")
      pimcomp_findings=$((pimcomp_findings + n))
      echo "   $n distinct finding(s)"
    done
  else
    pimcomp_status="skipped: scripts/build-pimcomp.sh could not build PIMCOMP-NN (see logs/build-pimcomp.log)"
  fi
fi

# ---------------------------------------------------------------------------------------------
# 2. The fuzz targets (this shard's share).
fuzz_status="skipped (--fuzz-duration 0)"
declare -a fuzz_rows=()
declare -a converted=()
declare -a unconverted=()
k=0
mine=""
for t in $targets; do
  if [ $(( k % shard_n )) = "$shard_i" ]; then mine="$mine $t"; fi
  k=$((k + 1))
done

if [ "$fuzz_secs" -gt 0 ]; then
  if ! cargo +nightly --version >/dev/null 2>&1; then
    fuzz_status="skipped: no nightly toolchain (rustup toolchain install nightly)"
  elif ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    fuzz_status="skipped: cargo-fuzz is not installed (cargo install cargo-fuzz)"
  elif [ -z "$mine" ]; then
    fuzz_status="skipped: no target falls to shard $shard_i/$shard_n"
  else
    fuzz_status="ran:$mine"
    echo "== cargo fuzz build"
    # cargo-fuzz keeps its own target dir (fuzz/target); our CARGO_TARGET_DIR is for stable.
    (cd fuzz && env -u CARGO_TARGET_DIR cargo +nightly fuzz build -O) >"$logs/fuzz-build.log" 2>&1 \
      || { tail -30 "$logs/fuzz-build.log" >&2; die "cargo fuzz build failed (log: $logs/fuzz-build.log)"; }
  fi
fi

if [[ "$fuzz_status" == ran:* ]]; then
  idx=0
  for t in $mine; do
    idx=$((idx + 1))
    case $t in
      parse_program) dict="-dict=$repo/fuzz/dicts/program.dict" ;;
      parse_case) dict="-dict=$repo/fuzz/dicts/case.dict" ;;
      *) dict="" ;;
    esac
    work="$corpus_root/$t"
    arts="$out/fuzz/$t/artifacts"
    mkdir -p "$work" "$arts"
    echo "== cargo fuzz run $t (${fuzz_secs}s)"
    # libFuzzer stops at the first crash; restart it on the remaining time (a crash already
    # saved is in $arts) so one shallow bug does not end the night. At most 5 restarts.
    start=$(date +%s)
    runs=0
    execs=0
    while :; do
      left=$(( fuzz_secs - ($(date +%s) - start) ))
      [ "$left" -gt 0 ] && [ "$runs" -lt 6 ] || break
      log="$logs/fuzz-$t-$runs.log"
      (cd fuzz && env -u CARGO_TARGET_DIR cargo +nightly fuzz run -O "$t" "$work" "$repo/fuzz/corpus/$t" -- \
        -max_total_time="$left" -seed="$((seed * 10 + idx + runs * 7919))" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$arts/" -print_final_stats=1 $dict) >"$log" 2>&1
      rc=$?
      runs=$((runs + 1))
      n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
      execs=$(( execs + ${n:-0} ))
      [ "$rc" = 0 ] && break
      if ! ls "$arts" | grep -q .; then
        echo "   libFuzzer exited $rc without an artifact (see $log)"
        infra_errors=$((infra_errors + 1))
        break
      fi
    done
    elapsed=$(( $(date +%s) - start ))
    [ "$elapsed" -gt 0 ] || elapsed=1
    corp=$(ls "$work" | wc -l)
    cov=$(grep -o 'cov: [0-9]*' "$logs/fuzz-$t-$((runs - 1)).log" 2>/dev/null | tail -1 | sed 's/cov: //')
    crashes=$(ls "$arts" | grep -c '^crash-' || true)
    others=$(ls "$arts" | grep -v -c '^crash-' || true)
    fuzz_rows+=("| $t | ${elapsed}s | $execs | $(( execs / elapsed )) | $corp | ${cov:-?} | $crashes | $others |")
    echo "   $execs execs, $(( execs / elapsed )) exec/s, corpus $corp, crashes $crashes, timeouts/ooms $others"

    # 3. Every artifact of a lowering target becomes a minimized case directory.
    for a in "$arts"/*; do
      [ -f "$a" ] || continue
      name=$(basename "$a")
      if [ "$t" = conv_lowering ] || [ "$t" = mvm_lowering ]; then
        dest="$out/findings/fuzz-$t-$name"
        "$pimdiff" from-fuzz "$a" --target "$t" "$dest" --minimize-time 10s "${compiler_args[@]}" >"$logs/from-fuzz-$t-$name.log" 2>&1
        case $? in
          1) converted+=("- \`findings/fuzz-$t-$name\` (from \`fuzz/$t/artifacts/$name\`): $(grep -m1 -i 'signature' "$dest/report.md" 2>/dev/null | sed 's/^[#* -]*//' || true)") ;;
          0) unconverted+=("- \`fuzz/$t/artifacts/$name\`: does not reproduce as a finding outside libFuzzer (likely a timeout or out-of-memory input; see \`logs/from-fuzz-$t-$name.log\`)") ;;
          4) unconverted+=("- \`fuzz/$t/artifacts/$name\`: no verdict outside libFuzzer (the compiler declines the case, or it runs out of steps; see \`logs/from-fuzz-$t-$name.log\`)") ;;
          *) unconverted+=("- \`fuzz/$t/artifacts/$name\`: from-fuzz failed (see \`logs/from-fuzz-$t-$name.log\`)") ;;
        esac
      else
        # interp / parse_* crashes are panics in our own readers or interpreter, timeouts are
        # inputs that run too long: the artifact itself is the reproduction. The log line
        # naming the artifact is preceded by the panic message or the stack of the timeout.
        log=$(grep -l "$name" "$logs"/fuzz-"$t"-*.log 2>/dev/null | head -1)
        where=""
        if [ -n "$log" ]; then
          # The panic location and message, or the first frame of our code after the alarm.
          where=$(awk '/panicked at/ { getline m; print $0 " " m; exit }
                       /ERROR: libFuzzer: (timeout|out-of-memory)|ALARM: working on the last Unit/ { a = 1 }
                       a && / #[0-9]+ 0x/ && / in / && /\/src\// && !/\.cargo\/registry|\/rustc\/|libfuzzer/ && $NF != last {
                         sub(/.*\/src\//, "", $NF); w = w (n++ ? " <- " : "") $NF; last = $NF; if (n == 3) { print w; exit } }
                       END { if (n && n < 3) print w }' "$log" \
            | cut -c1-200)
        fi
        unconverted+=("- \`fuzz/$t/artifacts/$name\` (${name%%-*}): reproduce with \`cargo +nightly fuzz run $t <artifact>\`${where:+; at \`$where\`}")
      fi
    done
  done
fi

# ---------------------------------------------------------------------------------------------
# 4. One summary.
fuzz_artifacts=$(( ${#converted[@]} + ${#unconverted[@]} ))
{
  echo "# Nightly hunt, $(date -u +%Y-%m-%d) (seed $seed, shard $shard_i/$shard_n)"
  echo
  echo "- commit: \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`"
  echo "- compiler: $compiler_words"
  echo "- hunt (--target $target): ${hunt_secs}s, $hunt_status; $hunt_findings finding directories under \`hunt/\`"
  echo "- fuzzing: ${fuzz_secs}s per target, $fuzz_status"
  echo "- PIMCOMP-NN hunt: ${pimcomp_secs}s per pipeline, $pimcomp_status; $pimcomp_findings distinct finding(s) (\`pimcomp-batch/summary.md\`, \`pimcomp-element/summary.md\`)"
  [ ! -f "$out/hunt/summary.md" ] || echo "- the hunt's own summary: \`hunt/summary.md\`"
  echo
  echo "## Hunt findings"
  echo
  if [ "$hunt_findings" -gt 0 ] && [ -d "$out/hunt/findings" ]; then
    find "$out/hunt/findings" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | sort | while read -r d; do
      rel=${d#"$out"/}
      if [ -f "$d/case.json" ]; then
        echo "- \`$rel\` — reproduce: \`pimdiff repro $rel${compiler_cmd:+ --compiler-cmd '$compiler_cmd'}\`"
      elif [ -f "$d/repro.sh" ]; then
        echo "- \`$rel\` — reproduce: \`sh $rel/repro.sh\`"
      else
        echo "- \`$rel\`"
      fi
    done
  else
    echo "None."
  fi
  echo
  echo "## Fuzz targets"
  echo
  if [ ${#fuzz_rows[@]} -gt 0 ]; then
    echo "| target | time | execs | exec/s | corpus | cov | crashes | timeouts/ooms |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${fuzz_rows[@]}"
  else
    echo "Not run: $fuzz_status."
  fi
  echo
  echo "## Converted fuzz findings"
  echo
  if [ ${#converted[@]} -gt 0 ]; then
    printf '%s\n' "${converted[@]}"
    echo
    echo "Each is a case directory: \`pimdiff repro findings/<name>${inject_bug:+ --inject-bug $inject_bug}${compiler_cmd:+ --compiler-cmd '$compiler_cmd'}\`."
  else
    echo "None."
  fi
  if [ ${#unconverted[@]} -gt 0 ]; then
    echo
    echo "## Other fuzz artifacts"
    echo
    printf '%s\n' "${unconverted[@]}"
  fi
} >"$out/summary.md"

echo "== summary: $out/summary.md"
cat "$out/summary.md"

if [ "$hunt_findings" -gt 0 ] || [ "$fuzz_artifacts" -gt 0 ] || [ "$pimcomp_findings" -gt 0 ]; then
  exit 1
fi
if [ "$infra_errors" -gt 0 ]; then
  exit 2
fi
if [ "$no_verdict" -gt 0 ]; then
  exit 4
fi
exit 0
