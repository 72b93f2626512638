#!/usr/bin/env bash
# Builds the PUMA compiler (snapshot c2ef1ac, University of Illinois/NCSA license) with the
# project's patch set, and pimdiff's network driver against it, twice: a plain tree (-O1 -g)
# and a sanitizer tree (-fsanitize=address,undefined -fno-omit-frame-pointer -g, as OSS-Fuzz
# builds C++). Cached under target/puma/<key>/{plain,sanitize}, where <key> hashes the source
# tarball, every patch, the driver's source and this script, so an edited patch rebuilds.
#
#   scripts/build-puma.sh                # prints the plain tree's path on the last line of stdout
#   scripts/build-puma.sh --sanitize     # prints the sanitizer tree's path instead
#   scripts/build-puma.sh --coverage     # a coverage tree instead: gcov counts, per-case edges
#   scripts/build-puma.sh --with-fixes   # plus every candidate fix in scripts/puma-fixes/
#   scripts/build-puma.sh --fix 0003     # plus one candidate fix (its number or file name), or
#   scripts/build-puma.sh --fix 0003,0004  # a comma list: a fix whose header says `Needs: N`
#                                        # is refused (exit 2) without fix N in the list
#   scripts/build-puma.sh --mutation tests/fixtures/puma-mutants/NAME.patch
#                                        # a plain tree only, with one source mutation (tests
#                                        # of the hunt's detection; never a compiler to hunt)
#   PIMDIFF_SHARED=/path/to/shared scripts/build-puma.sh
#
# Each tree holds the patched sources, `src/libpuma.so`, `include/puma.h`, `bin/puma-driver`
# (linked with an rpath to `../src`, so it runs without LD_LIBRARY_PATH), `patches.txt` and
# `cxxflags` (the flags a program linked against the tree's library needs). The plain tree
# also holds `lib/libpimdiff-shim.so`, scripts/pimcomp-shim.c built as is: preloaded by
# `pimdiff hunt --target puma`, it prints a crash's frames (`PIMDIFF-FRAME <object>
# +0x<offset>`, symbolized with addr2line by the hunt); its `time()` pin is inert unless
# PIMDIFF_PIN_TIME is set, which the hunt does not do. The sanitizer tree has no shim:
# AddressSanitizer must be the first library loaded, and prints its own frames.
# Point `PUMA_DIR` at a tree for the integration tests; `pimdiff hunt --target puma` finds
# the sanitizer tree as the plain tree's sibling `../sanitize`.
#
# --coverage builds a third tree, `coverage`, beside the other two under the same key (it is
# built from the same inputs, and a hunt of it finds the sanitizer tree as its sibling) and
# cached on its own: the same flags as the plain tree plus gcov (`--coverage`) and GCC's
# `-fsanitize-coverage=trace-pc` on the compiler's sources (libpuma.so); the driver gets gcov
# only (it counts the compiler's header it includes, and its edges are not the compiler's).
# libpuma.so needs the shim's trace-pc callback, so the tree's `lib/libpimdiff-shim.so`
# (the same scripts/pimcomp-shim.c) is linked in, found through an rpath. The tree is built in
# place and stays (gcov needs its .gcno files and sources, and the .gcda paths compiled in
# name its object directories; a hunt moves them with GCOV_PREFIX); `coverage-source.txt`
# names it, and the driver is linked last, so a build cut short is not taken for a cached
# one. Use it with `pimdiff hunt --target puma --puma-dir TREE --coverage` (docs/coverage.md).
#
# Source: $PUMA_COMPILER_SRC, else $PIMDIFF_SHARED/external/puma-compiler-c2ef1ac-src.tar.gz
# (PIMDIFF_SHARED defaults to ../shared beside the repository). Patches:
# scripts/puma-patches/*.patch in name order (each starts with a comment saying why; none
# changes code generation); --with-fixes adds scripts/puma-fixes/*.patch after them, with its
# own cache key; --fix NAME[,NAME...] adds only the fixes named (a number like 0003 or a file
# name), in name order, with a key of their own: the trees that prove each fix on its own
# (`scripts/fix-table.sh`). A fix that names another on a `Needs:` line of its header
# must be given with it. Missing g++/make/patch: installed with apt-get when run as root, otherwise the
# exact command is printed and the script exits 2.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
with_fixes=0
fix_names=""
flavour=plain
mutation=""
while [ "$#" -gt 0 ]; do
    case "$1" in
        --with-fixes) with_fixes=1 ;;
        --fix)
            fix_names="${2:-}"
            shift
            if [ -z "$fix_names" ]; then
                echo "build-puma: --fix needs a fix's number or file name (scripts/puma-fixes/), or a comma list" >&2
                exit 2
            fi ;;
        --sanitize) flavour=sanitize ;;
        --coverage) flavour=coverage ;;
        --mutation)
            mutation="${2:-}"
            shift
            if [ ! -f "$mutation" ]; then
                echo "build-puma: --mutation needs a patch file (got '$mutation')" >&2
                exit 2
            fi
            mutation="$(cd "$(dirname "$mutation")" && pwd)/$(basename "$mutation")" ;;
        *) echo "build-puma: unknown argument: $1 (known: --sanitize, --coverage, --with-fixes, --fix NAME[,NAME...], --mutation PATCH)" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$mutation" ] && [ "$flavour" != plain ]; then
    echo "build-puma: a mutation builds the plain tree only" >&2
    exit 2
