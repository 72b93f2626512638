#!/usr/bin/env python3
"""Cuts a PIMCOMP-NN program and its side table down to one node on one core.

    scripts/reduce-pimcomp-fixture.py PROGRAM TABLE NODE CORE OUT_PROGRAM OUT_TABLE

Keeps, on CORE only, the table instructions of NODE (and the VRELUs that follow them) and the program instructions aligned with
them (with the `sldi`s right before each, and `setbw`); the kept core becomes core 0. The
table keeps AG_info and node_list whole (MVMUL names AGs by global index). This is how
tests/fixtures/pimcomp/squeezenet-batch-conv1 was made from squeezenet-batch (node 1, core 0).
"""
import gzip, json, sys

prog_path, table_path, node, core, out_prog, out_table = sys.argv[1:]
node, core = int(node), int(core)
prog = json.load(gzip.open(prog_path))
table = json.load(gzip.open(table_path))
insts = prog[f"core{core}"]
tinsts = table["instruction"]["core_list"][core]
kept_p, kept_t, pending, j, prev = [], [], [], 0, None
for inst in insts:
    if inst["op"] == "setbw":
        kept_p.append(inst)
        continue
    if inst["op"] == "sldi":
        pending.append(inst)
        continue
    while tinsts[j]["operation"] == "VER":
        j += 1
    t = tinsts[j]
    j += 1
    # Batch tables tag a VRELU with another node's index; it belongs to the node whose
    # result it follows.
    if t["operation"] == "VRELU":
        mine = prev == node
    else:
        mine = t.get("node_index") == node
        prev = t.get("node_index")
    if mine:
        kept_p += pending + [inst]
        kept_t.append(t)
    pending = []
cfg = dict(prog["config"], core_cnt=1)
json.dump({"config": cfg, "core0": kept_p}, gzip.open(out_prog, "wt"), separators=(",", ":"))
table["instruction"]["core_list"] = [kept_t]
json.dump(table, gzip.open(out_table, "wt"), separators=(",", ":"))
print(f"{len(kept_p)} program instructions, {len(kept_t)} table instructions")
