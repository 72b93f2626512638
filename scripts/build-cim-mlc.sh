#!/usr/bin/env bash
# Prepares CIM-MLC (snapshot b81e62b, Python, no license file: its code is never committed here)
# for pimdiff: a pinned Python environment, cached once per machine, and a tree holding the
# snapshot's sources with the project's patches and pimdiff's driver, cached under
# ${CARGO_TARGET_DIR:-target}/cim-mlc/<key>/, where <key> hashes the source tarball, every
# patch, the requirements, the driver's sources and this script, so an edit rebuilds.
#
#   scripts/build-cim-mlc.sh                # prints the tree's path on the last line of stdout
#   scripts/build-cim-mlc.sh --with-fixes   # plus every candidate fix in scripts/cim-mlc-fixes/
#   scripts/build-cim-mlc.sh --fix NAME[,NAME...]
#                                           # plus just those fixes (NAME: a patch's file name,
#                                           # with or without its number and .patch: 0003,
#                                           # operator-larger-than-chip, 0003-operator-...),
#                                           # in name order; its own key per set
#   scripts/build-cim-mlc.sh --mutation PATCH
#                                           # plus one source mutation (tests of the hunt's
#                                           # detection; never a compiler to hunt); its own key
#   PIMDIFF_SHARED=/path/to/shared scripts/build-cim-mlc.sh
#
# Source: $CIM_MLC_SRC, else $PIMDIFF_SHARED/external/cim-mlc-b81e62b-src.tar.gz
# (PIMDIFF_SHARED defaults to ../shared beside the repository). Patches:
# scripts/cim-mlc-patches/*.patch in name order (each starts with a comment saying why; none
# may change what CIM-MLC computes; there are none so far: the driver reads everything it needs
# from CIM-MLC's objects in memory), then with --with-fixes scripts/cim-mlc-fixes/*.patch (with
# --fix the ones named), then the --mutation patch. Every fix applies on its own and after any
# set of the others (docs/cim-mlc-findings.md says which finding each fixes; 0005's Reshape of
# the network's input also needs 0002).
#
# The environment: ${PIMDIFF_CACHE:-$HOME/.cache/pimdiff}/cim-mlc/venv-<hash>, a venv of the
# machine's Python 3.11 ($PYTHON, default python3) holding exactly
# scripts/cim-mlc-requirements.txt (`pip install --no-deps`), keyed by that file, the CUDA
# stand-in generator scripts/cim-mlc-cuda-stubs.py, the torch mode and the interpreter; made
# under a lock, marked complete last, so an interrupted install is redone. torch's CUDA
# libraries are stand-ins (CIM_MLC_TORCH=stubs, the default: 587 MB of wheels, 1.6 GB
# installed, 22 s on this project's 2-core machine with an empty pip cache, 2026-11-28; with
# PIMDIFF_CUDA_STUB_TRACE set, a call into one prints its name) or, with CIM_MLC_TORCH=full, the
# real nvidia-* wheels torch depends on (2.9 GB of wheels, 5.6 GB installed, 68 s; a venv of
# its own; the same flows, which the driver's tests check when CIM_MLC_FULL_TREE names such a
# tree). A second run finds both cached in well under a second.
#
# The tree (everything a program needs; manifest.json, written last, says what it is):
#   src/             CIM-MLC's sources, patched (main.py, configs/, codegen/, optimization/, ...)
#   python           a two-line script exec'ing the environment's interpreter
#   venv             symlink to the environment (venv/bin/python is its interpreter)
#   driver/          driver.py, cim_layout.py, pimdiff_serve.py, repro-main.sh (copies)
#   bin/cim-mlc-serve    `exec python driver/driver.py --serve "$@"` (pimdiff's --compiler-cmd)
#   patches.txt      the patches applied, in order, one file name a line
#   manifest.json    {"kind": "pimdiff-cim-mlc-tree", "format": 1, key, snapshot (file,
#                    sha256), patches, python (interpreter, version, venv, torch_cuda), pins
#                    (every installed distribution), driver files, serve command}
# A program handed a directory checks manifest.json's kind and format (the driver does, and
# refuses anything else with a message naming this script). The tree is built in a temporary
# sibling and renamed into place, manifest.json last, so a build cut short is never taken for a
# cached one.
#
# Exit 2: no tarball, no Python 3.11 or no venv module (the message names the fix), a missing
# tool that cannot be installed (cc, readelf, nm for the stand-ins; patch; flock).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
with_fixes=0
fix_names=()
mutation=""
while [ "$#" -gt 0 ]; do
    case "$1" in
        --with-fixes) with_fixes=1 ;;
        --fix)
            if [ -z "${2:-}" ]; then
                echo "build-cim-mlc: --fix needs a list of fixes, e.g. --fix 0001,0003 (the patches in scripts/cim-mlc-fixes/)" >&2
                exit 2
            fi
            IFS=, read -r -a more <<< "$2"
            fix_names+=("${more[@]}")
            shift ;;
        --mutation)
            mutation="${2:-}"
            shift
            if [ ! -f "$mutation" ]; then
                echo "build-cim-mlc: --mutation needs a patch file (got '$mutation')" >&2
                exit 2
            fi
            mutation="$(cd "$(dirname "$mutation")" && pwd)/$(basename "$mutation")" ;;
        *) echo "build-cim-mlc: unknown argument: $1 (known: --with-fixes, --fix NAME[,NAME], --mutation PATCH)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$with_fixes" = 1 ] && [ "${#fix_names[@]}" -gt 0 ]; then
    echo "build-cim-mlc: --with-fixes takes every fix; --fix names some: give one of them" >&2
    exit 2
