#!/usr/bin/env python3
"""Tiny networks through CIM-MLC, for exploring what it does and where it breaks.

    TREE/python targets/cim-mlc/driver/examples.py --tree TREE --out /work/scratch/cim-samples
        [--repro] [--only NAME] [--timing N]

Builds each network of NETWORKS (onnx.helper, integer-valued weights) and writes, for every
architecture of ARCHS and every API level (Core, Crossbar, Wordline), a case directory
(model.onnx, arch.py, case.json) and runs it through one driver server (TREE/bin/cim-mlc-serve,
pimdiff's serve protocol). Under OUT: NET/ARCH-API/{case,out,answer.json}, and summary.json
and summary.md (status, exception and CIM-MLC frame, flow sizes of every run). --repro also
runs each compiled case through CIM-MLC's own main.py (driver/repro-main.sh) and records
whether the flows are byte for byte the same. --timing N measures N warm requests against N
fresh `python main.py` processes on the first case.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.realpath(__file__))
OPSET = 13


def weights(rng, shape):
    return numpy_helper.from_array(rng.integers(-3, 4, size=shape).astype(np.float32))


def model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="pimdiff-examples")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def init(rng, name, shape):
    t = weights(rng, shape)
    t.name = name
    return t


def conv_node(name, x, w, y, k, stride=1, pad=0, group=None, bias=None, written=True):
    attrs = {}
    if written or k is not None:
        attrs["kernel_shape"] = [k, k]
    if written:
        attrs["strides"] = [stride, stride]
        attrs["pads"] = [pad, pad, pad, pad]
        attrs["dilations"] = [1, 1]
        attrs["group"] = group or 1
    elif group:
        attrs["group"] = group
    return helper.make_node("Conv", [x, w] + ([bias] if bias else []), [y], name=name, **attrs)


def out_hw(h, k, s, p):
    return (h + 2 * p - k) // s + 1


def net_conv1(rng, written=True):
    C, H, K, OC = 3, 8, 3, 8
    n = [conv_node("conv0", "input", "w0", "output", K, 1, 1 if written else 0, written=written)]
    oh = H if written else H - 2
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, OC, oh, oh])],
                 [init(rng, "w0", [OC, C, K, K])]), [1, C, H, H]


def net_conv1_bias(rng):
    C, H, K, OC = 3, 8, 3, 8
    n = [conv_node("conv0", "input", "w0", "output", K, 1, 1, bias="b0")]
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, OC, H, H])],
                 [init(rng, "w0", [OC, C, K, K]), init(rng, "b0", [OC])]), [1, C, H, H]


def net_conv_relu_pool(rng, written=True):
    C, H, K, OC = 4, 8, 3, 8
    pool_attrs = {"kernel_shape": [2, 2]}
    if written:
        pool_attrs.update(strides=[2, 2], pads=[0, 0, 0, 0])
    ph = 4 if written else 7
    n = [conv_node("conv0", "input", "w0", "c0", K, 1, 1),
         helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
         helper.make_node("MaxPool", ["r0"], ["output"], name="pool0", **pool_attrs)]
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, OC, ph, ph])],
                 [init(rng, "w0", [OC, C, K, K])]), [1, C, H, H]


def net_conv_s2p1(rng):
    C, H, K, OC = 3, 9, 3, 4
    oh = out_hw(H, K, 2, 1)
    n = [conv_node("conv0", "input", "w0", "output", K, 2, 1)]
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, OC, oh, oh])],
                 [init(rng, "w0", [OC, C, K, K])]), [1, C, H, H]


def net_two_convs(rng):
    C, H, K = 3, 8, 3
    n = [conv_node("conv0", "input", "w0", "c0", K, 1, 1),
         helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
         conv_node("conv1", "r0", "w1", "output", K, 1, 1)]
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, 4, H, H])],
                 [init(rng, "w0", [8, C, K, K]), init(rng, "w1", [4, 8, K, K])]), [1, C, H, H]


def net_gemm(rng, trans_b=True, bias=True):
    N, K = 32, 10
    attrs = {"transB": 1} if trans_b else {}
    ins = ["input", "wg"] + (["bg"] if bias else [])
    inits = [init(rng, "wg", [K, N] if trans_b else [N, K])] + ([init(rng, "bg", [K])] if bias else [])
    n = [helper.make_node("Gemm", ins, ["output"], name="gemm0", **attrs)]
    return model(n, [vi("input", [1, N])], [vi("output", [1, K])], inits), [1, N]


def net_matmul(rng):
    N, K = 32, 10
    n = [helper.make_node("MatMul", ["input", "wm"], ["output"], name="matmul0")]
    return model(n, [vi("input", [1, N])], [vi("output", [1, K])], [init(rng, "wm", [N, K])]), [1, N]


def net_depthwise(rng):
    C, H, K = 4, 8, 3
    n = [conv_node("dw0", "input", "w0", "output", K, 1, 1, group=C)]
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, C, H, H])],
                 [init(rng, "w0", [C, 1, K, K])]), [1, C, H, H]


def net_add_branches(rng):
    C, H, K, OC = 3, 8, 3, 4
    n = [conv_node("conv_a", "input", "wa", "a", K, 1, 1),
         conv_node("conv_b", "input", "wb", "b", K, 1, 1),
         helper.make_node("Add", ["a", "b"], ["output"], name="add0")]
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, OC, H, H])],
                 [init(rng, "wa", [OC, C, K, K]), init(rng, "wb", [OC, C, K, K])]), [1, C, H, H]


def net_concat(rng):
    C, H, K = 3, 8, 3
    n = [conv_node("conv_a", "input", "wa", "a", K, 1, 1),
         conv_node("conv_b", "input", "wb", "b", K, 1, 1),
         helper.make_node("Concat", ["a", "b"], ["output"], name="concat0", axis=1)]
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, 8, H, H])],
                 [init(rng, "wa", [4, C, K, K]), init(rng, "wb", [4, C, K, K])]), [1, C, H, H]


def net_flatten_gemm(rng, written=True):
    C, H, K, OC, F = 3, 4, 3, 4, 5
    fl = {"axis": 1} if written else {}
    n = [conv_node("conv0", "input", "w0", "c0", K, 1, 1),
         helper.make_node("Flatten", ["c0"], ["f0"], name="flatten0", **fl),
         helper.make_node("Gemm", ["f0", "wg", "bg"], ["output"], name="gemm0", transB=1)]
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, F])],
                 [init(rng, "w0", [OC, C, K, K]), init(rng, "wg", [F, OC * H * H]),
                  init(rng, "bg", [F])]), [1, C, H, H]


def net_wide_second(rng):
    # conv1 needs k*k*16 = 144 crossbar rows: more cores than "tiny" has (a layer larger than
    # the chip after the first flow segment).
    C, H, K = 3, 6, 3
    n = [conv_node("conv0", "input", "w0", "c0", K, 1, 1),
         helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
         conv_node("conv1", "r0", "w1", "output", K, 1, 1)]
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, 8, H, H])],
                 [init(rng, "w0", [16, C, K, K]), init(rng, "w1", [8, 16, K, K])]), [1, C, H, H]


def net_conv1_nokernel(rng):
    C, H, K, OC = 3, 8, 3, 8
    n = [helper.make_node("Conv", ["input", "w0"], ["output"], name="conv0", strides=[1, 1],
                          pads=[1, 1, 1, 1])]
    return model(n, [vi("input", [1, C, H, H])], [vi("output", [1, OC, H, H])],
                 [init(rng, "w0", [OC, C, K, K])]), [1, C, H, H]


NETWORKS = {
    "conv1": lambda r: net_conv1(r, True),
    "conv1-bare": lambda r: net_conv1(r, False),
    "conv1-nokernel": net_conv1_nokernel,
    "conv1-bias": net_conv1_bias,
    "conv-relu-pool": lambda r: net_conv_relu_pool(r, True),
    "conv-relu-pool-bare": lambda r: net_conv_relu_pool(r, False),
    "conv-s2p1": net_conv_s2p1,
    "two-convs": net_two_convs,
    "wide-second": net_wide_second,
    "gemm": lambda r: net_gemm(r, True, True),
    "gemm-bare": lambda r: net_gemm(r, False, False),
    "matmul": net_matmul,
    "depthwise": net_depthwise,
    "add-branches": net_add_branches,
    "concat": net_concat,
    "flatten-gemm": lambda r: net_flatten_gemm(r, True),
    "flatten-gemm-bare": lambda r: net_flatten_gemm(r, False),
}

# configs/example_config.py's architecture and three others within configs/README.md's format.
EXAMPLE = {
    "CoreNum": [4, 4], "CoreNoc": "mesh", "CoreNocCost": None, "GBBuf": [786432, 32],
    "CoreALU": 1024, "CoreBus": 48, "XBNum": [4, 4], "XBNoc": "mesh", "XBNocCost": None,
    "LCBuf": [1024, 32], "XBALU": 1024, "XBbus": 1024, "XBSize": [128, 128], "MaxRC": 64,
    "Type": "F", "Precision": 1,
}
ARCHS = {
    "example": EXAMPLE,
    "tiny": dict(EXAMPLE, CoreNum=[2, 1], XBNum=[2, 1], XBSize=[32, 32], MaxRC=16, Precision=2,
                 GBBuf=[4096, 16], LCBuf=[256, 16], XBbus=64),
    "wide": dict(EXAMPLE, CoreNum=[2, 2], XBNum=[1, 2], XBSize=[256, 64], MaxRC=32, Precision=1,
                 XBbus=256),
    "puma-like": dict(EXAMPLE, CoreNum=[8, 1], CoreNoc="mesh", GBBuf=[786432, 64], CoreBus=384,
                      XBNum=[2, 1], LCBuf=[8192, 64], XBbus=384, XBSize=[128, 128], MaxRC=128,
                      Type="ReRAM", Precision=2),
}
APIS = ("Core", "Crossbar", "Wordline")
# CIM-MLC's other shipped configurations (configs/PUMA.py, ISSCC21_15_1.py, Jain21.py: dicts
# named PUMA, ISSCC, Jain, not ArchTem), read from the tree, each run at its own API level on
# the networks of SHIPPED_NETS.
SHIPPED = {"cimmlc-PUMA": ("PUMA.py", "PUMA"), "cimmlc-ISSCC": ("ISSCC21_15_1.py", "ISSCC"),
           "cimmlc-Jain": ("Jain21.py", "Jain")}
SHIPPED_NETS = ("conv1", "conv-relu-pool", "gemm")


def shipped_arch(tree, file, name):
    import runpy
    arch = dict(runpy.run_path(os.path.join(tree, "src", "configs", file))[name])
    return arch, arch.pop("API")


def arch_py(arch, api):
    lines = ["# pimdiff case architecture, in configs/example_config.py's format", "ArchTem = {",
             "    'API': %r," % api]
    for k, v in arch.items():
        lines.append("    %r: %r," % (k, v))
    lines.append("}")
    return "\n".join(lines) + "\n"


class Server:
    def __init__(self, tree):
        self.proc = subprocess.Popen([os.path.join(tree, "bin", "cim-mlc-serve")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.id = 0

    def request(self, case, out):
        self.id += 1
        self.proc.stdin.write(json.dumps({"protocol": 1, "id": self.id, "case": case, "out": out}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the server died")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def same_flows(a, b):
    names = sorted(n for n in os.listdir(a) if n.endswith("_codegen_output.txt"))
    if names != sorted(n for n in os.listdir(b) if n.endswith("_codegen_output.txt")):
        return False
    for n in names:
        with open(os.path.join(a, n), "rb") as f, open(os.path.join(b, n), "rb") as g:
            if f.read() != g.read():
                return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repro", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--timing", type=int, default=0)
    args = ap.parse_args()
    tree = os.path.realpath(args.tree)
    os.makedirs(args.out, exist_ok=True)
    runs = []
    server = Server(tree)
    for ni, (net, build) in enumerate(NETWORKS.items()):
        if args.only and net != args.only:
            continue
        m, ifm = build(np.random.default_rng(ni))
        plan = [(a, arch, api) for a, arch in ARCHS.items() for api in APIS]
        if net in SHIPPED_NETS:
            plan += [(a, *shipped_arch(tree, *spec)) for a, spec in SHIPPED.items()]
        for arch_name, arch, api in plan:
            if True:
                d = os.path.join(os.path.realpath(args.out), net, "%s-%s" % (arch_name, api))
                shutil.rmtree(d, ignore_errors=True)
                case, out = os.path.join(d, "case"), os.path.join(d, "out")
                os.makedirs(case)
                os.makedirs(out)
                onnx.save(m, os.path.join(case, "model.onnx"))
                with open(os.path.join(case, "arch.py"), "w") as f:
                    f.write(arch_py(arch, api))
                with open(os.path.join(case, "case.json"), "w") as f:
                    json.dump({"ifmsize": ifm, "input_precision": 8, "weight_precision": 8, "seed": ni}, f)
                started = time.perf_counter()
                ans = server.request(case, out)
                wall = time.perf_counter() - started
                with open(os.path.join(d, "answer.json"), "w") as f:
                    json.dump(ans, f, indent=1)
                run = {"net": net, "arch": arch_name, "api": api, "status": ans["status"],
                       "wall_s": round(wall, 4), "dir": os.path.relpath(d, args.out)}
                if ans["status"] == "error":
                    exc = ans.get("exception", {})
                    frames = exc.get("frames") or []
                    run["error"] = ans["message"][:300]
                    run["at"] = "%s:%s" % (frames[-1]["file"], frames[-1]["line"]) if frames else None
                elif ans["status"] == "unsupported":
                    run["reason"] = ans["reason"]
                else:
                    run["flows"] = {n: os.path.getsize(os.path.join(out, n))
                                    for n in sorted(os.listdir(out)) if n.endswith(".txt")}
                if args.repro and ans["status"] in ("compiled", "error"):
                    rout = os.path.join(d, "main-py-out")
                    done = subprocess.run([os.path.join(tree, "driver", "repro-main.sh"), case, rout, tree],
                                          capture_output=True, text=True)
                    run["main_py_exit"] = done.returncode
                    if done.returncode != 0:
                        tb = [l for l in done.stderr.splitlines() if l.strip()]
                        run["main_py_error"] = tb[-1] if tb else ""
                    if ans["status"] == "compiled":
                        run["main_py_same_flows"] = same_flows(out, rout)
                runs.append(run)
                print(json.dumps(run), flush=True)
    server.close()
    if args.only and os.path.exists(os.path.join(args.out, "summary.json")):
        with open(os.path.join(args.out, "summary.json")) as f:
            runs = [r for r in json.load(f) if r["net"] != args.only] + runs
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(runs, f, indent=1)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("| net | arch | API | status | where / flows |\n|---|---|---|---|---|\n")
        for r in runs:
            what = r.get("at") and "%s (%s)" % (r["error"], r["at"]) or r.get("reason") or \
                ", ".join("%s %d B" % (k.split("_")[0], v) for k, v in r.get("flows", {}).items())
            f.write("| %s | %s | %s | %s | %s |\n" % (r["net"], r["arch"], r["api"], r["status"], what))
    if args.timing:
        timing(tree, args.out, runs, args.timing)


def timing(tree, out, runs, n):
    first = next(r for r in runs if r["status"] == "compiled")
    case = os.path.join(out, first["dir"], "case")
    scratch = os.path.join(out, "timing")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    server = Server(tree)
    started = time.perf_counter()
    server.request(case, os.path.join(scratch, "first"))
    first_s = time.perf_counter() - started
    warm = []
    for i in range(n):
        o = os.path.join(scratch, "warm%d" % i)
        os.makedirs(o)
        started = time.perf_counter()
        server.request(case, o)
        warm.append(time.perf_counter() - started)
    server.close()
    cold = []
    for i in range(n):
        o = os.path.join(scratch, "cold%d" % i)
        started = time.perf_counter()
        subprocess.run([os.path.join(tree, "driver", "repro-main.sh"), case, o, tree],
                       check=True, capture_output=True)
        cold.append(time.perf_counter() - started)
    result = {"case": first["dir"], "first_request_s (server start + import + compile)": round(first_s, 3),
              "warm_request_s": sorted(round(w, 4) for w in warm),
              "cold_main_py_s": sorted(round(c, 3) for c in cold)}
    with open(os.path.join(out, "timing.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
