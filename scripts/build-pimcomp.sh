#!/usr/bin/env bash
# Builds PIMCOMP-NN (snapshot 2ed10c8, Apache-2.0) with the project's patch set, Release with
# debug symbols, and the LD_PRELOAD shim (pinned time(), crash backtraces, huge pages, edge
# coverage); cached under target/pimcomp-nn/<key>/, where <key> hashes the source tarball, every
# patch and this script, so an edited patch rebuilds (an edited shim is only rebuilt itself).
#
#   scripts/build-pimcomp.sh            # prints the binary's path on the last line of stdout
#   scripts/build-pimcomp.sh --with-fixes   # plus every candidate fix in scripts/pimcomp-fixes/
#   scripts/build-pimcomp.sh --fix 0004     # plus one candidate fix (its number or file name),
#   scripts/build-pimcomp.sh --fix 0004,0005  # or a comma list; a fix whose header says
#                                           # `Needs: N` is refused (exit 2) without fix N
#   scripts/build-pimcomp.sh --coverage     # instrumented: gcov line/branch counts and per-case edges
#   PIMDIFF_SHARED=/path/to/shared scripts/build-pimcomp.sh
#
# Source: $PIMCOMP_NN_SRC, else $PIMDIFF_SHARED/external/pimcomp-nn-2ed10c8-src.tar.gz
# (PIMDIFF_SHARED defaults to ../shared beside the repository). Patches:
# scripts/pimcomp-patches/*.patch in name order (each starts with a comment saying why);
# PIMCOMP_EXTRA_PATCHES (space-separated paths) adds candidate fixes outside the default build,
# with their own cache key; --with-fixes adds all of scripts/pimcomp-fixes/*.patch (each says
# which finding it fixes and why), after the extra ones; --fix NAME[,NAME...] adds only the
# fixes named, in name order (the builds that prove each fix on its own,
# scripts/fix-table.sh). Missing cmake/g++/make: installed with apt-get when run as root,
# otherwise the exact command is printed and the script exits 2.
#
# --coverage builds a separate tree (its own cache key) with gcov (`--coverage`) and GCC's
# `-fsanitize-coverage=trace-pc`, linked against the shim, which records the edges of each case
# in a map the hunt hands it (docs/coverage.md). Same optimization and NDEBUG as the plain build,
# so it compiles the same programs. The build tree stays (gcov needs its .gcno files and the
# sources): `<dest>/src/`, and the .gcda paths compiled in point there; a hunt moves them with
# GCOV_PREFIX. Use it with `pimdiff hunt --target pimcomp-nn --coverage --pimcomp-bin PATH`.
#
# Use the result with `pimdiff hunt --target pimcomp-nn --pimcomp-bin PATH` or
# `PIMCOMP_NN_BIN=PATH`; the shim `libpimdiff-shim.so` sits beside the binary and is found there.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
with_fixes=0
coverage=0
fix_names=""
while [ "$#" -gt 0 ]; do
    case "$1" in
        --with-fixes) with_fixes=1 ;;
        --coverage) coverage=1 ;;
        --fix)
            fix_names="${2:-}"
            shift
            if [ -z "$fix_names" ]; then
                echo "build-pimcomp: --fix needs a fix's number or file name (scripts/pimcomp-fixes/), or a comma list" >&2
                exit 2
            fi ;;
        *) echo "build-pimcomp: unknown argument: $1 (known: --with-fixes, --fix NAME[,NAME...], --coverage)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$with_fixes" = 1 ] && [ -n "$fix_names" ]; then
    echo "build-pimcomp: --with-fixes and --fix exclude each other" >&2
    exit 2
fi
shared="${PIMDIFF_SHARED:-$root/../shared}"
src="${PIMCOMP_NN_SRC:-$shared/external/pimcomp-nn-2ed10c8-src.tar.gz}"
if [ ! -f "$src" ]; then
    echo "build-pimcomp: source tarball not found: $src (set PIMDIFF_SHARED or PIMCOMP_NN_SRC)" >&2
    exit 2
fi

missing=()
for tool in cmake g++ make patch cc; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
    cmd="apt-get install -y cmake g++ make patch"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "build-pimcomp: installing missing tools (${missing[*]}): $cmd" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y cmake g++ make patch >&2
    else
        echo "build-pimcomp: missing ${missing[*]}; install them with: sudo $cmd" >&2
        exit 2
    fi
fi

