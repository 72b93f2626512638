#!/usr/bin/env python3
"""One-operator ONNX models written with ONNX's own helpers, for `pimdiff import-onnx` tests.

    $PIMDIFF_PYTHON scripts/onnx_models.py write DIR
        writes DIR/<name>.onnx for every model below (each passes onnx.checker) and prints the
        names, one a line;
    $PIMDIFF_PYTHON scripts/onnx_models.py compare MODEL CASE_DIR [MODEL CASE_DIR ...]
        runs each original model with onnx.reference.ReferenceEvaluator on the imported case's
        input.npy (cast to the model's input type) and checks that the result equals the case's
        expected.npy exactly. Exit 0 when all agree, 1 otherwise (the differences are printed).

The models cover float Conv with a bias input, ConvInteger with zero points and SAME_UPPER /
SAME_LOWER padding, grouped and depthwise convolution, a constant Add and Relu after the
operator, Gemm with transB, MatMul and MatMulInteger. Values are small integers, so float32
arithmetic is exact and the float models compute the same integers as the case.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

RNG = np.random.default_rng(20261123)


def ints(shape, low=-128, high=127):
    return RNG.integers(low, high + 1, size=shape)


def tensor(name, array, dtype):
    return numpy_helper.from_array(np.asarray(array).astype(dtype), name)


def model(nodes, inputs, output, initializers):
    graph = helper.make_graph(nodes, "g", inputs, [output], initializer=initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(m, full_check=True)
    return m


def io(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def models():
    f32, i8, i32 = TensorProto.FLOAT, TensorProto.INT8, TensorProto.INT32
    yield "conv_float_bias", model(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
        [io("x", f32, [1, 3, 6, 6])], io("y", f32, [None] * 4),
        [tensor("w", ints([4, 3, 3, 3], -20, 20), np.float32),
         tensor("b", ints([4], -500, 500), np.float32)])
    yield "conv_integer_same_upper", model(
        [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], auto_pad="SAME_UPPER",
                          strides=[2, 2], group=2)],
        [io("x", i8, [2, 4, 7, 6])], io("y", i32, [None] * 4),
        [tensor("w", ints([6, 2, 2, 3]), np.int8), tensor("xz", 0, np.int8),
         tensor("wz", 0, np.int8)])
    yield "conv_integer_same_lower_dilated", model(
        [helper.make_node("ConvInteger", ["x", "w"], ["y"], auto_pad="SAME_LOWER",
                          dilations=[2, 1], kernel_shape=[2, 3])],
        [io("x", i8, [1, 2, 5, 5])], io("y", i32, [None] * 4),
        [tensor("w", ints([3, 2, 2, 3]), np.int8)])
    yield "conv_integer_add_relu", model(
        [helper.make_node("ConvInteger", ["x", "w"], ["acc"], strides=[1, 2], pads=[0, 1, 2, 0]),
         helper.make_node("Add", ["bias", "acc"], ["biased"]),
         helper.make_node("Relu", ["biased"], ["y"])],
        [io("x", i8, [1, 3, 5, 6])], io("y", i32, [None] * 4),
        [tensor("w", ints([5, 3, 3, 2]), np.int8),
         tensor("bias", ints([1, 5, 1, 1], -3000, 3000), np.int32)])
    yield "conv_depthwise_scalar_bias", model(
        [helper.make_node("Conv", ["x", "w"], ["acc"], group=3, pads=[1, 1, 1, 1]),
         helper.make_node("Add", ["acc", "b"], ["y"])],
        [io("x", f32, [1, 3, 4, 4])], io("y", f32, [None] * 4),
        [tensor("w", ints([3, 1, 3, 3], -9, 9), np.float32), tensor("b", [17.0], np.float32)])
    yield "gemm_transb_relu", model(
        [helper.make_node("Gemm", ["a", "b", "c"], ["z"], transB=1),
         helper.make_node("Relu", ["z"], ["y"])],
        [io("a", f32, [2, 10])], io("y", f32, [None] * 2),
        [tensor("b", ints([5, 10], -50, 50), np.float32),
         tensor("c", ints([5], -100, 100), np.float32)])
    yield "matmul_float_add", model(
        [helper.make_node("MatMul", ["a", "b"], ["z"]),
         helper.make_node("Add", ["z", "c"], ["y"])],
        [io("a", f32, [1, 6])], io("y", f32, [None] * 2),
        [tensor("b", ints([6, 3], -30, 30), np.float32),
         tensor("c", ints([1, 3], -100, 100), np.float32)])
    yield "matmul_integer", model(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
        [io("a", i8, [3, 8])], io("y", i32, [None] * 2),
        [tensor("b", ints([8, 4]), np.int8)])


def write(directory):
    os.makedirs(directory, exist_ok=True)
    for name, m in models():
        onnx.save(m, os.path.join(directory, f"{name}.onnx"))
        print(name)
    return 0


def compare(pairs):
    ok = True
    for model_path, case_dir in zip(pairs[::2], pairs[1::2]):
        m = onnx.load(model_path)
        graph_input = m.graph.input[0]
        dtype = helper.tensor_dtype_to_np_dtype(graph_input.type.tensor_type.elem_type)
        x = np.load(os.path.join(case_dir, "input.npy")).astype(dtype)
        expected = np.load(os.path.join(case_dir, "expected.npy"))
        (out,) = ReferenceEvaluator(m).run(None, {graph_input.name: x})
        if out.shape != expected.shape or not np.array_equal(out.astype(np.int64), expected):
            ok = False
            differ = np.argwhere(out.astype(np.int64) != expected) if out.shape == expected.shape else []
            print(f"{model_path}: the model gives shape {out.shape}, expected.npy "
                  f"{expected.shape}; {len(differ)} elements differ, first {differ[:3].tolist()}")
        else:
            print(f"{model_path}: agrees with {case_dir}/expected.npy ({out.size} elements)")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        sys.exit(write(sys.argv[2]))
    if len(sys.argv) >= 4 and sys.argv[1] == "compare" and len(sys.argv) % 2 == 0:
        sys.exit(compare(sys.argv[2:]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