fi
# Each --fix NAME names exactly one patch of scripts/cim-mlc-fixes/: its file name, with or
# without the .patch suffix and the NNNN- prefix, or its number.
fixes=()
for name in "${fix_names[@]}"; do
    name="${name%.patch}"
    found=()
    for p in "$root"/scripts/cim-mlc-fixes/*.patch; do
        [ -e "$p" ] || continue
        b="$(basename "$p" .patch)"
        if [ -n "$name" ] && { [ "$b" = "$name" ] || [ "${b#*-}" = "$name" ] || [ "${b%%-*}" = "$name" ]; }; then
            found+=("$p")
        fi
    done
    if [ "${#found[@]}" -ne 1 ]; then
        echo "build-cim-mlc: --fix '$name' names $( [ "${#found[@]}" = 0 ] && echo no || echo more than one ) patch of scripts/cim-mlc-fixes/; there are:" \
            $(cd "$root/scripts/cim-mlc-fixes" && ls *.patch 2>/dev/null) >&2
        exit 2
    fi
    case " ${fixes[*]} " in *" ${found[0]} "*) ;; *) fixes+=("${found[0]}") ;; esac
done
if [ "${#fixes[@]}" -gt 0 ]; then
    mapfile -t fixes < <(printf '%s\n' "${fixes[@]}" | sort)
fi
shared="${PIMDIFF_SHARED:-$root/../shared}"
src="${CIM_MLC_SRC:-$shared/external/cim-mlc-b81e62b-src.tar.gz}"
if [ ! -f "$src" ]; then
    echo "build-cim-mlc: source tarball not found: $src (set PIMDIFF_SHARED or CIM_MLC_SRC)" >&2
    exit 2
fi
torch_mode="${CIM_MLC_TORCH:-stubs}"
case "$torch_mode" in
    stubs|full) ;;
    *) echo "build-cim-mlc: CIM_MLC_TORCH must be stubs or full (got '$torch_mode')" >&2; exit 2 ;;
esac

# -- Python 3.11 with venv --
py="${PYTHON:-python3}"
if ! command -v "$py" >/dev/null 2>&1; then
    echo "build-cim-mlc: $py not found; install Python 3.11 with its venv module (Debian:" \
        "apt-get install python3.11 python3.11-venv) or set PYTHON to a python3.11" >&2
    exit 2
fi
pyver="$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)" || pyver="?"
case "$pyver" in
    3.11.*) ;;
    *) echo "build-cim-mlc: $py is Python $pyver; CIM-MLC's pinned packages need Python 3.11" \
           "(onnx 1.13.0 publishes wheels for 3.7-3.11 only): install python3.11 and set" \
           "PYTHON to it" >&2
       exit 2 ;;
esac
if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "build-cim-mlc: $py (Python $pyver) lacks the venv module or ensurepip (Debian:" \
        "apt-get install python3.11-venv)" >&2
    exit 2
fi
pyexe="$("$py" -c 'import os, sys; print(os.path.realpath(sys.executable))')"

# -- tools --
patches=()
for p in "$root"/scripts/cim-mlc-patches/*.patch; do
    [ -e "$p" ] && patches+=("$p")
done
if [ "$with_fixes" = 1 ]; then
    for p in "$root"/scripts/cim-mlc-fixes/*.patch; do
        [ -e "$p" ] && patches+=("$p")
    done
fi
patches+=("${fixes[@]}")
if [ -n "$mutation" ]; then
    patches+=("$mutation")
fi
need=(flock tar sha256sum)
if [ "${#patches[@]}" -gt 0 ]; then need+=(patch); fi
if [ "$torch_mode" = stubs ]; then need+=(cc readelf nm); fi
missing=()
for tool in "${need[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
    cmd="apt-get install -y gcc binutils patch util-linux tar coreutils"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "build-cim-mlc: installing missing tools (${missing[*]}): $cmd" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y gcc binutils patch util-linux tar coreutils >&2
    else
        echo "build-cim-mlc: missing ${missing[*]}; install them with: sudo $cmd" >&2
        exit 2
    fi
fi

req="$root/scripts/cim-mlc-requirements.txt"
stubgen="$root/scripts/cim-mlc-cuda-stubs.py"
driver_files=(
    "$root/targets/cim-mlc/driver/driver.py"
    "$root/targets/cim-mlc/driver/cim_layout.py"
    "$root/targets/cim-mlc/driver/repro-main.sh"
    "$root/python/pimdiff_serve.py"
)

# -- the environment, once per machine --
venv_key="$( { sha256sum < "$req"; echo "torch=$torch_mode python=$pyver $pyexe"
               if [ "$torch_mode" = stubs ]; then sha256sum < "$stubgen"; fi; } | sha256sum | cut -c1-16)"
if [ -z "${PIMDIFF_CACHE:-}" ] && [ -z "${HOME:-}" ]; then
    echo "build-cim-mlc: neither PIMDIFF_CACHE nor HOME is set: set PIMDIFF_CACHE to a directory" \
        "for the Python environment" >&2
    exit 2
fi
cache="${PIMDIFF_CACHE:-$HOME/.cache/pimdiff}/cim-mlc"
venv="$cache/venv-$venv_key"
mkdir -p "$cache"
(
    flock 9
    if [ -f "$venv/.pimdiff-complete" ]; then
        echo "build-cim-mlc: environment cached ($venv)" >&2
        exit 0
    fi
    started=$SECONDS
    echo "build-cim-mlc: creating $venv (torch $torch_mode; pins in ${req#$root/})" >&2
    rm -rf "$venv"
    "$py" -m venv "$venv" >&2
    vpy="$venv/bin/python"
    pipargs=(install --quiet --disable-pip-version-check --no-compile -r "$req")
    if [ "$torch_mode" = stubs ]; then
        "$vpy" -m pip "${pipargs[@]}" --no-deps >&2
        "$vpy" "$stubgen" "$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >&2
    else
        # torch's CUDA dependencies as its metadata pins them; every other package as above.
        "$vpy" -m pip "${pipargs[@]}" >&2
    fi
    # Byte-compiled once here (on both cores), so that imports are fast even where
    # PYTHONDONTWRITEBYTECODE is set; pip's own compiling runs on one core.
    "$vpy" -m compileall -q -j 0 "$venv/lib" >/dev/null 2>&1 || true
    "$vpy" -c 'import torch, torch.nn.functional as F, onnx, onnx.mapping, onnxruntime, numpy, einops, pulp
assert F.max_pool2d(torch.arange(16.0).reshape(1, 1, 4, 4), 2, 2, 0).flatten().tolist() == [5.0, 7.0, 13.0, 15.0]' >&2
    "$vpy" -m pip freeze --all --disable-pip-version-check > "$venv/.pimdiff-freeze.txt"
    echo "$venv_key" > "$venv/.pimdiff-complete"
    echo "build-cim-mlc: environment ready in $((SECONDS - started)) s ($(du -sh "$venv" | cut -f1))" >&2
) 9>"$cache/venv-$venv_key.lock"
[ -f "$venv/.pimdiff-complete" ] || { echo "build-cim-mlc: the environment $venv was not completed" >&2; exit 1; }

# -- the tree --
key="$( { sha256sum "$src" | cut -d' ' -f1
          echo "fixes=$with_fixes fix=${#fixes[@]} mutation=${mutation:+1} venv=$venv_key"
          for p in "${patches[@]}"; do basename "$p"; sha256sum < "$p"; done
          for f in "${driver_files[@]}"; do basename "$f"; sha256sum < "$f"; done
          sha256sum < "$req"; sha256sum < "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-16)"
base="${CARGO_TARGET_DIR:-$root/target}/cim-mlc"
tree="$base/$key"
mkdir -p "$base"
exec 8>"$base/.$key.lock"
flock 8
# Under the lock no other build of this key runs: what is left of one is from a build cut short.
rm -rf "$base/.build-$key."*
if [ -f "$tree/manifest.json" ] && [ -f "$tree/venv/.pimdiff-complete" ]; then
    echo "build-cim-mlc: cached ($tree)" >&2
    echo "$tree"
    exit 0
fi

work="$(mktemp -d "$base/.build-$key.XXXXXX")"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/src" "$work/driver" "$work/bin"
tar xzf "$src" -C "$work/src" --strip-components=1
for p in "${patches[@]}"; do
    echo "build-cim-mlc: applying $(basename "$p")" >&2
    patch -p1 -d "$work/src" --no-backup-if-mismatch --batch < "$p" >&2
done
printf '%s\n' "${patches[@]##*/}" | sed '/^$/d' > "$work/patches.txt"
cp "${driver_files[@]}" "$work/driver/"
ln -s "$venv" "$work/venv"
# A script, not a symlink: Python finds its venv beside the path it was started as
# (venv/bin/python works through the venv symlink; a bare symlink named python would not).
printf '#!/bin/sh\nexec "%s" "$@"\n' "$venv/bin/python" > "$work/python"
chmod +x "$work/python"
cat > "$work/bin/cim-mlc-serve" <<'EOF'
#!/bin/sh
# pimdiff's serve protocol (version 1) with CIM-MLC: --compiler-cmd 'exec TREE/bin/cim-mlc-serve'
tree="$(cd "$(dirname "$0")/.." && pwd)"
exec "$tree/python" "$tree/driver/driver.py" --serve --tree "$tree" "$@"
EOF
chmod +x "$work/bin/cim-mlc-serve" "$work/driver/repro-main.sh"
"$venv/bin/python" -m compileall -q "$work/src" "$work/driver" >/dev/null

