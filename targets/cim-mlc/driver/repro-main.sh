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
set -- $("$tree/python" -c 'import json, sys
c = json.load(open(sys.argv[1]))
print(*c["ifmsize"], c["input_precision"], c["weight_precision"])' "$case_dir/case.json")
work="$(mktemp -d "${TMPDIR:-/tmp}/cim-mlc-main.XXXXXX")"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
echo "+ cp -R $tree/src/. $work/ && cp $case_dir/arch.py $work/configs/example_config.py" >&2
cp -R "$tree/src/." "$work/"
cp "$case_dir/arch.py" "$work/configs/example_config.py"
echo "+ cd $work && $tree/python main.py -onnx_model_path $case_dir/model.onnx --ifmsize $1 $2 $3 $4" \
    "--input_precision $5 --weight_precision $6 --arch_config_module configs.example_config" \
    "--output_dir $out" >&2
cd "$work"
"$tree/python" main.py -onnx_model_path "$case_dir/model.onnx" --ifmsize "$1" "$2" "$3" "$4" \
    --input_precision "$5" --weight_precision "$6" --arch_config_module configs.example_config \
    --output_dir "$out"
