#!/usr/bin/env python3
"""Checks this pimdiff case without pimdiff: recomputes the output from the .npy files and
compares it with expected.npy.

Run it from anywhere (it reads the directory it lives in), with NumPy installed:

    python3 check.py

Exit 0: expected.npy equals the exact result. Exit 1: it does not; the first differing
elements are printed (index, expected.npy's value, the exact value). Exit 2: the case cannot be
checked (a missing or malformed file).

The arithmetic is exact: int8 inputs and weights are widened to int64 before anything is
multiplied, the bias (int32) is added, then ReLU when case.json asks for it. Shapes and fields
follow pimdiff's case format (docs/case-format.md): conv2d input [N, C, H, W], weight
[K, C/groups, kh, kw], padding [top, left, bottom, right]; mvm input [N, in], weight [out, in].
"""

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHOWN = 10  # differing elements printed at most


class BadCase(Exception):
    pass


def load(name, dtype, required=True):
    path = os.path.join(HERE, name)
    if not os.path.isfile(path):
        if required:
            raise BadCase(f"{name}: missing")
        return None
    try:
        array = np.load(path, allow_pickle=False)
    except Exception as e:  # a truncated or foreign file
        raise BadCase(f"{name}: not a valid .npy file: {e}")
    if array.dtype != np.dtype(dtype):
        raise BadCase(f"{name}: dtype {array.dtype}, the case format requires {dtype}")
    return array


def conv2d(x, w, op):
    n, c, h, wd = x.shape
    k, cg, kh, kw = w.shape
    g = op["groups"]
    sh, sw = op["stride"]
    dh, dw = op["dilation"]
    top, left, bottom, right = op["padding"]
    if c != cg * g or k % g != 0:
        raise BadCase(f"weight.npy: shape {w.shape} does not fit input {x.shape} with groups {g}")
    padded = np.zeros((n, c, h + top + bottom, wd + left + right), dtype=np.int64)
    padded[:, :, top:top + h, left:left + wd] = x
    oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + left + right - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise BadCase("case.json: the dilated kernel is larger than the padded input")
    kg = k // g
    out = np.zeros((n, k, oh, ow), dtype=np.int64)
    w = w.astype(np.int64)
    for group in range(g):
        xs = padded[:, group * cg:(group + 1) * cg]
        ws = w[group * kg:(group + 1) * kg]
        for i in range(kh):
            for j in range(kw):
                y0, x0 = i * dh, j * dw
                window = xs[:, :, y0:y0 + sh * (oh - 1) + 1:sh, x0:x0 + sw * (ow - 1) + 1:sw]
                out[:, group * kg:(group + 1) * kg] += np.einsum(
                    "nchw,kc->nkhw", window, ws[:, :, i, j])
    return out


def exact_output(case, x, w, b):
    op = case["op"]
    if op["kind"] == "conv2d":
        out = conv2d(x.astype(np.int64), w, op)
        if b is not None:
            out += b.astype(np.int64).reshape(1, -1, 1, 1)
    elif op["kind"] == "mvm":
        out = x.astype(np.int64) @ w.astype(np.int64).T
        if b is not None:
            out += b.astype(np.int64).reshape(1, -1)
    else:
        raise BadCase(f"case.json: unknown op.kind {op['kind']!r}")
    info = np.iinfo(np.int32)
    if out.size and (out.min() < info.min or out.max() > info.max):
        raise BadCase("the exact result before ReLU does not fit int32: the case is invalid")
    if op["relu"]:
        out = np.maximum(out, 0)
    return out


def main():
    try:
        with open(os.path.join(HERE, "case.json"), encoding="utf-8") as f:
            case = json.load(f)
        x = load("input.npy", "int8")
        w = load("weight.npy", "int8")
        b = load("bias.npy", "int32", required=case["op"]["bias"])
        expected = load("expected.npy", "int32", required=False)
        if expected is None:
            raise BadCase("expected.npy: missing, nothing to compare "
                          "(pimdiff oracle DIR --out DIR/expected.npy writes it)")
        out = exact_output(case, x, w, b)
    except BadCase as e:
        print(f"check.py: cannot check this case: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"check.py: cannot check this case: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if expected.shape != out.shape:
        print(f"check.py: expected.npy has shape {list(expected.shape)}, "
              f"the output has shape {list(out.shape)}")
        return 1
    differ = np.argwhere(expected.astype(np.int64) != out)
    if len(differ) == 0:
        print(f"check.py: agree: expected.npy equals the exact output ({out.size} elements)")
        return 0
    print(f"check.py: {len(differ)} of {out.size} elements differ; the first:")
    for index in differ[:SHOWN]:
        at = tuple(int(i) for i in index)
        print(f"  output[{', '.join(map(str, at))}]: expected.npy {int(expected[at])}, "
              f"exact {int(out[at])}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
