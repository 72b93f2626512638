#!/bin/sh
# Reproduces a pimdiff case with CIM-MLC's own, unchanged main.py, as its README says to use it:
# a scratch copy of the tree's sources whose configs/example_config.py is the case's arch.py
# (main.py acts on the ArchTem that `from configs import *` finds, main.py:8, :75, :87: the one
# in configs/example_config.py), run with the case's command line. The flows it writes are byte
# for byte those of the driver (targets/cim-mlc/driver/test_driver.py checks it).
#
#   TREE/driver/repro-main.sh CASE OUT [TREE]     # TREE defaults to the tree holding this script
#
# Prints each command it runs on standard error (the same commands by hand: LAYOUT.md,
# "Reproducing a case with main.py"). The scratch copy is removed unless KEEP=1.
set -eu
if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then
    echo "usage: repro-main.sh CASE OUT [TREE]" >&2
    exit 2
fi
case_dir="$(cd "$1" && pwd)"
mkdir -p "$2"
out="$(cd "$2" && pwd)"
tree="$(cd "${3:-$(dirname "$0")/..}" && pwd)"
[ -f "$tree/manifest.json" ] || { echo "repro-main: $tree is not a tree of scripts/build-cim-mlc.sh" >&2; exit 2; }
field() {
    "$tree/python" -c 'import json, sys
v = json.load(open(sys.argv[1]))[sys.argv[2]]
print(" ".join(map(str, v)) if isinstance(v, list) else v)' "$case_dir/case.json" "$1"
}
ifmsize="$(field ifmsize)"
input_precision="$(field input_precision)"
weight_precision="$(field weight_precision)"
work="$(mktemp -d "${TMPDIR:-/tmp}/cim-mlc-main.XXXXXX")"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
echo "+ cp -R $tree/src/. $work/ && cp $case_dir/arch.py $work/configs/example_config.py" >&2
cp -R "$tree/src/." "$work/"
cp "$case_dir/arch.py" "$work/configs/example_config.py"
echo "+ cd $work && $tree/python main.py -onnx_model_path $case_dir/model.onnx --ifmsize $ifmsize" \
    "--input_precision $input_precision --weight_precision $weight_precision" \
    "--arch_config_module configs.example_config --output_dir $out" >&2
cd "$work"
# $ifmsize unquoted: one argument per dimension, as main.py's nargs="+" takes them.
# shellcheck disable=SC2086
"$tree/python" main.py -onnx_model_path "$case_dir/model.onnx" --ifmsize $ifmsize \
    --input_precision "$input_precision" --weight_precision "$weight_precision" \
    --arch_config_module configs.example_config --output_dir "$out"