# manifest.json last: its presence is what marks the tree complete.
"$venv/bin/python" - "$work" "$key" "$src" "$venv" "$venv_key" "$torch_mode" "$with_fixes" \
    "${mutation:-}" "$root" "${patches[@]}" <<'EOF'
import hashlib, importlib.metadata, json, os, sys
work, key, src, venv, venv_key, torch_mode, with_fixes, mutation, root = sys.argv[1:10]
patches = sys.argv[10:]
def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
def kind(p):
    if mutation and p == mutation:
        return "mutation"
    return "fixes" if os.path.basename(os.path.dirname(p)) == "cim-mlc-fixes" else "patches"
manifest = {
    "kind": "pimdiff-cim-mlc-tree",
    "format": 1,
    "key": key,
    "snapshot": {"file": os.path.basename(src), "sha256": sha(src), "commit": "b81e62b"},
    "patches": [{"name": os.path.basename(p), "set": kind(p), "sha256": sha(p)} for p in patches],
    "with_fixes": with_fixes == "1",
    "mutation": os.path.basename(mutation) if mutation else None,
    "python": {
        "interpreter": os.path.join(venv, "bin", "python"),
        "version": "%d.%d.%d" % sys.version_info[:3],
        "venv": venv,
        "venv_key": venv_key,
        "torch_cuda": torch_mode,
        "requirements_sha256": sha(os.path.join(root, "scripts", "cim-mlc-requirements.txt")),
    },
    "pins": {d.metadata["Name"]: d.version for d in sorted(
        importlib.metadata.distributions(), key=lambda d: d.metadata["Name"].lower())},
    "driver": {"files": sorted(os.listdir(os.path.join(work, "driver"))), "protocol": 1,
               "serve": ["bin/cim-mlc-serve"],
               "one_shot": ["python", "driver/driver.py", "--case", "CASE", "--out", "OUT"]},
    "main_py": "src/main.py",
}
with open(os.path.join(work, "manifest.json.tmp"), "w") as f:
    json.dump(manifest, f, indent=1)
    f.write("\n")
EOF
# A tree whose interpreter cannot import CIM-MLC's main.py is not finished.
if ! (cd "$work/src" && "$work/python" -c 'import main' >/dev/null 2>"$work/import.err"); then
    echo "build-cim-mlc: CIM-MLC's main.py does not import in $work/src:" >&2
    tail -5 "$work/import.err" >&2
    exit 1
fi
rm -f "$work/import.err"
mv "$work/manifest.json.tmp" "$work/manifest.json"
rm -rf "$tree"
mv -T "$work" "$tree"
trap - EXIT
echo "build-cim-mlc: built $tree" >&2
echo "$tree"
