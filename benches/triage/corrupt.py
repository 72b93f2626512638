#!/usr/bin/env python3
"""An external compiler with one bug: `pimdiff compile`, then one kind of instruction
corrupted everywhere in the written program (the triage benchmark's unseen-compiler stand-in).

usage: corrupt.py KIND PIMDIFF CASE_DIR OUT_DIR

KIND: st-offset (every st lands 4 bytes further), vvadd-len (every vvadd one element short),
ld-size (every ld one byte short), mvmul-relu (every mvmul applies ReLU), setbw-width (every
setbw to 32-bit outputs writes 16 bits), recv-offset (every recv lands 4 bytes further).
"""
import glob
import json
import os
import subprocess
import sys


def corrupt(kind, inst):
    op = inst["op"]
    if op in ("st", "recv"):
        off = inst.setdefault("offset", {"offset_select": 0, "offset_value": 0})
    if kind == "st-offset" and op == "st":
        off["offset_select"] |= 1
        off["offset_value"] += 4
    elif kind == "vvadd-len" and op == "vvadd" and inst["len"] > 1:
        inst["len"] -= 1
    elif kind == "ld-size" and op == "ld" and inst["size"] > 1:
        inst["size"] -= 1
    elif kind == "mvmul-relu" and op == "mvmul":
        inst["relu"] = 1
    elif kind == "setbw-width" and op == "setbw" and inst["obiw"] == 32:
        inst["obiw"] = 16
    elif kind == "recv-offset" and op == "recv":
        off["offset_value"] += 4


def main():
    kind, pimdiff, case, out = sys.argv[1:5]
    run = subprocess.run([pimdiff, "compile", case, "-o", out], capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stderr)
        # The bundle protocol's "unsupported" is exit status 3.
        sys.exit(3 if "unsupported" in run.stderr else run.returncode)
    for path in glob.glob(os.path.join(out, "core_*.json")):
        with open(path) as f:
            insts = json.load(f)
        for inst in insts:
            corrupt(kind, inst)
        with open(path, "w") as f:
            json.dump(insts, f)


if __name__ == "__main__":
    main()