fi
shared="${PIMDIFF_SHARED:-$root/../shared}"
src="${PUMA_COMPILER_SRC:-$shared/external/puma-compiler-c2ef1ac-src.tar.gz}"
if [ ! -f "$src" ]; then
    echo "build-puma: source tarball not found: $src (set PIMDIFF_SHARED or PUMA_COMPILER_SRC)" >&2
    exit 2
fi

missing=()
for tool in g++ make patch; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
    cmd="apt-get install -y g++ make patch"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "build-puma: installing missing tools (${missing[*]}): $cmd" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y g++ make patch >&2
    else
        echo "build-puma: missing ${missing[*]}; install them with: sudo $cmd" >&2
        exit 2
    fi
fi

patches=()
for p in "$root"/scripts/puma-patches/*.patch; do
    [ -e "$p" ] && patches+=("$p")
done
if [ "$with_fixes" = 1 ] && [ -n "$fix_names" ]; then
    echo "build-puma: --with-fixes and --fix exclude each other" >&2
    exit 2
fi
if [ "$with_fixes" = 1 ]; then
    for p in "$root"/scripts/puma-fixes/*.patch; do
        [ -e "$p" ] && patches+=("$p")
    done
fi
# --fix: each name is a fix's number (0003) or file name, matched in scripts/puma-fixes/; the
# chosen ones are applied in name order; every `Needs: N` of a chosen fix must be chosen too.
if [ -n "$fix_names" ]; then
    chosen=()
    IFS=, read -r -a wanted <<< "$fix_names"
    for w in "${wanted[@]}"; do
        w="${w%.patch}"
        found=""
        for p in "$root"/scripts/puma-fixes/*.patch; do
            b="$(basename "$p" .patch)"
            if [ "$b" = "$w" ] || [ "${b%%-*}" = "$w" ]; then found="$p"; fi
        done
        if [ -z "$found" ]; then
            echo "build-puma: --fix $w: no such fix in scripts/puma-fixes/ (known: $(cd "$root/scripts/puma-fixes" && ls *.patch | cut -d- -f1 | tr '\n' ' '))" >&2
            exit 2
        fi
        chosen+=("$found")
    done
    mapfile -t chosen < <(printf '%s\n' "${chosen[@]}" | sort -u)
    for p in "${chosen[@]}"; do
        for need in $(sed -n 's/^Needs: *//p' "$p"); do
            if ! printf '%s\n' "${chosen[@]##*/}" | grep -q "^${need%.patch}"; then
                b="$(basename "$p")"
                echo "build-puma: fix $b needs fix $need: give --fix ${b%%-*},${need%%-*}" >&2
                exit 2
            fi
        done
        patches+=("$p")
    done
fi
if [ -n "$mutation" ]; then
    patches+=("$mutation")
fi
driver="$root/scripts/puma-driver/puma-driver.cpp"
shim="$root/scripts/pimcomp-shim.c"

key="$( { sha256sum "$src" | cut -d' ' -f1
          echo "fixes=$with_fixes fix=${fix_names:+1} mutation=${mutation:+1}"
          for p in "${patches[@]}"; do basename "$p"; sha256sum < "$p"; done
          sha256sum < "$driver"; sha256sum < "$shim"; sha256sum < "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-16)"
dest="${CARGO_TARGET_DIR:-$root/target}/puma/$key"
tree="$dest/$flavour"
if [ "$flavour" = coverage ] && [ -x "$tree/bin/puma-driver" ]; then
    echo "build-puma: cached ($tree)" >&2
    echo "$tree"
    exit 0
fi
if [ "$flavour" != coverage ] && [ -x "$dest/plain/bin/puma-driver" ] && { [ -n "$mutation" ] || [ -x "$dest/sanitize/bin/puma-driver" ]; }; then
    echo "build-puma: cached ($dest)" >&2
    echo "$tree"
    exit 0