patches=()
for p in "$root"/scripts/pimcomp-patches/*.patch; do
    [ -e "$p" ] && patches+=("$p")
done
for p in ${PIMCOMP_EXTRA_PATCHES:-}; do
    [ -f "$p" ] || { echo "build-pimcomp: extra patch not found: $p" >&2; exit 2; }
    patches+=("$(cd "$(dirname "$p")" && pwd)/$(basename "$p")")
done
if [ "$with_fixes" = 1 ]; then
    for p in "$root"/scripts/pimcomp-fixes/*.patch; do
        [ -e "$p" ] && patches+=("$p")
    done
fi
# --fix: each name is a fix's number (0004) or file name, matched in scripts/pimcomp-fixes/;
# applied in name order; every `Needs: N` of a chosen fix must be chosen too.
if [ -n "$fix_names" ]; then
    chosen=()
    IFS=, read -r -a wanted <<< "$fix_names"
    for w in "${wanted[@]}"; do
        w="${w%.patch}"
        found=""
        for p in "$root"/scripts/pimcomp-fixes/*.patch; do
            b="$(basename "$p" .patch)"
            if [ "$b" = "$w" ] || [ "${b%%-*}" = "$w" ]; then found="$p"; fi
        done
        if [ -z "$found" ]; then
            echo "build-pimcomp: --fix $w: no such fix in scripts/pimcomp-fixes/ (known: $(cd "$root/scripts/pimcomp-fixes" && ls *.patch | cut -d- -f1 | tr '\n' ' '))" >&2
            exit 2
        fi
        chosen+=("$found")
    done
    mapfile -t chosen < <(printf '%s\n' "${chosen[@]}" | sort -u)
    for p in "${chosen[@]}"; do
        for need in $(sed -n 's/^Needs: *//p' "$p"); do
            if ! printf '%s\n' "${chosen[@]##*/}" | grep -q "^${need%.patch}"; then
                b="$(basename "$p")"
                echo "build-pimcomp: fix $b needs fix $need: give --fix ${b%%-*},${need%%-*}" >&2
                exit 2
            fi
        done
        patches+=("$p")
    done
fi
shim="$root/scripts/pimcomp-shim.c"

key="$( { sha256sum "$src" | cut -d' ' -f1
          for p in "${patches[@]}"; do basename "$p"; sha256sum < "$p"; done
          sha256sum < "${BASH_SOURCE[0]}"; echo "coverage=$coverage"; } \
        | sha256sum | cut -c1-16)"
dest="${CARGO_TARGET_DIR:-$root/target}/pimcomp-nn/$key"
bin="$dest/PIMCOMP-NN"
shim_sum="$(sha256sum < "$shim" | cut -c1-64)"
# The shim is not in the key (it is built in a second): a cached build whose shim is older
# than scripts/pimcomp-shim.c gets the new one, put in place by a rename.
build_shim() {
    cc -shared -fPIC -O2 -fno-builtin-memset -o "$1/libpimdiff-shim.so.tmp" "$shim" -ldl
    mv "$1/libpimdiff-shim.so.tmp" "$1/libpimdiff-shim.so"
    echo "$shim_sum" > "$1/shim.sha256"
}
if [ -x "$bin" ] && [ -f "$dest/libpimdiff-shim.so" ]; then
    if [ "$(cat "$dest/shim.sha256" 2>/dev/null)" != "$shim_sum" ]; then
        echo "build-pimcomp: rebuilding the shim of $dest" >&2
        build_shim "$dest"
    fi
    echo "build-pimcomp: cached ($dest)" >&2
    echo "$bin"
    exit 0
fi

if [ "$coverage" = 1 ]; then
    # Built in place (the .gcda paths compiled in name the object directories); the binary is
    # copied in last, so a build cut short is not taken for a cached one.
    rm -rf "$dest"
    mkdir -p "$dest/src"
    tar xzf "$src" -C "$dest/src" --strip-components=1
    for p in "${patches[@]}"; do
        echo "build-pimcomp: applying $(basename "$p")" >&2
        patch -p1 -d "$dest/src" --no-backup-if-mismatch < "$p" >&2
    done
    build_shim "$dest"
    instrument="-g --coverage -fsanitize-coverage=trace-pc"
    cmake -S "$dest/src" -B "$dest/src/build" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_FLAGS="$instrument" -DCMAKE_C_FLAGS="$instrument" \
        -DCMAKE_EXE_LINKER_FLAGS="--coverage -L$dest -Wl,--no-as-needed -lpimdiff-shim -Wl,-rpath,\$ORIGIN -Wl,--export-dynamic-symbol=__gcov_dump" >&2
    cmake --build "$dest/src/build" -j "${PIMCOMP_BUILD_JOBS:-2}" >&2
    cp "$dest/src/config.json" "$dest/config.json"
    printf '%s\n' "${patches[@]##*/}" > "$dest/patches.txt"
    echo "$dest/src" > "$dest/coverage-source.txt"
    cp "$dest/src/build/PIMCOMP-NN" "$dest/PIMCOMP-NN.tmp"
    mv "$dest/PIMCOMP-NN.tmp" "$bin"
    echo "build-pimcomp: built $bin (coverage)" >&2
    echo "$bin"
    exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/pimcomp-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
tar xzf "$src" -C "$work"
srcdir="$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)"
for p in "${patches[@]}"; do
    echo "build-pimcomp: applying $(basename "$p")" >&2
    patch -p1 -d "$srcdir" --no-backup-if-mismatch < "$p" >&2
done
mkdir -p "$srcdir/build"
# Release as upstream documents it (-O3), plus -g for symbolized crash backtraces.
cmake -S "$srcdir" -B "$srcdir/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="-g" \
    -DCMAKE_C_FLAGS="-g" >&2
cmake --build "$srcdir/build" -j "${PIMCOMP_BUILD_JOBS:-2}" >&2
mkdir -p "$dest.tmp"
cp "$srcdir/build/PIMCOMP-NN" "$dest.tmp/PIMCOMP-NN"
cp "$srcdir/config.json" "$dest.tmp/config.json"
build_shim "$dest.tmp"
printf '%s\n' "${patches[@]##*/}" > "$dest.tmp/patches.txt"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "build-pimcomp: built $bin" >&2
echo "$bin"
