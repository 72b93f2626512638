#!/usr/bin/env python3
"""Validates the exports of pimdiff case directories with the real tools.

    $PIMDIFF_PYTHON scripts/validate_exports.py CASE_DIR...

For each case directory (written by pimdiff: input.npy, expected.npy, model.onnx, op.mlir):

- onnx: `onnx.checker.check_model(full_check=True)` (which includes strict shape inference),
  then `onnx.reference.ReferenceEvaluator` on input.npy must give expected.npy exactly (dtype
  int32, same shape, same values);
- iree: op.mlir is compiled by IREE for the llvm-cpu backend and run by the IREE runtime
  (local-task) on input.npy; the result must equal expected.npy exactly.

All cases run in this one process (the IREE compiles, the slow part, on two threads), so the
tool start-up is paid once. One JSON object per case and tool goes to stdout:
{"case": DIR, "tool": "onnx"|"iree", "ok": true|false, "detail": TEXT}. Exit 0 when every
check passed, 1 otherwise, 2 on bad arguments or a missing package (run
scripts/setup-python.sh).
"""

import json
import os
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor

try:
    import numpy as np
    import onnx
    from onnx.reference import ReferenceEvaluator
    import iree.compiler as ireec
    import iree.runtime as ireert
except ImportError as e:
    print(f"validate_exports: {e}; run scripts/setup-python.sh", file=sys.stderr)
    sys.exit(2)


def compare(got, expected):
    """None when equal (dtype, shape, values), else a description of the first differences."""
    got = np.asarray(got)
    if got.dtype != np.int32:
        return f"dtype {got.dtype}, expected int32"
    if got.shape != expected.shape:
        return f"shape {list(got.shape)}, expected {list(expected.shape)}"
    differ = np.argwhere(got != expected)
    if len(differ) == 0:
        return None
    first = ", ".join(
        f"{tuple(int(i) for i in at)}: got {int(got[tuple(at)])}, "
        f"expected {int(expected[tuple(at)])}"
        for at in differ[:5])
    return f"{len(differ)} of {got.size} elements differ; {first}"


def check_onnx(case_dir, x, expected):
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    onnx.checker.check_model(model, full_check=True)
    (out,) = ReferenceEvaluator(model).run(None, {"input": x})
    return compare(out, expected)


def compile_mlir(case_dir):
    return ireec.compile_file(
        os.path.join(case_dir, "op.mlir"),
        target_backends=["llvm-cpu"],
        input_type="auto",
        extra_args=["--iree-llvmcpu-target-cpu=generic"],
    )


def run_vmfb(vmfb, x):
    config = ireert.Config("local-task")
    ctx = ireert.SystemContext(config=config)
    ctx.add_vm_module(ireert.VmModule.copy_buffer(ctx.instance, vmfb))
    return np.asarray(ctx.modules.module["main"](x).to_host())


def report(case_dir, tool, problem):
    ok = problem is None
    print(json.dumps({"case": case_dir, "tool": tool, "ok": ok, "detail": "" if ok else problem}),
          flush=True)
    return ok


def main(dirs):
    if not dirs:
        print("usage: validate_exports.py CASE_DIR...", file=sys.stderr)
        return 2
    inputs = {}
    all_ok = True
    for d in dirs:
        x = np.load(os.path.join(d, "input.npy"))
        expected = np.load(os.path.join(d, "expected.npy"))
        inputs[d] = (x, expected)
        try:
            problem = check_onnx(d, x, expected)
        except Exception as e:  # the checker's or the evaluator's own message
            problem = f"{type(e).__name__}: {e}"
        all_ok &= report(d, "onnx", problem)
    with ThreadPoolExecutor(max_workers=2) as pool:
        compiled = {d: pool.submit(compile_mlir, d) for d in dirs}
        for d in dirs:
            x, expected = inputs[d]
            try:
                problem = compare(run_vmfb(compiled[d].result(), x), expected)
            except Exception as e:
                problem = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=2)}"
            all_ok &= report(d, "iree", problem)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