fi

jobs="${PUMA_BUILD_JOBS:-2}"
work="$(mktemp -d "${TMPDIR:-/tmp}/puma-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The snapshot unpacked into DIR (made if missing), with the patches applied.
unpack_patched() {
    local out="$1"
    mkdir -p "$out"
    tar xzf "$src" -C "$out" --strip-components=1
    for p in "${patches[@]}"; do
        echo "build-puma: $(basename "$out"): applying $(basename "$p")" >&2
        patch -p1 -d "$out" --no-backup-if-mismatch < "$p" >&2
    done
}

# One tree: unpack, patch, build libpuma.so and the driver with FLAGS.
build_tree() {
    local out="$1" flags="$2"
    unpack_patched "$out"
    make -C "$out/src" -j "$jobs" CXXFLAGS="-std=c++11 $flags" >&2
    mkdir -p "$out/bin"
    # $ORIGIN keeps the tree relocatable: the driver finds ../src/libpuma.so wherever it lies.
    g++ -std=c++11 $flags -Wall -I"$out/include" -o "$out/bin/puma-driver" "$driver" \
        -L"$out/src" -lpuma -Wl,-rpath,'$ORIGIN/../src' >&2
    printf '%s\n' "${patches[@]##*/}" > "$out/patches.txt"
    # Programs linked against this library need the same sanitizer flags (model.cpp's build.sh).
    printf '%s\n' "$flags" > "$out/cxxflags"
}

# The shim (crash frames; the trace-pc callback of the coverage tree) in a tree's lib/.
build_shim() {
    mkdir -p "$1/lib"
    cc -shared -fPIC -O2 -Wl,-soname,libpimdiff-shim.so -o "$1/lib/libpimdiff-shim.so" "$shim" -ldl >&2
}

if [ "$flavour" = coverage ]; then
    rm -rf "$tree"
    unpack_patched "$tree"
    build_shim "$tree"
    # LD_FLAGS is the Makefile's link-only variable; make reads \$$ as \$, the shell as $.
    make -C "$tree/src" -j "$jobs" \
        CXXFLAGS="-std=c++11 -O1 -g --coverage -fsanitize-coverage=trace-pc" \
        LD_FLAGS="-L$tree/lib -Wl,--no-as-needed -lpimdiff-shim "'-Wl,-rpath,\$$ORIGIN/../lib' >&2
    printf '%s\n' "${patches[@]##*/}" > "$tree/patches.txt"
    # A program linked against this library needs no runtime of the instrumentation.
    printf '%s\n' "-O1 -g" > "$tree/cxxflags"
    echo "$tree" > "$tree/coverage-source.txt"
    mkdir -p "$tree/bin"
    # libgcov's __gcov_dump is hidden: the driver exports it under the name the shim's crash
    # handler looks for, so a crashing compile keeps its counts (of every instrumented object:
    # libgcov chains them). Built outside the tree and uninstrumented: not the compiler's.
    printf '%s\n' 'extern void __gcov_dump(void);' \
        'void pimdiff_gcov_dump(void) { __gcov_dump(); }' > "$work/gcov-dump.c"
    cc -c -O1 -fPIC -o "$work/gcov-dump.o" "$work/gcov-dump.c" >&2
    (cd "$tree/bin" && g++ -std=c++11 -O1 -g --coverage -Wall -I"$tree/include" \
        -o puma-driver.tmp "$driver" "$work/gcov-dump.o" -L"$tree/src" -lpuma \
        -Wl,-rpath,'$ORIGIN/../src' -Wl,--export-dynamic-symbol=pimdiff_gcov_dump >&2)
    mv "$tree/bin/puma-driver.tmp" "$tree/bin/puma-driver"
    echo "build-puma: built $tree (coverage)" >&2
    echo "$tree"
    exit 0
fi

build_tree "$work/plain" "-O1 -g"
build_shim "$work/plain"
trees=("$work/plain")
if [ -z "$mutation" ]; then
    build_tree "$work/sanitize" "-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer"
    trees+=("$work/sanitize")
fi
# Each tree is copied in under a hidden name and renamed into place; the coverage tree, when
# there is one, stays.
mkdir -p "$dest"
for t in "${trees[@]}"; do
    name="$(basename "$t")"
    rm -rf "$dest/.$name.tmp" "$dest/$name"
    mv "$t" "$dest/.$name.tmp"
    mv "$dest/.$name.tmp" "$dest/$name"
done
echo "build-puma: built $dest" >&2
echo "$tree"
