#!/usr/bin/env bash
# Checks that every finding of a CIM-MLC hunt reproduces: `pimdiff repro DIR` must exit 1 (it
# still shows), and a crash must also show with CIM-MLC's own, unchanged main.py run on the
# saved model.onnx and arch.py (the command each report.md prints): the same exception type
# raised at the same place (the innermost frame in CIM-MLC's sources, file and line), or, for a
# driver killed at its memory limit, main.py's peak resident memory at or over that limit.
#
#   scripts/check-cim-mlc-findings.sh HUNT_OUT [TREE]
#
# TREE defaults to $CIM_MLC_DIR; the pimdiff binary to $PIMDIFF (else `pimdiff` on PATH, else
# target/release/pimdiff). Prints one line per finding and a total; exits 0 when every finding
# reproduces, 1 when one does not, 2 on bad usage.
set -uo pipefail

out="${1:-}"
tree="${2:-${CIM_MLC_DIR:-}}"
if [ -z "$out" ] || [ ! -d "$out/findings" ] || [ -z "$tree" ] || [ ! -f "$tree/manifest.json" ]; then
    echo "usage: $0 HUNT_OUT [TREE]  (TREE: a tree of scripts/build-cim-mlc.sh, or set CIM_MLC_DIR)" >&2
    exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pimdiff="${PIMDIFF:-$(command -v pimdiff || echo "$root/target/release/pimdiff")}"
tree="$(cd "$tree" && pwd)"

logs="$(mktemp -d)"
total=0
failed=0
for dir in "$out"/findings/*/; do
    dir="${dir%/}"
    name="$(basename "$dir")"
    total=$((total + 1))
    "$pimdiff" repro "$dir" --cim-mlc-dir "$tree" > "$logs/$name.repro.log" 2>&1
    code=$?
    verdict="repro exit $code"
    ok=1
    [ "$code" = 1 ] || ok=0
    outcome="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["outcome"])' "$dir/finding.json")"
    if [ "$outcome" = crash ] && [ "$ok" = 1 ]; then
        # The saved exception's type and innermost CIM-MLC frame (finding.json's frames are
        # innermost first, "file:line function").
        read -r want_type want_site < <(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
print((m.get("message") or "").split(":")[0], (m.get("frames") or ["?"])[0].split(" ")[0])' "$dir/finding.json")
        ifm="$(python3 -c 'import json,sys; print(" ".join(map(str, json.load(open(sys.argv[1]))["ifmsize"])))' "$dir/case.json")"
        prec="$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["input_precision"], c["weight_precision"])' "$dir/case.json")"
        read -r ip wp <<< "$prec"
        work="$(mktemp -d)"
        cp -R "$tree/src/." "$work/" && cp "$dir/arch.py" "$work/configs/example_config.py"
        # main.py run under a wrapper that reports its peak resident memory (MiB), for a
        # finding of the driver killed at its memory limit.
        peak="$(cd "$work" && python3 - "$logs/$name.main-py.log" "$tree/python" main.py \
            -onnx_model_path "$dir/model.onnx" --ifmsize $ifm \
            --input_precision "$ip" --weight_precision "$wp" \
            --arch_config_module configs.example_config --output_dir "$work/out" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "w") as log:
    subprocess.run(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
)"
        # The last frame of the traceback inside the copied sources, and the exception line.
        got="$(python3 - "$logs/$name.main-py.log" "$work" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
frames = re.findall(r'File "' + re.escape(sys.argv[2]) + r'/([^"]+)", line (\d+)', text)
last = [l for l in text.splitlines() if l and not l.startswith(" ")]
exc = last[-1].split(":")[0] if last else "?"
print(exc, "%s:%s" % frames[-1] if frames else "?")
PY
)"
        rm -rf "$work"
        # A driver killed at its memory limit: main.py must need as much (report.md's first
        # line says the limit, `... over the limit of N MiB`).
        limit="$(head -3 "$dir/report.md" | grep -o -m1 'over the limit of [0-9]* MiB' | grep -o '[0-9]*')"
        if [ -n "$limit" ]; then
            if [ "${peak:-0}" -ge "$limit" ]; then
                verdict="$verdict; main.py: peak resident memory $peak MiB, over the limit of $limit MiB"
            else
                verdict="$verdict; main.py: peak resident memory ${peak:-?} MiB, under the limit of $limit MiB"
                ok=0
            fi
        elif [ "$got" = "$want_type $want_site" ]; then
            verdict="$verdict; main.py: $got"
        else
            verdict="$verdict; main.py: $got (saved: $want_type $want_site)"
            ok=0
        fi
    fi
    if [ "$ok" = 1 ]; then
        echo "reproduces  $name ($verdict)"
    else
        echo "DOES NOT    $name ($verdict; logs in $logs)"
        failed=$((failed + 1))
    fi
done
echo "$((total - failed)) of $total findings reproduce"
[ "$failed" = 0 ]
